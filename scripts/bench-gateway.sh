#!/usr/bin/env bash
# bench-gateway.sh: what keeping every conversation costs a gateway turn.
# hermes (`gateway serve`, openai provider), a bare Go reverse proxy
# (scripts/gwbench proxy: httputil.ReverseProxy, which stores nothing) and
# Portkey's open-source gateway (npm @portkey-ai/gateway, which stores
# nothing either) in front of one fake upstream model (gwbench upstream),
# measured in turns, alternated ROUNDS times (each round starts each
# server afresh and warms it with WARMUP turns it does not measure: node
# compiles Portkey's hot code as it runs, and its first few hundred turns
# cost it several times the later ones), at 16 and at 1 client(s). Every
# client is a
# stateless chat client that re-sends its whole conversation each turn
# (gwbench load), so hermes finds the session by its history and stores
# every turn, synced. Per target and client count, the medians of the
# rounds:
#
#   turns/s, p50 and p99 latency       as the clients saw them
#   CPU per turn                       the server process's user+system
#                                      time (/proc/PID/stat, all its
#                                      threads; Portkey's node process)
#                                      over turns
#   new upstream connections per turn  as the upstream counted them
#   fsyncs per turn                    fsync, fdatasync and syncfs calls,
#                                      strace -c -f on one more round
#                                      (when strace is there; it slows
#                                      the server, so that round is not
#                                      timed)
#
# Portkey 1.15.2 is installed with npm into PORTKEY_DIR (default
# ~/.cache/hermes-portkey) with hono 4.9.7 and @hono/node-server 1.13.5,
# the versions of its own package-lock.json: as npm installs it plainly
# (node-server 1.19), it answers every streamed call with a 500. It is
# told the provider and the upstream in headers (x-portkey-provider:
# openai, x-portkey-custom-host), and checked to answer 200 streamed and
# not before it is measured. Without npm or node, or when the install or
# that check fails, the script says so and measures the other two.
#
# Usage: scripts/bench-gateway.sh
# Environment: ROUNDS (5), TURNS (turns of each conversation, 30), RUN
# (turns of a measured run at least, 480: its clients hold as many
# conversations one after the other as that takes, so that CPU per turn,
# counted in ticks of 10 ms, is not rounded away at 1 client), WARMUP
# (turns before each measured run, by 16 clients, 960), CLIENTS
# (the client counts to run, "16 1"), DELAY (the
# model's answer time, 0ms), STREAM=1 (streamed replies), HISTORY
# (messages each client's conversation holds before its first turn, 0:
# run it at 20 and at 1,000 to see what a long history adds), HERMES (a hermes
# binary to measure instead of the build of this tree, e.g. an older
# one), BEFORE (another hermes binary, measured as the target "before"
# beside the others, alternated with them: the build before a change),
# TARGETS (the servers to measure, "hermes before proxy portkey"),
# PORTKEY_DIR, KEEP=1 (keep the scratch directory).
set -euo pipefail
cd "$(dirname "$0")/.."
bench=bench-gateway tmp=$(mktemp -d) && . scripts/benchlib.sh
ROUNDS=${ROUNDS:-5}
TURNS=${TURNS:-30}
WARMUP=${WARMUP:-960}
RUN=${RUN:-480}
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
# $tmp/NAME.out and .err, and sets pid and url (at, when the caller sets
# it, else the first http:// address it prints, on either) once the
# server answers there.
start() {
  local name=$1
  shift
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
  pids+=("$pid")
  url=${at:-}
  for _ in $(seq 400); do
    [[ -n ${at:-} ]] || url=$(grep -ho 'http://[0-9.:]*' "$tmp/$name.out" "$tmp/$name.err" 2>/dev/null | head -1 || true)
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

portkey_dir=${PORTKEY_DIR:-$HOME/.cache/hermes-portkey}
portkey_js=$portkey_dir/node_modules/@portkey-ai/gateway/build/start-server.js
portkey_headers=(-header "x-portkey-provider: openai" -header "x-portkey-custom-host: $upstream/v1" -header "Authorization: Bearer none")

# portkey_install: Portkey 1.15.2 in $portkey_dir, hono and
# @hono/node-server pinned (overrides reach the copies its own
# dependencies ask for too); returns 1, having said why, when it cannot.
portkey_install() {
  command -v node >/dev/null && command -v npm >/dev/null || { say "npm or node is not installed: Portkey is not measured"; return 1; }
  if [[ $(cat "$portkey_dir/.installed" 2>/dev/null) != 1.15.2/4.9.7/1.13.5 ]]; then
    say "installing Portkey 1.15.2 (npm) in $portkey_dir"
    mkdir -p "$portkey_dir"
    cat >"$portkey_dir/package.json" <<'EOF2'
{"private": true,
 "dependencies": {"@portkey-ai/gateway": "1.15.2", "hono": "4.9.7", "@hono/node-server": "1.13.5"},
 "overrides": {"hono": "4.9.7", "@hono/node-server": "1.13.5"}}
EOF2
    if ! (cd "$portkey_dir" && timeout 600 npm install --no-audit --no-fund --silent) >"$tmp/npm.err" 2>&1; then
      say "npm could not install Portkey (the registry unreachable?): Portkey is not measured"
      tail -3 "$tmp/npm.err" >&2
      return 1
    fi
    echo 1.15.2/4.9.7/1.13.5 >"$portkey_dir/.installed"
  fi
}

# portkey_check: Portkey answers 200 to a turn, streamed and not.
portkey_check() {
  target portkey
  local s ok=0
  for s in "" -stream; do
    "$gw" load -url "$url" -clients 1 -turns 1 $s "${portkey_headers[@]}" >/dev/null 2>>"$tmp/check.err" || ok=1
  done
  stop "$pid"
  ((ok == 0)) || { say "Portkey did not answer 200 streamed and not: it is not measured"; cat "$tmp/check.err" >&2; }
  return $ok
}

# target NAME: starts the server measured, setting pid and url.
target() {
  case $1 in
  hermes | before)
    local bin=$hermes
    [[ $1 == before ]] && bin=$BEFORE
    rm -rf "$tmp/home"
    start "$1" "$bin" --home "$tmp/home" gateway serve --addr 127.0.0.1:0 \
      --provider openai --base-url "$upstream/v1" --model m
    ;;
  proxy) start proxy "$gw" proxy -upstream "$upstream" ;;
  portkey)
    local port
    port=$("$gw" port)
    at=http://127.0.0.1:$port start portkey node "$portkey_js" --port="$port" --headless
    ;;
  esac
}

