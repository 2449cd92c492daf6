#!/usr/bin/env bash
# crashloop.sh: the crash loop. Builds hermes and scripts/crashloop, then runs
# a mixed workload of real hermes processes (sessions append/save/rename/new,
# tasks run --wait, kanban create/claim/complete, agent turns that run tool
# calls) on one profile of a temp home, SIGKILLing a random running child
# every 1-30 ms. Every 10 kills the
# workload stops, hermes fsck (--repair when needed) must get the profile
# clean, and every acknowledged write (a child that exited 0) must be on disk;
# every tool call must get exactly one result, and none may run twice.
# Then a gateway phase: `hermes gateway serve` SIGKILLed and restarted under
# clients that retry each turn until it is answered; every answered turn
# must be stored, and no stored turn may run twice. With -delegate-kills N, a
# delegation phase: chat turns killed in the middle of a delegate call of three
# sub-agents, each followed by a turn that must carry the call on (one result,
# the three answers in order, no child's command run twice, no prompt stored
# twice). Each reply of the tool-running turns says what it cost, and hermes
# usage must count every call a transcript holds once.
#
# Usage: scripts/crashloop.sh [KILLS] [crashloop flags…]
#   KILLS  children to kill with SIGKILL (default 500)
#   e.g.   scripts/crashloop.sh 1000 -check-every 25 -gateway-kills 100 -v
#
# Exit status: 0 when nothing acknowledged was lost and fsck got clean every
# time; 1 otherwise (the temp home is kept for a look); 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

kills=500
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
  kills=$1
  shift
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hermes-crashloop.XXXXXX")
go build -o "$tmp/hermes" .
go build -o "$tmp/crashloop" ./scripts/crashloop
echo "crashloop: $kills kills, home $tmp/home" >&2
status=0
"$tmp/crashloop" -hermes "$tmp/hermes" -home "$tmp/home" -kills "$kills" "$@" || status=$?
if [[ $status -eq 0 ]]; then
  rm -rf "$tmp"
else
  echo "crashloop: failed (exit $status); the profile is kept in $tmp/home" >&2
fi
exit "$status"
