#!/usr/bin/env bash
# bench-kanban.sh: the time of one `hermes kanban dispatch` tick over a
# board of 10,000 tasks of which 9,900 are done, over one of 100 tasks,
# all ready (the same open tasks: the first ratio, which must stay at
# most 1.2), over one of 1,000 tasks
# of which 990 are done (for the ratio), and over one of 10,000 tasks of
# which 9,990 are done (as many open tasks as the 1,000, ten times the
# finished ones); and proof that a tick reads only the open tasks, not
# every finished task's history.
#
#   (a) `kanban dispatch --dry-run`: reconcile and plan, no writes
#   (b) `kanban dispatch` (4 workers, the default): claims the 4 ready
#       tasks of highest priority and starts a worker for each through the
#       tasks supervisor; the worker command (kanban.worker_command) is
#       /bin/true, which exits at once. The board is restored as
#       generated before each run (not timed), so every run does the same
#       work.
#   (c) files opened by one tick, counted with strace: task documents,
#       events and comments logs, and every openat.
#
# Usage: scripts/bench-kanban.sh [--quick]
#   --quick  fewer runs (a smoke test of the script, not a measurement)
#   BENCH_NO_HYPERFINE=1 in the environment times with a date loop even
#   when hyperfine is installed.
#
# It runs on a fresh Debian machine with Go: it installs hyperfine and
# strace with apt-get when missing (falling back to a date loop, and to no
# file count), builds hermes and scripts/genkanban, and prints a Markdown
# table. It takes a minute or two, most of it writing the boards. The board is written by genkanban in the
# store's formats (it checks that itself) and checked again here through
# hermes: 100 ready tasks listed, 9,900 done.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
[[ ${1:-} == --quick ]] && quick=true
runs_dry=30 runs_tick=10
if $quick; then runs_dry=5 runs_tick=3; fi

bench=bench-kanban
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-kanban.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh
bench_install hyperfine:hyperfine strace:strace || say "falling back where possible"
have_strace=false
command -v strace >/dev/null 2>&1 && have_strace=true

bench_build genkanban

# gen NAME TASKS OPEN: a home with a generated board, checked through
# hermes; a tar of the board as generated, the list of its files, and a
# stamp newer than all of them, for restoring it after a real tick.
gen() {
  local name=$1 tasks=$2 open=$3 home=$tmp/$1
  "$tmp/genkanban" -home "$home" -tasks "$tasks" -open "$open"
  printf 'kanban:\n  worker_command: /bin/true\n' >"$home/profiles/default/config.yaml"
  local ready done
  ready=$("$hermes" --home "$home" --json kanban list --status ready | wc -l)
  done=$("$hermes" --home "$home" --json kanban list --status done | wc -l)
  if [[ $ready != "$open" || $done != $((tasks - open)) ]]; then
    say "$name: hermes lists $ready ready and $done done tasks, want $open and $((tasks - open))"
    exit 1
  fi
  tar -C "$home/profiles/default" -cf "$tmp/$name.tar" kanban
  tar -tf "$tmp/$name.tar" >"$tmp/$name.files"
  sync
  sleep 0.01
  touch "$tmp/$name.stamp"
}

# changed NAME: the files of NAME's board written since it was generated.
changed() { (cd "$tmp/$1/profiles/default" && find kanban -newer "$tmp/$1.stamp" ! -type d); }

# reset.sh TMP NAME: wait (at most 10s) for the workers of the last tick
# to be recorded, then put the board back as generated: the files a tick
# wrote are restored from the tar or removed, and the background tasks
# go. (Copying 21,000 files afresh each time would take longer than the
# runs on a slow disk.)
cat >"$tmp/reset.sh" <<'EOF'
#!/bin/sh
set -e
t=$1 n=$2 p=$1/$2/profiles/default
for i in $(seq 200); do
  [ -z "$(ls -A "$p/tasks/.running" 2>/dev/null)" ] && break
  sleep 0.05
done
cd "$p"
: >"$t/$n.restore"
find kanban -newer "$t/$n.stamp" ! -type d | while read -r f; do
  if grep -qxF "$f" "$t/$n.files"; then echo "$f" >>"$t/$n.restore"; else rm -f "$f"; fi
done
if [ -s "$t/$n.restore" ]; then tar -xf "$t/$n.tar" -T "$t/$n.restore"; fi
rm -rf "$p/tasks"
EOF
chmod +x "$tmp/reset.sh"

# opened NAME ARGS...: strace one tick (and what it starts) and print
# "<openat calls> <task documents> <events logs> <comments logs> <distinct tasks>",
# counting only files under the board's tasks directory for the last four.
opened() {
  local name=$1
  shift
  local trace=$tmp/$name.strace
  strace -f -qq -e trace=openat -o "$trace" "$hermes" --home "$tmp/$name" kanban dispatch "$@" >/dev/null
  local dir="$tmp/$name/profiles/default/kanban/tasks/"
  local calls docs events comments tasks
  calls=$(grep -c 'openat(' "$trace" || true)
  docs=$(grep -o "openat([^\"]*\"$dir[^\"]*\"" "$trace" | sed "s|.*$dir||; s|\"$||" | grep -cE '^[^.]+\.json$' || true)
  events=$(grep -o "openat([^\"]*\"$dir[^\"]*\"" "$trace" | grep -c '\.events\.jsonl"$' || true)
  comments=$(grep -o "openat([^\"]*\"$dir[^\"]*\"" "$trace" | grep -c '\.comments\.jsonl"$' || true)
  tasks=$(grep -o "openat([^\"]*\"$dir[^\"]*\"" "$trace" | sed "s|.*$dir||; s|\"$||" | grep -E '^[0-9]' | sed 's|\..*||' | sort -u | wc -l)
  echo "$calls $docs $events $comments $tasks"
}

