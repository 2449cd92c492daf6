#!/usr/bin/env bash
# bench-search.sh: the search_files tool against grep -rn (and rg -n when
# installed) over the tree of transcripts that scripts/bench.sh searches,
# a rare word planted in 5 files so that every byte is read.
#
# Usage: scripts/bench-search.sh [MB]   (default 1000: the 1 GB of bench.sh)
#
# The tool is timed in process by BenchmarkSearchFiles (cmd/agent), each
# run a whole search_files call; grep and rg as whole processes, medians
# of the runs. The target is at most 1.5x grep -rn. Output: a Markdown
# table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

bench=bench-search
mb=${1:-1000}
runs=${BENCH_RUNS:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-search.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh

say "generating $mb transcripts of about 1 MB"
go build -o "$tmp/gendata" ./scripts/gendata
"$tmp/gendata" -home "$tmp/s" -sessions "$mb" -messages 2900 -bytes-per-message 300 -q
tree=$tmp/s/profiles/default/sessions
word=quokka
n=0
for f in "$tree"/*.jsonl; do
  if ((n % (mb / 5 > 0 ? mb / 5 : 1) == 0)); then
    printf '{"seq":999999,"role":"user","content":"the %s in the logs"}\n' "$word" >>"$f"
  fi
  n=$((n + 1))
done
sync
size=$(du -sm "$tree" | cut -f1)

say "timing grep -rn over $size MB"
t_grep=$(time_median "$runs" 1 grep -rn "$word" "$tree")
t_rg=
if command -v rg >/dev/null 2>&1; then
  t_rg=$(time_median "$runs" 1 rg -n "$word" "$tree")
fi
say "timing search_files over $size MB"
ns=$(HERMES_SEARCH_TREE=$tree HERMES_SEARCH_WORD=$word \
  go test -run '^$' -bench '^BenchmarkSearchFiles$' -benchtime "${runs}x" ./cmd/agent/ |
  awk '/^BenchmarkSearchFiles/ {print $3}')
t_tool=$(awk -v ns="$ns" 'BEGIN {print ns/1e9}')

echo "| search a word in $size MB ($(nproc) CPUs) | time | vs grep -rn |"
echo "|---|---|---|"
echo "| search_files | $(ms "$t_tool") | $(ratio "$t_tool" "$t_grep")x (target ≤ 1.5x) |"
echo "| grep -rn | $(ms "$t_grep") | 1x |"
[[ -n $t_rg ]] && echo "| rg -n | $(ms "$t_rg") | $(ratio "$t_rg" "$t_grep")x |"
exit 0
