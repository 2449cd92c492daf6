#!/usr/bin/env bash
# bench-gateway.sh: requests/s and p50/p99 latency of non-streaming turns of
# `hermes gateway serve` with the echo provider, at concurrency 16 over 20
# conversations, measured with wrk (Debian's package).
#
# Each request is POST /v1/responses {"input": …, "conversation": "bench-NN"}
# with NN picked at random among 20: every turn stores the user message and
# the reply in the conversation's session (synced), a response document and
# the conversation's mapping, as a real client's turn does. Transcripts grow
# during the run (each turn sends the provider the whole history), so a
# longer run measures longer histories.
#
# Usage: scripts/bench-gateway.sh [DURATION]     (default 20s)
# Environment: CONNS (16), THREADS (2), CONVS (20), KEEP=1 keeps the profile.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${1:-${DURATION:-20s}}
CONNS=${CONNS:-16}
THREADS=${THREADS:-2}
CONVS=${CONVS:-20}

if ! command -v wrk >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "bench-gateway: installing wrk" >&2
		apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
	else
		echo "bench-gateway: wrk is not installed (apt-get install wrk)" >&2
		exit 1
	fi
fi

work=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [ "${KEEP:-}" = 1 ]; then
		echo "bench-gateway: profile kept in $work/home" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

scripts/build.sh "$work/hermes"
"$work/hermes" --home "$work/home" gateway serve --addr 127.0.0.1:0 --provider echo 2>"$work/serve.log" &
pid=$!
url=
for _ in $(seq 1 200); do
	url=$(grep -o 'serving on http://[0-9.:]*' "$work/serve.log" | head -1 | sed 's/serving on //' || true)
	[ -n "$url" ] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		cat "$work/serve.log" >&2
		exit 1
	fi
	sleep 0.05
done
if [ -z "$url" ]; then
	echo "bench-gateway: the gateway did not start" >&2
	cat "$work/serve.log" >&2
	exit 1
fi

cat >"$work/bench.lua" <<EOF
local convs = $CONVS
local n = 0
local failed = 0
local threads = {}

function setup(thread)
	table.insert(threads, thread)
end

function init(args)
	math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 100000)
end

function request()
	n = n + 1
	local body = string.format('{"model":"echo","input":"hello %d","conversation":"bench-%02d"}', n, math.random(0, convs - 1))
	return wrk.format("POST", "/v1/responses", { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
	if status ~= 200 then
		failed = failed + 1
	end
end

function done(summary, latency, requests)
	local bad = 0
	for _, t in ipairs(threads) do
		bad = bad + (t:get("failed") or 0)
	end
	local secs = summary.duration / 1e6
	io.write(string.format("requests:  %d in %.1fs (%d not 200, %d socket errors)\n", summary.requests, secs, bad,
		summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
	io.write(string.format("rate:      %.0f requests/s\n", summary.requests / secs))
	io.write(string.format("latency:   p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
		latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
EOF

echo "machine:   $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "load:      wrk -t$THREADS -c$CONNS -d$DURATION, POST /v1/responses over $CONVS conversations, echo provider"
wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --timeout 10s -s "$work/bench.lua" "$url" | sed -n '/^requests:/,$p'

kill -TERM "$pid"
wait "$pid"
pid=
sessions=$(ls "$work/home/profiles/default/sessions/" | grep -c '\.json$' || true)
echo "profile:   $sessions sessions for $CONVS conversations; $(ls "$work/home/profiles/default/gateway/responses/" | grep -c '\.json$') stored responses (limit 1000)"