say "generating boards: 10000 tasks (9900 done), 1000 (990 done), 10000 (9990 done), and 100 (none done)"
gen big 10000 100
gen tiny 100 100
gen small 1000 10
gen wide 10000 10

say "(a) timing dispatch --dry-run ($runs_dry runs each)"
declare -A dry tick
for name in big small wide tiny; do
  dry[$name]=$(time_median "$runs_dry" 3 "$hermes" --home "$tmp/$name" kanban dispatch --dry-run)
  # A dry run must not have changed the board.
  if [[ -n $(changed "$name") ]]; then
    say "a dry run changed the $name board:"
    changed "$name" | head >&2
    exit 1
  fi
done

say "(b) timing real ticks with /bin/true as the worker ($runs_tick runs each, the board restored before each)"
for name in big small wide tiny; do
  tick[$name]=$(time_median_prepared "$runs_tick" 1 "$tmp/reset.sh $tmp $name" "$hermes" --home "$tmp/$name" kanban dispatch)
done
# What a real tick does: 4 claims, 4 workers; and the reset undoes it.
"$tmp/reset.sh" "$tmp" big
claims=$("$hermes" --home "$tmp/big" kanban dispatch | grep -c '^claimed ' || true)
"$tmp/reset.sh" "$tmp" big
[[ $claims == 4 ]] || { say "a real tick claimed $claims tasks, want 4"; exit 1; }
if [[ -n $(changed big) || $(ls "$tmp/big/profiles/default/kanban/open" | wc -l) != 100 ]]; then
  say "the board was not restored after a real tick:"
  changed big | head >&2
  exit 1
fi

files_note="strace not available: files opened not counted"
if $have_strace; then
  say "(c) counting the files a tick opens"
  files_note="| tick | board | openat calls | task documents | events logs | comments logs | distinct tasks touched |
|---|---|---|---|---|---|---|"
  for run in "big --dry-run" "small --dry-run" "wide --dry-run" "big" "wide"; do
    set -- $run
    name=$1
    "$tmp/reset.sh" "$tmp" "$name"
    read -r calls docs events comments touched <<<"$(opened "$@")"
    "$tmp/reset.sh" "$tmp" "$name"
    open=$(ls "$tmp/$name/profiles/default/kanban/open" | wc -l)
    all=$(($(grep -c '\.json$' "$tmp/$name.files") ))
    what="dry run"
    [[ ${2:-} == --dry-run ]] || what="real tick (with its 4 supervisors and workers)"
    files_note+="
| $what | $all tasks, $open open | $calls | $docs | $events | $comments | $touched |"
    # A tick reads the open tasks only: never a done task's document or log.
    if ((touched > open)); then
      say "a tick on $name opened the files of $touched tasks; only $open are open"
      exit 1
    fi
  done
fi

cat <<EOF

## hermes kanban dispatch: one tick over a board of mostly finished tasks

$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(go version | cut -d' ' -f3), timing: $(timer)$($quick && echo ", QUICK MODE (not a measurement)")

| tick | 10,000 tasks, 100 ready | 100 tasks, 100 ready | ratio (at most 1.2) | 1,000 tasks, 10 ready | ratio | 10,000 tasks, 10 ready | ratio to 1,000 |
|---|---|---|---|---|---|---|---|
| (a) dispatch --dry-run (median of $runs_dry) | $(ms "${dry[big]}") | $(ms "${dry[tiny]}") | $(ratio "${dry[big]}" "${dry[tiny]}") x | $(ms "${dry[small]}") | $(ratio "${dry[big]}" "${dry[small]}") x | $(ms "${dry[wide]}") | $(ratio "${dry[wide]}" "${dry[small]}") x |
| (b) dispatch: 4 claims, 4 workers started (median of $runs_tick) | $(ms "${tick[big]}") | $(ms "${tick[tiny]}") | $(ratio "${tick[big]}" "${tick[tiny]}") x | $(ms "${tick[small]}") | $(ratio "${tick[big]}" "${tick[small]}") x | $(ms "${tick[wide]}") | $(ratio "${tick[wide]}" "${tick[small]}") x |

The rest of each board is done tasks, each with a run and an events log of 4 or 5 lines.

(c) Files opened by one tick (strace -f -e trace=openat; the task files are those under kanban/tasks):

$files_note

A tick lists kanban/open/ (an empty marker per open task) and reads those tasks' documents only; no
done task's document, events or comments is opened. So its cost follows the number of open tasks
(the first ratio: 100 open documents against 10), not the number of finished ones (the second:
9,990 done tasks against 990, both with 10 open). A real tick adds, per claim, a compare-and-swap of
the task's document (lock, read, write, fsyncs), an event append, and the start of a supervisor that
starts the worker, then records the worker task's id on the run (a second document write).
EOF
