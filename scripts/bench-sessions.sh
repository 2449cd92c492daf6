#!/usr/bin/env bash
# bench-sessions.sh: whole-process measurements of the sessions store
# against its performance targets, on data made by scripts/gendata.
#
#   (a) appending one message to a session of 100,000 messages costs at
#       most 1.2x appending to one of 10
#   (b) `hermes sessions export` of a 200 MB transcript peaks under 64 MB
#       resident memory
#   (c) `hermes sessions list --limit 20` over 100,000 sessions takes at
#       most 3x what it takes over 1,000
#   (c2) `hermes sessions list --source gateway --limit 20`, one session in
#       ten of source gateway (the newest is the tenth), over 100,000
#       sessions takes at most 1.2x what it takes over 1,000 (the filter
#       reads the catalog's lines and opens only the documents it lists)
#   (c3) `hermes sessions list --source none`, which no session passes,
#       over 100,000 sessions takes at most 1.2x what it takes over 1,000:
#       it is read from the value index (fsstore/sessions/values.go), which
#       the first, untimed runs write
#   (d) throughput of 8 processes appending to one session vs to 8 sessions
#       (reported; no target)
#
# Usage: scripts/bench-sessions.sh [--quick]
#   --quick  fewer runs and smaller data (a smoke test of the script, not a
#            measurement)
#   BENCH_NO_HYPERFINE=1 in the environment times with the date loop even
#   when hyperfine is installed.
#
# It runs on a fresh Debian machine with Go: it installs hyperfine and GNU
# time with apt-get when missing (falling back to a date loop when
# hyperfine cannot be had), builds hermes, and prints a Markdown table of
# medians and ratios. It takes about 2 to 8 minutes, most of it writing
# and checking 100,000 sessions (200,000 files) on a slow disk. The Go
# benchmarks of the same targets: go test -bench . -run XXX ./fsstore/sessions/
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
[[ ${1:-} == --quick ]] && quick=true

runs_append=60 runs_list=40 runs_export=3 appends_each=40 rounds_parallel=5
big_sessions=100000 big_history=100000 export_messages=100000 export_bytes=2000
if $quick; then
  runs_append=10 runs_list=10 runs_export=1 appends_each=5 rounds_parallel=1
  big_sessions=5000 big_history=20000 export_messages=10000
fi

bench=bench-sessions
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-sessions.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh
bench_install hyperfine:hyperfine || say "timing with a date loop"
bench_install /usr/bin/time:time || { say "GNU time (/usr/bin/time) is needed for the memory measurement"; exit 1; }

bench_build gendata

# gen NAME ARGS...: generate a home with gendata, check it with fsck, and
# print the ids.
gen() {
  local name=$1
  shift
  "$tmp/gendata" -home "$tmp/$name" "$@" >"$tmp/$name.ids"
  if ! "$hermes" --home "$tmp/$name" fsck >"$tmp/$name.fsck" 2>&1; then
    say "hermes fsck failed on the generated $name:"
    head -20 "$tmp/$name.fsck" >&2
    exit 1
  fi
  # Write the generated data back now, so that its writeback does not
  # slow the measurements' fsyncs.
  sync
}

# (a) append: 10 vs 100,000 messages of history.
say "(a) generating sessions of 10 and $big_history messages"
gen a_small -sessions 1 -messages 10 -bytes-per-message 200
gen a_big -sessions 1 -messages "$big_history" -bytes-per-message 200
small_id=$(head -1 "$tmp/a_small.ids") big_id=$(head -1 "$tmp/a_big.ids")
say "(a) timing appends ($runs_append runs each, alternating twice)"
append_cmd() { echo "$hermes" --home "$tmp/$1" sessions append "$2" --role user --content "run-the-tests-again-and-tell-me-what-failed"; }
# Two rounds in opposite orders, so that a drift of the disk's speed during
# the runs does not favour one side.
a1=$(time_median "$runs_append" 5 $(append_cmd a_small "$small_id"))
b1=$(time_median "$runs_append" 5 $(append_cmd a_big "$big_id"))
b2=$(time_median "$runs_append" 5 $(append_cmd a_big "$big_id"))
a2=$(time_median "$runs_append" 5 $(append_cmd a_small "$small_id"))
append_small=$(printf '%s\n' "$a1" "$a2" | mean)
append_big=$(printf '%s\n' "$b1" "$b2" | mean)
append_ratio=$(ratio "$append_big" "$append_small")

