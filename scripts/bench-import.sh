#!/usr/bin/env bash
# bench-import.sh: `hermes sessions import DIR` of 10,000 small transcripts
# (a quarter each: Claude Code, Codex, the Python hermes's snapshots and
# this program's exports, in the trees those programs write):
#
#   (a) the first run, into an empty profile: time and files per second
#   (b) a second, unchanged run costs at most a third of the first
#
# Usage: scripts/bench-import.sh [--quick]
#   --quick  1,000 files and one run (a smoke test of the script, not a
#            measurement)
#
# It builds hermes, writes the files under a scratch directory, and prints
# the medians of 3 runs of each (the first run's profile is removed before
# each of its runs). It takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

n=10000 runs=3
[[ ${1:-} == --quick ]] && n=1000 runs=1
bench=bench-import tmp=$(mktemp -d) && . scripts/benchlib.sh
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/hermes" .
src=$tmp/src
mkdir -p "$src/claude/projects/-home-ann-proj" "$src/codex/sessions/2025/09/20" "$src/hermes/sessions" "$src/exports"
say "writing $n transcripts"
for ((i = 0; i < n; i++)); do
  id=$(printf '%08d' "$i")
  case $((i % 4)) in
  0) printf '{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"question %s"},"uuid":"u%s","timestamp":"2025-08-04T09:00:00.000Z","sessionId":"c-%s"}\n{"parentUuid":"u%s","isSidechain":false,"type":"assistant","message":{"id":"msg_%s","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"answer %s"}]},"uuid":"a%s","timestamp":"2025-08-04T09:00:02.000Z","sessionId":"c-%s"}\n' \
    "$i" "$id" "$id" "$id" "$id" "$i" "$id" "$id" >"$src/claude/projects/-home-ann-proj/c-$id.jsonl" ;;
  1) printf '{"timestamp":"2025-09-20T10:00:00.100Z","type":"session_meta","payload":{"id":"x-%s","timestamp":"2025-09-20T10:00:00.100Z","cwd":"/home/ann","cli_version":"0.164.0","base_instructions":{"text":"You are Codex."}}}\n{"timestamp":"2025-09-20T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"question %s"}]}}\n{"timestamp":"2025-09-20T10:00:02.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer %s"}]}}\n{"timestamp":"2025-09-20T10:00:02.100Z","type":"event_msg","payload":{"type":"agent_message","message":"answer %s"}}\n' \
    "$id" "$i" "$i" "$i" >"$src/codex/sessions/2025/09/20/rollout-2025-09-20T10-00-00-x-$id.jsonl" ;;
  2) printf '{\n  "session_id": "h-%s",\n  "model": "anthropic/claude-sonnet-4",\n  "platform": "cli",\n  "session_start": "2025-06-10T18:15:00.250000",\n  "last_updated": "2025-06-10T18:16:30.500000",\n  "system_prompt": "You are Hermes Agent.",\n  "message_count": 2,\n  "messages": [\n    {"role": "user", "content": "question %s", "_db_persisted": true},\n    {"role": "assistant", "content": "answer %s", "finish_reason": "stop"}\n  ]\n}\n' \
    "$id" "$i" "$i" >"$src/hermes/sessions/session_h-$id.json" ;;
  3) printf '{"id":"e-%s","title":"","source":"cli","model":"gpt-4o","created_at":"2025-03-02T09:00:00.000000Z","messages":[{"seq":1,"ts":"2025-03-02T09:00:01.000000Z","role":"user","content":"question %s"},{"seq":2,"ts":"2025-03-02T09:00:05.500000Z","role":"assistant","content":"answer %s"}]}\n' \
    "$id" "$i" "$i" >"$src/exports/e-$id.jsonl" ;;
  esac
done

export HERMES_HOME=$tmp/home
first=() second=()
for ((r = 0; r < runs; r++)); do
  rm -rf "$HERMES_HOME"
  t0=$(date +%s.%N)
  "$tmp/hermes" sessions import "$src" >"$tmp/first.out"
  t1=$(date +%s.%N)
  first+=("$(echo "$t1 - $t0" | bc -l)")
done
grep -q " $n created, 0 extended, 0 unchanged, 0 refused, 0 failed, 0 skipped" "$tmp/first.out" || { cat "$tmp/first.out" >&2; say "the first run did not create every session"; exit 1; }
for ((r = 0; r < runs; r++)); do
  t0=$(date +%s.%N)
  "$tmp/hermes" sessions import "$src" >"$tmp/second.out"
  t1=$(date +%s.%N)
  second+=("$(echo "$t1 - $t0" | bc -l)")
done
grep -q " 0 created, 0 extended, $n unchanged," "$tmp/second.out" || { cat "$tmp/second.out" >&2; say "the second run changed something"; exit 1; }

f=$(printf '%s\n' "${first[@]}" | median)
s=$(printf '%s\n' "${second[@]}" | median)
ratio=$(echo "$s / $f" | bc -l)
echo "| run | files | median (s) | files/s |"
echo "|---|---|---|---|"
printf '| first (into an empty profile) | %d | %.2f | %.0f |\n' "$n" "$f" "$(echo "$n / $f" | bc -l)"
printf '| second (unchanged) | %d | %.2f | %.0f |\n' "$n" "$s" "$(echo "$n / $s" | bc -l)"
printf '\nsecond / first = %.2f (target: at most 0.33)\n' "$ratio"
if (($(echo "$ratio > 1/3" | bc -l))); then
  say "the second run costs more than a third of the first"
  exit 1
fi
