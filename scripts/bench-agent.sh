#!/usr/bin/env bash
# bench-agent.sh: hermes's own cost of one tool step of the agent loop, the
# model excluded: store the reply holding a terminal call (synced), run
# `true` through the terminal tool, store the result (synced); on a session
# of 10 messages and of 100,000. BenchmarkToolStep in cmd/agent measures
# it, one turn of N steps with a model that answers at once and reads
# nothing; BenchmarkTerminalTrue measures the terminal tool alone, which is
# mostly the machine's cost of starting sh and true.
#
# Usage: scripts/bench-agent.sh          Environment: COUNT (10 runs of each), STEPS (300 a run)
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-10}
STEPS=${STEPS:-300}
bench=bench-agent tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-agent.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh

say "go test -bench 'ToolStep|TerminalTrue' -benchtime ${STEPS}x -count $COUNT ./cmd/agent"
go test -run '^$' -bench 'BenchmarkToolStep|BenchmarkTerminalTrue' -benchtime "${STEPS}x" -count "$COUNT" ./cmd/agent >"$tmp/out"
# ms: the median of a benchmark's ns/op, in milliseconds.
ms() { grep "^$1-" "$tmp/out" | awk '{for (i = 1; i < NF; i++) if ($(i+1) == "ns/op") print $i / 1e6}' | median; }
small=$(ms 'BenchmarkToolStep/history=10')
large=$(ms 'BenchmarkToolStep/history=100000')
term=$(ms 'BenchmarkTerminalTrue')
verdict() { awk -v v="$1" -v max="$2" 'BEGIN {print (v <= max) ? "met" : "missed"}'; }
ratio=$(awk -v a="$large" -v b="$small" 'BEGIN {printf "%.2f", a / b}')
cat <<TABLE
| measure (median of $COUNT runs of $STEPS steps) | ms | target | |
|---|---|---|---|
| tool step, history 10 | $(printf %.2f "$small") | ≤ 3 | $(verdict "$small" 3) |
| tool step, history 100,000 | $(printf %.2f "$large") | ≤ 1.2x the above | ${ratio}x: $(verdict "$ratio" 1.2) |
| the terminal tool alone running \`true\` | $(printf %.2f "$term") | | |
| the step less the terminal tool (two synced appends, the engine) | $(awk -v a="$small" -v b="$term" 'BEGIN {printf "%.2f", a - b}') | | |
TABLE
