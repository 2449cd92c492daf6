#!/usr/bin/env bash
# clients.sh: real clients against the gateway, counting the sessions each
# conversation makes. Every scenario is one conversation, so each should
# make one session; the table says what it made.
#
#   scripts/clients.sh
#
# It installs @openai/codex and openai from npm into a temporary directory
# (versions pinned below, CODEX_VERSION and OPENAI_VERSION override them),
# builds hermes, and runs `hermes gateway serve` on a free loopback port in
# a temporary HERMES_HOME. Codex runs in a CODEX_HOME of its own with
# scripts/clients/codex-config.toml: the gateway as its model provider
# (wire_api responses), so it needs no login and no network beyond it.
#
#   a. codex exec "say hello", then codex exec resume --last "and again"
#      (echo provider)
#   b. one codex exec turn in which the model calls Codex's shell tool: the
#      echo provider only answers with text, so this gateway runs the exec
#      provider with scripts/clients/tool-model.js
#   c. the openai SDK's stateless loops (scripts/clients/sdk-loops.js): five
#      chat.completions turns re-sending the whole history, and five
#      responses turns with store:false re-sending the whole input (echo
#      provider)
#
# Needs Go, Node and npm (Debian: apt-get install nodejs npm). It prints a
# Markdown table on stdout, and exits 1 when a scenario made a number of
# sessions other than one, or its client failed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# openai 7 wants Node 22; 6.30.1 runs on the Node 18 of Debian 12 and sends
# the same requests.
CODEX_VERSION=${CODEX_VERSION:-0.169.0}
OPENAI_VERSION=${OPENAI_VERSION:-6.30.1}
TURNS=5

say() { echo "clients: $*" >&2; }

for cmd in go node npm; do
  command -v "$cmd" >/dev/null 2>&1 || { say "$cmd is missing (Debian: apt-get install golang nodejs npm)"; exit 1; }
done

tmp=$(mktemp -d)
gateway_pid=
cleanup() {
  [[ -n $gateway_pid ]] && kill "$gateway_pid" 2>/dev/null && wait "$gateway_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

say "installing @openai/codex@$CODEX_VERSION and openai@$OPENAI_VERSION"
mkdir -p "$tmp/npm"
(cd "$tmp/npm" && npm install --no-audit --no-fund --silent "@openai/codex@$CODEX_VERSION" "openai@$OPENAI_VERSION") >&2
codex=$tmp/npm/node_modules/.bin/codex
export NODE_PATH=$tmp/npm/node_modules
versions="$("$codex" --version), openai $(node -p 'JSON.parse(fs.readFileSync(process.env.NODE_PATH + "/openai/package.json")).version'), node $(node --version)"
say "$versions"

say "building hermes"
scripts/build.sh "$tmp/hermes"
export HERMES_HOME=$tmp/home
export CODEX_HOME=$tmp/codex
export HERMES_CLIENTS_API_KEY=unused
mkdir -p "$CODEX_HOME" "$tmp/work"

# start_gateway ARGS...: hermes gateway serve on a free loopback port, with
# the provider flags ARGS; it sets base_url and Codex's config to it.
start_gateway() {
  "$tmp/hermes" gateway serve --addr 127.0.0.1:0 "$@" 2>"$tmp/gateway.log" &
  gateway_pid=$!
  local addr= i
  for ((i = 0; i < 100; i++)); do
    addr=$(grep -o 'serving on http://[0-9.:]*' "$tmp/gateway.log" | sed 's|.*http://||') && break
    kill -0 "$gateway_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z $addr ]]; then
    say "the gateway did not start:"
    cat "$tmp/gateway.log" >&2
    exit 1
  fi
  base_url=http://$addr/v1
  sed "s|@BASE_URL@|$base_url|" scripts/clients/codex-config.toml >"$CODEX_HOME/config.toml"
}

stop_gateway() {
  kill "$gateway_pid"
  wait "$gateway_pid" || true
  gateway_pid=
}

sessions() { "$tmp/hermes" --json sessions list --limit 0 | wc -l; }

# codex_run ARGS...: codex exec with ARGS in the scratch directory; its
# answer (stdout) is printed, its log shown only when it fails. Codex reads
# stdin as more of the prompt when it is not a terminal: it gets none.
codex_run() {
  echo "\$ codex exec $*"
  if ! (cd "$tmp/work" && timeout 120 "$codex" exec --skip-git-repo-check "$@" </dev/null 2>"$tmp/codex.log"); then
    say "codex exec $* failed:"
    tail -20 "$tmp/codex.log" >&2
    return 1
  fi
}

rows=()
failed=0
# scenario NAME COMMAND...: runs COMMAND, and records the sessions it made.
scenario() {
  local name=$1 before made result=pass
  shift
  say "scenario: $name"
  before=$(sessions)
  "$@" || result="fail (the client failed)"
  made=$(($(sessions) - before))
  if [[ $result == pass ]] && ((made != 1)); then
    result=fail
  fi
  [[ $result == pass ]] || failed=1
  rows+=("| $name | $made | 1 | $result |")
}

codex_resume() {
  codex_run "say hello" && codex_run resume --last "and again"
}
codex_tool() { codex_run "run a command"; }
sdk_loop() {
  echo "\$ node sdk-loops.js $1 $base_url $TURNS"
  timeout 120 node scripts/clients/sdk-loops.js "$1" "$base_url" "$TURNS"
}

start_gateway --provider echo
scenario "a. codex exec, then codex exec resume --last" codex_resume
stop_gateway

start_gateway --provider exec --exec-command "node $(printf %q "$repo/scripts/clients/tool-model.js")"
scenario "b. codex exec, one tool call (exec provider)" codex_tool
stop_gateway

start_gateway --provider echo
scenario "c. openai SDK: $TURNS chat.completions turns, whole history each" sdk_loop chat
scenario "c. openai SDK: $TURNS responses turns, store:false, whole input each" sdk_loop responses
stop_gateway

echo
echo "$versions"
echo
echo "| scenario | sessions created | expected | result |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$failed"
