#!/usr/bin/env bash
# bench-memory.sh: what the memory and the skills cost a session's start,
# the whole process: `hermes chat --no-tools -q hi` (the echo provider) on
# a profile with nothing, against one with a full memory (MEMORY.md and
# USER.md within 5% of their bounds, from a log of 1,000 changes) and 200
# skills (a 200-character description and a 4 KiB body each, written long
# before, as a profile's are). The two are run in turn, one of each,
# RUNS times a pass, and each pass prints both medians, their difference
# and the load average: on a shared machine a difference measured in one
# pass is worth more than two figures measured apart. Then the same with
# the index of the skills removed before each run (a first start, or one
# after every SKILL.md changed).
#
# Usage: scripts/bench-memory.sh            Environment: RUNS (41), PASSES (3)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-41}
PASSES=${PASSES:-3}
bench=bench-memory
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-memory.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh
bench_build
export HERMES_PROVIDER=echo

say "making the full profile"
full=$tmp/full
P=$full/profiles/default
"$hermes" --home "$full" memory add "first" 2>/dev/null
# About 1,000 changes: adds, and removes of the oldest entry once
# MEMORY.md is full; then USER.md filled.
fill=$(printf 'x%.0s' $(seq 70))
oldest=1002
for i in $(seq 1002 1500); do
  if ! "$hermes" --home "$full" memory add "fact $i: $fill" 2>/dev/null; then
    "$hermes" --home "$full" memory remove "fact $oldest:" 2>/dev/null
    oldest=$((oldest + 1))
    "$hermes" --home "$full" memory add "fact $i: $fill" 2>/dev/null
  fi
done
for i in $(seq 1 500); do
  "$hermes" --home "$full" memory add --user "about the user $i: $(printf 'y%.0s' $(seq 60))" 2>/dev/null || break
done
for i in $(seq -w 0 199); do
  d=$P/skills/skill-$i
  mkdir -p "$d"
  { printf -- '---\nname: skill-%s\ndescription: %s\n---\n' "$i" "$(printf 'd%.0s' $(seq 200))"; for _ in $(seq 315); do echo instructions; done; } >"$d/SKILL.md"
done
touch -t 202601010000 "$P"/skills/*/SKILL.md
"$hermes" --home "$full" memory show 2>&1 >/dev/null | tail -1 >&2
"$hermes" --home "$full" memory show --user 2>&1 >/dev/null | tail -1 >&2
say "$(wc -l <"$P/memory/log.jsonl") changes in the log, $(ls "$P/skills" | wc -l) skills"

empty=$tmp/empty
"$hermes" --home "$empty" chat --no-tools -q hi >/dev/null
"$hermes" --home "$full" chat --no-tools -q hi >/dev/null

# paired PASS: RUNS runs of each case, one of each in turn after 3 of
# each unmeasured; prints the pass's table row.
paired() {
  local i t0 t1 t2
  for i in 1 2 3; do
    "$hermes" --home "$empty" chat --no-tools -q hi >/dev/null
    "$hermes" --home "$full" chat --no-tools -q hi >/dev/null
  done
  : >"$tmp/none" && : >"$tmp/with"
  for ((i = 0; i < RUNS; i++)); do
    t0=$(date +%s%N)
    "$hermes" --home "$empty" chat --no-tools -q hi >/dev/null
    t1=$(date +%s%N)
    "$hermes" --home "$full" chat --no-tools -q hi >/dev/null
    t2=$(date +%s%N)
    echo $((t1 - t0)) >>"$tmp/none"
    echo $((t2 - t1)) >>"$tmp/with"
  done
  awk -v p="$1" -v n="$(median <"$tmp/none")" -v w="$(median <"$tmp/with")" -v l="$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo ?)" \
    'BEGIN {printf "| %d | %.2f ms | %.2f ms | %+.2f ms | %s |\n", p, n/1e6, w/1e6, (w-n)/1e6, l}'
}
say "$PASSES passes of $RUNS runs of each case in turn (date loop)"
printf '| pass | nothing | full memory, 200 skills | difference | load |\n|---|---|---|---|---|\n'
for ((pass = 1; pass <= PASSES; pass++)); do paired "$pass"; done

none=$(time_median "$RUNS" 3 "$hermes" --home "$empty" chat --no-tools -q hi)
printf '#!/bin/sh\nrm -f %q\n' "$P/skills/.index.cache" >"$tmp/cold"
chmod +x "$tmp/cold"
cold=$(time_median_prepared "$RUNS" 3 "$tmp/cold" "$hermes" --home "$full" chat --no-tools -q hi)
awk -v n="$none" -v c="$cold" 'BEGIN {
  printf "\n| start of a session (chat -q, echo provider, %s) | median |\n|---|---|\n", "'"$(timer)"'"
  printf "| nothing | %.2f ms |\n| full memory, 200 skills, no index of the skills | %.2f ms (+%.2f ms) |\n", n*1000, c*1000, (c-n)*1000
}'
