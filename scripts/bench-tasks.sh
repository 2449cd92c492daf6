#!/usr/bin/env bash
# bench-tasks.sh: whole-process measurements of `hermes tasks` against its
# performance targets, on data made by scripts/gentasks.
#
#   (a) `hermes tasks run --wait -- true` adds at most 10 ms to `true`
#       (median whole-process times)
#   (b) `hermes tasks history --limit 20` over 100,000 finished tasks, vs
#       over 1,000 (medians and their ratio; history reads the finished log
#       backwards and opens only the records it prints)
#   (b2) `hermes tasks show ID` of the oldest of 100,000 finished tasks
#       takes at most 1.2x the same over 1,000 (the finished index; a
#       first show, untimed, writes it for the generated log)
#   (b3) `hermes tasks show PREFIX` (a unique prefix of the oldest task's
#       id: its id without the random part) and `hermes tasks show` of an
#       id no task has (the oldest's with another random part; exit 3),
#       over 100,000 finished tasks vs over 1,000 (the finished index: the
#       blocks whose ids could match, not the whole log twice)
#   (c) `hermes tasks prune --older-than 1d --yes` of 100,000 finished
#       tasks: total time of one run
#
# Usage: scripts/bench-tasks.sh [--quick]
#   --quick  fewer runs and 10,000 tasks instead of 100,000 (a smoke test
#            of the script, not a measurement)
#
# It runs on a fresh Debian machine with Go: it installs hyperfine with
# apt-get when missing (falling back to a date loop when it cannot be had),
# builds hermes and gentasks, and prints a Markdown table. Most of its 2 to
# 4 minutes go to creating and removing 200,000 files: (c) prunes the
# 100,000 tasks that (b) only read, so they are generated once. With
# --profile-run it also prints where (a)'s time goes (strace -f -w -c).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false profile_run=false
for arg in "$@"; do
  case $arg in
  --quick) quick=true ;;
  --profile-run) profile_run=true ;;
  *) echo "usage: $0 [--quick] [--profile-run]" >&2; exit 2 ;;
  esac
done

runs_run=200 runs_history=50 big=100000 small=1000
if $quick; then
  runs_run=30 runs_history=10 big=10000
fi

bench=bench-tasks
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-tasks.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh
bench_install hyperfine:hyperfine || say "timing with a date loop"

bench_build gentasks

# (a) run --wait -- true vs true. Alternated twice (true, hermes, hermes,
# true) so that a drift of the machine's speed favours neither.
say "(a) timing tasks run --wait -- true and true ($runs_run runs each, twice)"
home_a=$tmp/a
"$hermes" --home "$home_a" tasks run --wait -- true
true_bin=$(command -v true)
t1=$(time_median "$runs_run" 10 "$true_bin")
h1=$(time_median "$runs_run" 10 "$hermes" --home "$home_a" tasks run --wait -- "$true_bin")
h2=$(time_median "$runs_run" 10 "$hermes" --home "$home_a" tasks run --wait -- "$true_bin")
t2=$(time_median "$runs_run" 10 "$true_bin")
run_true=$(printf '%s\n' "$t1" "$t2" | mean)
run_hermes=$(printf '%s\n' "$h1" "$h2" | mean)
run_added=$(awk -v a="$run_hermes" -v b="$run_true" 'BEGIN {printf "%.6f", a-b}')
run_added_ms=$(awk -v s="$run_added" 'BEGIN {printf "%.2f", s*1000}')
# Every one of those runs must be in the history, succeeded.
n_runs=$("$hermes" --home "$home_a" --json tasks history --limit 0 --status succeeded | wc -l)
want_runs=$((1 + 2 * (runs_run + 10)))
if [[ $n_runs != "$want_runs" ]]; then
  say "(a) history holds $n_runs succeeded tasks, want $want_runs"
  exit 1
