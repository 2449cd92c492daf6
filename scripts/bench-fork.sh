#!/usr/bin/env bash
# bench-fork.sh: `hermes sessions fork` of a session of 100,000 messages,
# against cp of its transcript (issue 18). A fork streams the transcript's
# first bytes into the new session (io.Copy, which the kernel does with
# copy_file_range), so its peak resident memory must stay under 64 MB
# whatever the history's length; its time is reported beside cp's, and
# beside cp followed by a sync of the copy, since a fork is durable when it
# returns (the transcript, its directory, the catalog and the document are
# synced).
#
#   fork        all 100,000 messages (the end is found from the last line)
#   fork --at   half of them (the end of message 50,000 is found by a scan)
#
# Usage: scripts/bench-fork.sh [--quick]
#   --quick  fewer runs and a smaller session (a smoke test of the script)
#   BENCH_NO_HYPERFINE=1 times with the date loop even when hyperfine is
#   installed.
#
# It runs on a fresh Debian machine with Go (it installs hyperfine and GNU
# time with apt-get when missing), builds hermes and scripts/gendata, and
# prints a Markdown table of medians. It takes under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
[[ ${1:-} == --quick ]] && quick=true
runs=15 messages=100000 bytes=200
if $quick; then
  runs=3 messages=10000
fi

bench=bench-fork
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-fork.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh
bench_install hyperfine:hyperfine || say "timing with a date loop"
bench_install /usr/bin/time:time || { say "GNU time (/usr/bin/time) is needed for the memory measurement"; exit 1; }

bench_build gendata

say "generating a session of $messages messages of about $bytes bytes"
"$tmp/gendata" -home "$tmp/home" -sessions 1 -messages "$messages" -bytes-per-message "$bytes" >"$tmp/ids"
id=$(head -1 "$tmp/ids")
dir=$tmp/home/profiles/default/sessions
transcript=$dir/$id.jsonl
transcript_mb=$(du -m "$transcript" | cut -f1)
sync

# clean: remove what the runs made (the forks and the copies), so that
# each run writes into the same directory as the first.
cat >"$tmp/clean" <<CLEAN
#!/bin/sh
find "$dir" -maxdepth 1 -type f ! -name '$id.*' ! -name '.catalog.*' -delete
rm -f "$tmp/copy.jsonl"
CLEAN
chmod +x "$tmp/clean"

say "timing ($runs runs each)"
t_cp=$(time_median_prepared "$runs" 2 "$tmp/clean" cp "$transcript" "$tmp/copy.jsonl")
t_cp_sync=$(time_median_prepared "$runs" 2 "$tmp/clean" sh -c "cp '$transcript' '$tmp/copy.jsonl' && sync '$tmp/copy.jsonl'")
t_fork=$(time_median_prepared "$runs" 2 "$tmp/clean" "$hermes" --home "$tmp/home" sessions fork "$id")
t_fork_at=$(time_median_prepared "$runs" 2 "$tmp/clean" "$hermes" --home "$tmp/home" sessions fork "$id" --at $((messages / 2)))

say "measuring peak memory"
rss() {
  "$tmp/clean"
  /usr/bin/time -v -o "$tmp/time.txt" "$@" >/dev/null
  awk -F': *' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$tmp/time.txt"
}
rss_fork=$(rss "$hermes" --home "$tmp/home" sessions fork "$id")
rss_fork_at=$(rss "$hermes" --home "$tmp/home" sessions fork "$id" --at $((messages / 2)))
"$tmp/clean"

# The fork of all of it is the transcript byte for byte.
child=$("$hermes" --home "$tmp/home" sessions fork "$id")
cmp "$transcript" "$dir/$child.jsonl"

echo
echo "sessions fork of $messages messages ($transcript_mb MB), $(timer), $runs runs, median"
echo
echo "| what | time | peak RSS |"
echo "|---|---|---|"
echo "| cp of the transcript | $(ms "$t_cp") | |"
echo "| cp, then sync of the copy | $(ms "$t_cp_sync") | |"
echo "| hermes sessions fork | $(ms "$t_fork") | $rss_fork MB ($(awk -v r="$rss_fork" 'BEGIN {print (r < 64) ? "met" : "MISSED"}'): < 64 MB) |"
echo "| hermes sessions fork --at $((messages / 2)) | $(ms "$t_fork_at") | $rss_fork_at MB |"
echo "| fork / cp | $(ratio "$t_fork" "$t_cp") | |"
echo "| fork / (cp + sync) | $(ratio "$t_fork" "$t_cp_sync") | |"
