#!/usr/bin/env bash
# bench-gateway.sh: what keeping every conversation costs a gateway turn.
# hermes (`gateway serve`, openai provider) and a bare Go reverse proxy
# (scripts/gwbench proxy: httputil.ReverseProxy, which stores nothing) in
# front of one fake upstream model (gwbench upstream), measured in turns,
# alternated ROUNDS times, at 16 and at 1 client(s). Every client is a
# stateless chat client that re-sends its whole conversation each turn
# (gwbench load), so hermes finds the session by its history and stores
# every turn, synced. Per target and client count, the medians of the
# rounds:
#
#   turns/s, p50 and p99 latency       as the clients saw them
#   CPU per turn                       the server process's user+system
#                                      time (/proc/PID/stat) over turns
#   new upstream connections per turn  as the upstream counted them
#   fsyncs per turn                    fsync, fdatasync and syncfs calls,
#                                      strace -c -f on one more round
#                                      (when strace is there; it slows
#                                      the server, so that round is not
#                                      timed)
#
# Portkey (npm @portkey-ai/gateway) is not run here: its 1.15.2 as npm
# installs it answers every streamed call with a 500 unless hono and
# @hono/node-server are pinned to its lock file's versions.
#
# Usage: scripts/bench-gateway.sh
# Environment: ROUNDS (5), TURNS (turns of each client, 30), CLIENTS
# (the client counts to run, "16 1"), DELAY (the
# model's answer time, 0ms), STREAM=1 (streamed replies), HISTORY
# (messages each client's conversation holds before its first turn, 0:
# run it at 20 and at 1,000 to see what a long history adds), HERMES (a hermes
# binary to measure instead of the build of this tree, e.g. an older
# one), KEEP=1 (keep the scratch directory).
set -euo pipefail
cd "$(dirname "$0")/.."
bench=bench-gateway tmp=$(mktemp -d) && . scripts/benchlib.sh
ROUNDS=${ROUNDS:-5}
TURNS=${TURNS:-30}
DELAY=${DELAY:-0ms}
stream=()
[[ ${STREAM:-} == 1 ]] && stream=(-stream)
HISTORY=${HISTORY:-0}

pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  if [[ ${KEEP:-} == 1 ]]; then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

bench_build gwbench
gw=$tmp/gwbench
hermes=${HERMES:-$hermes}

# start NAME CMD...: runs CMD in the background, its stdout and stderr in
# $tmp/NAME.out and .err, and sets pid and url (the first http:// address
# it prints, on either).
start() {
  local name=$1
  shift
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
  pids+=("$pid")
  url=
  for _ in $(seq 400); do
    url=$(grep -ho 'http://[0-9.:]*' "$tmp/$name.out" "$tmp/$name.err" 2>/dev/null | head -1 || true)
    [[ -n $url ]] && curl -s -o /dev/null "$url/" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  say "$name did not start:"
  cat "$tmp/$name.err" >&2
  exit 1
}

stop() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
conns() { curl -s "$upstream/stats" | sed 's/[^0-9]//g'; }

start upstream "$gw" upstream -delay "$DELAY"
upstream=$url
tick=$(getconf CLK_TCK)

# target NAME: starts the server measured, setting pid and url.
target() {
  case $1 in
  hermes)
    rm -rf "$tmp/home"
    start hermes "$hermes" --home "$tmp/home" gateway serve --addr 127.0.0.1:0 \
      --provider openai --base-url "$upstream/v1" --model m
    ;;
  proxy) start proxy "$gw" proxy -upstream "$upstream" ;;
  esac
}

# round NAME CLIENTS: one measured run; prints turns/s p50 p99 cpu_ms_per_turn conns_per_turn.
round() {
  target "$1"
  local c0 k0 out turns
  c0=$(conns)
  k0=$(cpu_ticks "$pid")
  out=$("$gw" load -url "$url" -clients "$2" -turns "$TURNS" -history "$HISTORY" "${stream[@]}")
  local k1 c1
  k1=$(cpu_ticks "$pid")
  c1=$(conns)
  stop "$pid"
  turns=$(awk '{print $2}' <<<"$out")
  awk -v o="$out" -v k=$((k1 - k0)) -v c=$((c1 - c0)) -v t="$turns" -v hz="$tick" 'BEGIN {
    split(o, f, " "); printf "%s %s %s %.3f %.3f\n", f[8], f[10], f[12], k / hz * 1000 / t, c / t }'
}

# fsyncs NAME CLIENTS: fsyncs per turn, under strace.
fsyncs() {
  command -v strace >/dev/null || { echo "-"; return; }
  target "$1"
  strace -c -f -e trace=fsync,fdatasync,syncfs -p "$pid" -o "$tmp/strace.txt" 2>/dev/null &
  local st=$!
  sleep 0.5
  local out
  out=$("$gw" load -url "$url" -clients "$2" -turns "$TURNS" -history "$HISTORY" "${stream[@]}")
  kill -INT "$st" 2>/dev/null
  wait "$st" 2>/dev/null || true
  stop "$pid"
  awk -v t="$(awk '{print $2}' <<<"$out")" '$NF ~ /^(fsync|fdatasync|syncfs)$/ {n += $4} END {printf "%.2f\n", n / t}' "$tmp/strace.txt"
}

echo "machine: $(nproc) cores, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "clients re-send their history (of $HISTORY messages before their first turn); $TURNS turns each, model answers after $DELAY, ${STREAM:+streamed, }$ROUNDS rounds alternated, medians"
echo
echo "| target | clients | turns/s | p50 | p99 | CPU per turn | new upstream connections per turn | fsyncs per turn |"
echo "|---|---|---|---|---|---|---|---|"
for clients in ${CLIENTS:-16 1}; do
  : >"$tmp/hermes.$clients" >"$tmp/proxy.$clients"
  for _ in $(seq "$ROUNDS"); do
    for name in hermes proxy; do round "$name" "$clients" >>"$tmp/$name.$clients"; done
  done
  for name in hermes proxy; do
    f=$tmp/$name.$clients
    col() { awk -v c="$1" '{print $c}' "$f" | median; }
    printf "| %s | %s | %.0f | %.2f ms | %.2f ms | %.3f ms | %.3f | %s |\n" "$name" "$clients" \
      "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)" "$(fsyncs "$name" "$clients")"
  done
done