# load NAME CLIENTS TURNS: at least TURNS turns of CLIENTS clients against
# the target started last, in conversations of $TURNS turns.
load() {
  local hdr=()
  [[ $1 == portkey ]] && hdr=("${portkey_headers[@]}")
  "$gw" load -url "$url" -clients "$2" -conversations $((($3 + $2 * TURNS - 1) / ($2 * TURNS))) \
    -turns "$TURNS" -history "$HISTORY" "${stream[@]}" "${hdr[@]}"
}

# warm NAME: WARMUP turns of 16 clients, not measured.
warm() { ((WARMUP == 0)) || load "$1" 16 "$WARMUP" >/dev/null; }

# round NAME CLIENTS: one measured run; prints turns/s p50 p99 cpu_ms_per_turn conns_per_turn.
round() {
  target "$1"
  warm "$1"
  local c0 k0 out turns
  c0=$(conns)
  k0=$(cpu_ticks "$pid")
  out=$(load "$1" "$2" "$RUN")
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
  warm "$1"
  strace -c -f -e trace=fsync,fdatasync,syncfs -p "$pid" -o "$tmp/strace.txt" 2>/dev/null &
  local st=$!
  sleep 0.5
  local out
  out=$(load "$1" "$2" "$RUN")
  kill -INT "$st" 2>/dev/null
  wait "$st" 2>/dev/null || true
  stop "$pid"
  awk -v t="$(awk '{print $2}' <<<"$out")" '$NF ~ /^(fsync|fdatasync|syncfs)$/ {n += $4} END {printf "%.2f\n", n / t}' "$tmp/strace.txt"
}

targets=()
for name in ${TARGETS:-hermes ${BEFORE:+before} proxy portkey}; do
  [[ $name == portkey ]] && ! { portkey_install && portkey_check; } && continue
  targets+=("$name")
done

echo "machine: $(nproc) cores, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "clients re-send their history (of $HISTORY messages before their first turn); conversations of $TURNS turns, $RUN turns or more a run after $WARMUP unmeasured, model answers after $DELAY, ${STREAM:+streamed, }$ROUNDS rounds alternated, medians"
echo
echo "| target | clients | turns/s | p50 | p99 | CPU per turn | new upstream connections per turn | fsyncs per turn |"
echo "|---|---|---|---|---|---|---|---|"
for clients in ${CLIENTS:-16 1}; do
  for name in "${targets[@]}"; do : >"$tmp/$name.$clients"; done
  for _ in $(seq "$ROUNDS"); do
    for name in "${targets[@]}"; do round "$name" "$clients" >>"$tmp/$name.$clients"; done
  done
  for name in "${targets[@]}"; do
    f=$tmp/$name.$clients
    col() { awk -v c="$1" '{print $c}' "$f" | median; }
    printf "| %s | %s | %.0f | %.2f ms | %.2f ms | %.3f ms | %.3f | %s |\n" "$name" "$clients" \
      "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)" "$(fsyncs "$name" "$clients")"
  done
done