# (b) export memory.
say "(b) generating a transcript of $export_messages messages of $export_bytes bytes"
gen b_export -sessions 1 -messages "$export_messages" -bytes-per-message "$export_bytes"
export_id=$(head -1 "$tmp/b_export.ids")
transcript_mb=$(du -m "$tmp/b_export/profiles/default/sessions/$export_id.jsonl" | cut -f1)
say "(b) exporting it ($runs_export runs)"
rss_list=() export_times=()
for ((i = 0; i < runs_export; i++)); do
  /usr/bin/time -v -o "$tmp/time.txt" "$hermes" --home "$tmp/b_export" sessions export "$export_id" >"$tmp/export.out"
  rss_list+=("$(awk -F': *' '/Maximum resident set size/ {print $2}' "$tmp/time.txt")")
  export_times+=("$(sed -n 's/.*Elapsed (wall clock).*: //p' "$tmp/time.txt")")
done
out_mb=$(du -m "$tmp/export.out" | cut -f1)
rm -f "$tmp/export.out"
export_rss_kb=$(printf '%s\n' "${rss_list[@]}" | median)
export_rss_mb=$(awk -v k="$export_rss_kb" 'BEGIN {printf "%.1f", k/1024}')

# (c) list: 1,000 vs 100,000 sessions.
say "(c) generating 1000 and $big_sessions sessions (the second takes a while)"
gen c_small -sessions 1000 -messages 2 -bytes-per-message 200 -other-source gateway -other-every 10 -q
gen c_big -sessions "$big_sessions" -messages 2 -bytes-per-message 200 -other-source gateway -other-every 10 -q
say "(c) timing lists ($runs_list runs each)"
list_small=$(time_median "$runs_list" 3 "$hermes" --home "$tmp/c_small" sessions list --limit 20)
list_big=$(time_median "$runs_list" 3 "$hermes" --home "$tmp/c_big" sessions list --limit 20)
list_ratio=$(ratio "$list_big" "$list_small")
say "(c2, c3) timing filtered lists ($runs_list runs each)"
src_small=$(time_median "$runs_list" 3 "$hermes" --home "$tmp/c_small" sessions list --source gateway --limit 20)
src_big=$(time_median "$runs_list" 3 "$hermes" --home "$tmp/c_big" sessions list --source gateway --limit 20)
src_ratio=$(ratio "$src_big" "$src_small")
rare_small=$(time_median "$runs_list" 3 "$hermes" --home "$tmp/c_small" sessions list --source none)
rare_big=$(time_median "$runs_list" 3 "$hermes" --home "$tmp/c_big" sessions list --source none)