fi
# A bare process of the same binary: what any hermes command costs.
bare=$(time_median "$runs_run" 10 "$hermes" --version)
# The same run with the home on tmpfs, where fsync costs nothing: the
# difference to (a) is what the disk's fsyncs cost.
shm_row="| (a'') \`tasks run --wait -- true\` with the home on tmpfs | n/a (no writable /dev/shm) | | none | |"
if [[ -d /dev/shm && -w /dev/shm ]]; then
  home_shm=$(mktemp -d /dev/shm/bench-tasks.XXXXXX)
  shm=$(time_median "$runs_run" 10 "$hermes" --home "$home_shm" tasks run --wait -- "$true_bin")
  rm -rf "$home_shm"
  shm_row="| (a'') \`tasks run --wait -- true\` with the home on tmpfs (fsync free) | $(ms "$shm") | +$(awk -v a="$shm" -v b="$run_true" 'BEGIN {printf "%.2f", (a-b)*1000}') ms | none | |"
fi

# (b) history --limit 20 over 1,000 and over 100,000 finished tasks.
say "(b) generating $small and $big finished tasks (the second takes a minute or two)"
"$tmp/gentasks" -home "$tmp/b_small" -tasks "$small"
"$tmp/gentasks" -home "$tmp/b_big" -tasks "$big"
sync
for home in b_small b_big; do
  out=$("$hermes" --home "$tmp/$home" tasks history --limit 3)
  if [[ $(grep -c '^[0-9]\{8\}_' <<<"$out") != 3 ]] || ! grep -q ' job-9 *failed *1 ' <<<"$out"; then
    say "(b) hermes tasks history --limit 3 on the generated $home:"
    echo "$out" >&2
    exit 1
  fi
done
if ! "$hermes" --home "$tmp/b_small" fsck >"$tmp/fsck.out" 2>&1; then
  say "(b) hermes fsck fails on the generated tasks:"
  head -20 "$tmp/fsck.out" >&2
  exit 1