# (d) 8 processes appending, to one session or to 8.
say "(d) 8 processes × $appends_each appends, to one session and to 8"
gen d_one -sessions 1 -messages 10 -bytes-per-message 200
gen d_eight -sessions 8 -messages 10 -bytes-per-message 200
mapfile -t one_ids <"$tmp/d_one.ids"
mapfile -t eight_ids <"$tmp/d_eight.ids"
# parallel_appends HOME ID...: appends/second of 8 processes, process p
# writing to the p-th id (cycling).
parallel_appends() {
  local home=$1
  shift
  local ids=("$@") t0 t1 p
  t0=$(date +%s%N)
  for ((p = 0; p < 8; p++)); do
    (
      id=${ids[p % ${#ids[@]}]}
      for ((i = 0; i < appends_each; i++)); do
        "$hermes" --home "$home" --lock-timeout 60s sessions append "$id" --role user --content "process-$p-message-$i" >/dev/null
      done
    ) &
  done
  wait
  t1=$(date +%s%N)
  awk -v n=$((8 * appends_each)) -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f\n", n/((b-a)/1e9)}'
}
# Rounds alternate between the two, for the same reason as in (a).
tp_one_rounds=() tp_eight_rounds=()
for ((r = 0; r < rounds_parallel; r++)); do
  tp_one_rounds+=("$(parallel_appends "$tmp/d_one" "${one_ids[@]}")")
  tp_eight_rounds+=("$(parallel_appends "$tmp/d_eight" "${eight_ids[@]}")")
done
tp_one=$(printf '%s\n' "${tp_one_rounds[@]}" | median)
tp_eight=$(printf '%s\n' "${tp_eight_rounds[@]}" | median)
for home in d_one d_eight; do
  "$hermes" --home "$tmp/$home" fsck >/dev/null 2>&1 || { say "fsck failed after the parallel appends to $home"; exit 1; }
done
one_count=$("$hermes" --home "$tmp/d_one" --json sessions show "${one_ids[0]}" 2>/dev/null | grep -o '"message_count": *[0-9]*' | head -1 | grep -o '[0-9]*$' || true)
want_count=$((10 + rounds_parallel * 8 * appends_each))

cat <<EOF

## hermes sessions: whole-process benchmarks

$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(go version | cut -d' ' -f3), timing: $(timer)$($quick && echo ", QUICK MODE (not a measurement)")

| target | measured (median) | ratio or value | limit | result |
|---|---|---|---|---|
| (a) append 1 message: history $big_history vs 10 | $(ms "$append_big") vs $(ms "$append_small") | $append_ratio x | 1.2 x | $(verdict "$append_ratio" 1.2) |
| (b) export of a ${transcript_mb} MB transcript (${out_mb} MB out), peak RSS | ${export_rss_mb} MB (wall ${export_times[*]}) | ${export_rss_mb} MB | 64 MB | $(verdict "$export_rss_mb" 64) |
| (c) list --limit 20: $big_sessions vs 1000 sessions | $(ms "$list_big") vs $(ms "$list_small") | $list_ratio x | 3 x | $(verdict "$list_ratio" 3) |
| (c2) list --source gateway --limit 20 (1 session in 10): $big_sessions vs 1000 sessions | $(ms "$src_big") vs $(ms "$src_small") | $src_ratio x | 1.2 x | $(verdict "$src_ratio" 1.2) |
| (c3) list --source none (no session passes: the value index): $big_sessions vs 1000 sessions | $(ms "$rare_big") vs $(ms "$rare_small") | $(ratio "$rare_big" "$rare_small") x | 1.2 x | $(verdict "$(ratio "$rare_big" "$rare_small")" 1.2) |
| (d) 8 processes appending: 1 session vs 8 sessions | ${tp_one} vs ${tp_eight} appends/s | $(ratio "$tp_one" "$tp_eight") x | none | message_count ${one_count:-?} (want $want_count) |

(a) is the mean of two medians of $runs_append runs each, taken in the order small, big, big, small:
10 messages $(ms "$a1"), $(ms "$a2"); $big_history messages $(ms "$b1"), $(ms "$b2").
(d) is the median of $rounds_parallel alternating rounds of 8 × $appends_each \`hermes sessions append\` processes
(appends/s, one session: ${tp_one_rounds[*]}; eight sessions: ${tp_eight_rounds[*]}).
Every append is a process start, the session's lock, the transcript's and the catalog's lines synced together
(the document is not rewritten), and an exit; writers to different sessions share the catalog lock for one write.
EOF
if [[ -n $one_count && $one_count != "$want_count" ]]; then
  say "the shared session has $one_count messages, want $want_count"
  exit 1
fi