fi
say "(b) timing history --limit 20 ($runs_history runs each)"
hist_small=$(time_median "$runs_history" 3 "$hermes" --home "$tmp/b_small" tasks history --limit 20)
hist_big=$(time_median "$runs_history" 3 "$hermes" --home "$tmp/b_big" tasks history --limit 20)
hist_ratio=$(ratio "$hist_big" "$hist_small")
say "(b2) timing show of the oldest task ($runs_history runs each)"
oldest_small=$(head -c 100 "$tmp/b_small/profiles/default/tasks/.finished.jsonl" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
oldest_big=$(head -c 100 "$tmp/b_big/profiles/default/tasks/.finished.jsonl" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
show_small=$(time_median "$runs_history" 3 "$hermes" --home "$tmp/b_small" tasks show "$oldest_small")
show_big=$(time_median "$runs_history" 3 "$hermes" --home "$tmp/b_big" tasks show "$oldest_big")
show_ratio=$(ratio "$show_big" "$show_small")
say "(b3) timing show of a unique prefix and of a miss ($runs_history runs each)"
# A miss exits 3, which the timers take for a failure: it is timed through
# a script that exits 0 only on 3, which adds a shell's start to both sizes.
cat >"$tmp/miss.sh" <<'MISS'
#!/bin/sh
"$@" >/dev/null 2>&1
[ $? -eq 3 ]
MISS
chmod +x "$tmp/miss.sh"
for size in small big; do
  oldest=$oldest_small
  [[ $size == big ]] && oldest=$oldest_big
  prefix=${oldest%_*}
  miss=${prefix}_zzzzzz
  if [[ $("$hermes" --home "$tmp/b_$size" --json tasks show "$prefix" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p') != "$oldest" ]] ||
    ! "$tmp/miss.sh" "$hermes" --home "$tmp/b_$size" tasks show "$miss"; then
    say "(b3) tasks show $prefix is not $oldest, or tasks show $miss does not exit 3 ($size)"
    exit 1
  fi
  printf -v "prefix_$size" '%s' "$(time_median "$runs_history" 3 "$hermes" --home "$tmp/b_$size" tasks show "$prefix")"
  printf -v "miss_$size" '%s' "$(time_median "$runs_history" 3 "$tmp/miss.sh" "$hermes" --home "$tmp/b_$size" tasks show "$miss")"
done
prefix_ratio=$(ratio "$prefix_big" "$prefix_small")
miss_ratio=$(ratio "$miss_big" "$miss_small")

# (c) prune the 100,000 tasks of (b), which history only read: one run.
say "(c) pruning $big finished tasks (one run)"
c0=$(date +%s%N)
"$hermes" --home "$tmp/b_big" tasks prune --older-than 1d --yes >"$tmp/prune.out"
c1=$(date +%s%N)
prune_s=$(awk -v a="$c0" -v b="$c1" 'BEGIN {printf "%.2f", (b-a)/1e9}')
pruned=$(grep -c '^removed ' "$tmp/prune.out" || true)
left=$(find "$tmp/b_big/profiles/default/tasks" -maxdepth 1 -name '*.json' | wc -l)
if [[ $pruned != "$big" || $left != 0 ]]; then
  say "(c) prune removed $pruned tasks, $left records left; want $big and 0"
  exit 1
fi
if [[ -n $("$hermes" --home "$tmp/b_big" --json tasks history) ]]; then
  say "(c) history is not empty after the prune"
  exit 1
fi

cat <<EOF

## hermes tasks: whole-process benchmarks

$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(go version | cut -d' ' -f3), timing: $(timer)$($quick && echo ", QUICK MODE (not a measurement)")

| target | measured (median) | difference or ratio | limit | result |
|---|---|---|---|---|
| (a) \`tasks run --wait -- true\` vs \`true\` | $(ms "$run_hermes") vs $(ms "$run_true") | +${run_added_ms} ms | +10 ms | $(verdict "$run_added_ms" 10) |
| (a') \`hermes --version\` (a bare hermes process, for scale) | $(ms "$bare") | | none | |
$shm_row
| (b) \`tasks history --limit 20\`: $big vs $small finished tasks | $(ms "$hist_big") vs $(ms "$hist_small") | $hist_ratio x | none | |
| (b2) \`tasks show ID\` of the oldest task: $big vs $small finished tasks | $(ms "$show_big") vs $(ms "$show_small") | $show_ratio x | 1.2 x | $(verdict "$show_ratio" 1.2) |
| (b3) \`tasks show PREFIX\`, a unique prefix of the oldest task: $big vs $small finished tasks | $(ms "$prefix_big") vs $(ms "$prefix_small") | $prefix_ratio x | 1.2 x | $(verdict "$prefix_ratio" 1.2) |
| (b3) \`tasks show\` of an id no task has (exit 3, through a shell): $big vs $small finished tasks | $(ms "$miss_big") vs $(ms "$miss_small") | $miss_ratio x | 1.2 x | $(verdict "$miss_ratio" 1.2) |
| (c) \`tasks prune --older-than 1d --yes\` of $big finished tasks | ${prune_s} s (one run) | $(awk -v s="$prune_s" -v n="$big" 'BEGIN {printf "%.0f µs/task", s*1e6/n}') | none | |

(a) is the mean of two medians of $runs_run runs each, taken in the order true, hermes, hermes, true.
(c) pruned the tasks that (b) had read (generated once, never pruned before).
EOF

if $profile_run; then
  if command -v strace >/dev/null 2>&1; then
    echo
    echo "### where (a)'s time goes: strace -f -w -c of one \`tasks run --wait -- true\`"
    echo
    echo "Wall time in each system call, summed over threads (futex and nanosleep are"
    echo "the Go runtime's idle threads waiting; fsync is what the task machinery waits on)."
    echo
    echo '```'
    strace -f -w -c -o "$tmp/strace.out" "$hermes" --home "$home_a" tasks run --wait -- "$true_bin" >/dev/null
    head -20 "$tmp/strace.out"
    echo '```'
    awk '$NF == "fsync" {printf "fsync: %d calls, %.2f ms in all (under strace)\n", $4, $2 * 1000}' "$tmp/strace.out"
  else
    say "--profile-run needs strace"
  fi
fi
