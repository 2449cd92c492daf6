#!/usr/bin/env bash
# clients.sh: real clients against the gateway. Every scenario is one
# conversation, so each should make one session; the table says what it
# made, and whether the client's tools reached the model.
#
#   scripts/clients.sh
#
# It first runs the test model's own tests (scripts/clients/model.test.js),
# then installs @openai/codex, openai, ai, @ai-sdk/openai, zod and
# @anthropic-ai/sdk from npm
# into a temporary directory (versions pinned below; CODEX_VERSION,
# OPENAI_VERSION, AI_VERSION and AI_OPENAI_VERSION override them), builds
# hermes, and runs `hermes gateway serve` on a free loopback port in a
# temporary HERMES_HOME. Codex runs in a CODEX_HOME of its own with
# scripts/clients/codex-config.toml: the gateway as its model provider
# (wire_api responses), so it needs no login and no network beyond it.
#
# With the echo provider (text only, so no tools):
#   a. codex exec "say hello", then codex exec resume --last "and again"
#   c. the openai SDK's stateless loops (scripts/clients/sdk-loops.js): five
#      chat.completions turns re-sending the whole history, and five
#      responses turns with store:false re-sending the whole input
# With the exec provider and scripts/clients/tool-model.js, which calls
# Codex's shell tool only when $HERMES_TOOLS offers it:
#   b. one codex exec turn in which the model calls Codex's shell tool
# With the openai provider and scripts/clients/model.js, a strict test model
# that records every request and calls only the tools it was offered:
#   d. the same Codex turn: Codex's shell tool must reach the model, and
#      the model's call must reach Codex (its answer holds the shell's
#      output)
#   e. the openai SDK with a function tool (scripts/clients/sdk-tools.js):
#      chat.completions and responses, whole and streamed; the model must
#      receive the tool and the client's parameters, call the tool, and
#      answer with its result
#   f. the Vercel AI SDK (scripts/clients/vercel.js) on its default
#      Responses model, two turns with a tool (the second sends
#      item_reference items)
#   g. codex exec with `hermes mcp serve` as an MCP server, configured by
#      the README's own snippet: Codex offers the server's tools (as the
#      namespace mcp__hermes), the model calls kanban_create, and codex
#      exec, with no one to ask, runs it: the task is on the board
#   h. Anthropic's TypeScript SDK (scripts/clients/anthropic-sdk.js) on
#      /v1/messages, whole and streamed: a tool round trip, and (whole) a
#      request the API refuses, raised as the SDK's BadRequestError
#
# Needs Go, Node and npm (Debian: apt-get install nodejs npm). It prints a
# Markdown table on stdout, and exits 1 when a scenario made a number of
# sessions other than one, a client's tools or parameters did not reach the
# model, or a client failed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# openai 7, ai 7 and @ai-sdk/openai 4 declare Node 22 (ai 7 with
# @ai-sdk/openai 4 did pass scenario f on Node 20 when tried, outside what
# they declare); these are the newest that declare Node 18 and 20, and send
# the same requests.
CODEX_VERSION=${CODEX_VERSION:-0.169.0}
OPENAI_VERSION=${OPENAI_VERSION:-6.30.1}
AI_VERSION=${AI_VERSION:-6.0.325}
AI_OPENAI_VERSION=${AI_OPENAI_VERSION:-3.0.141}
ZOD_VERSION=4.6.7
ANTHROPIC_SDK_VERSION=${ANTHROPIC_SDK_VERSION:-1.14.0}
TURNS=5

say() { echo "clients: $*" >&2; }

for cmd in go node npm; do
  command -v "$cmd" >/dev/null 2>&1 || { say "$cmd is missing (Debian: apt-get install golang nodejs npm)"; exit 1; }
done

# The test model first: a scenario proves nothing if it accepts what the
# real API refuses, or calls a tool it was not offered.
say "testing the test model"
node --test --test-reporter=dot scripts/clients/model.test.js >&2 || { say "the test model failed its tests"; exit 1; }

tmp=$(mktemp -d)
gateway_pid= model_pid=
cleanup() {
  [[ -n $gateway_pid ]] && kill "$gateway_pid" 2>/dev/null && wait "$gateway_pid" 2>/dev/null
  [[ -n $model_pid ]] && kill "$model_pid" 2>/dev/null && { wait "$model_pid" 2>/dev/null || true; }
  rm -rf "$tmp"
}
trap cleanup EXIT

packages=("@openai/codex@$CODEX_VERSION" "openai@$OPENAI_VERSION" "ai@$AI_VERSION" "@ai-sdk/openai@$AI_OPENAI_VERSION" "zod@$ZOD_VERSION" "@anthropic-ai/sdk@$ANTHROPIC_SDK_VERSION")
say "installing ${packages[*]}"
mkdir -p "$tmp/npm"
# --prefer-offline: the versions are pinned, so what npm's cache holds of
# them is what the registry would send.
(cd "$tmp/npm" && npm install --prefer-offline --no-audit --no-fund --silent "${packages[@]}") >&2
codex=$tmp/npm/node_modules/.bin/codex
export NODE_PATH=$tmp/npm/node_modules
version() { node -p "require(process.env.NODE_PATH + '/$1/package.json').version"; }
versions="$("$codex" --version), openai $(version openai), ai $(version ai), @ai-sdk/openai $(version @ai-sdk/openai), @anthropic-ai/sdk $(version @anthropic-ai/sdk), node $(node --version)"
say "$versions"

say "building hermes"
scripts/build.sh "$tmp/hermes"
export HERMES_HOME=$tmp/home
export CODEX_HOME=$tmp/codex
export HERMES_CLIENTS_API_KEY=unused
# The key the gateway's openai provider sends to the test model, which
# wants one, as the real API does.
export HERMES_API_KEY=unused
mkdir -p "$CODEX_HOME" "$tmp/work"

# The strict test model, one for the whole run: the call ids it issued are
# its memory. The exec provider's tool-model.js logs to the same file.
model=hermes-test-model
export HERMES_CLIENTS_MODEL_LOG=$tmp/model.jsonl
: >"$HERMES_CLIENTS_MODEL_LOG"
node scripts/clients/model.js "$HERMES_CLIENTS_MODEL_LOG" >"$tmp/model.out" 2>&1 &
model_pid=$!
model_url=
for ((i = 0; i < 100; i++)); do
  model_url=$(grep -o '^http://[0-9.:]*/v1' "$tmp/model.out") && break
  kill -0 "$model_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z $model_url ]]; then
  say "the test model did not start:"
  cat "$tmp/model.out" >&2
  exit 1
fi

# start_gateway ARGS...: hermes gateway serve on a free loopback port, with
# the provider flags ARGS; it sets base_url and Codex's config to it, with
# the model the test model serves.
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
  sed -e "s|@BASE_URL@|$base_url|" -e "s|@MODEL@|$model|" scripts/clients/codex-config.toml >"$CODEX_HOME/config.toml"
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
# scenario NAME TOOL COMMAND...: runs COMMAND, and records the sessions it
# made and whether TOOL reached the model. TOOL is "-" for a scenario
# without tools, else a tool's name and the parameters the model must have
# received with it, as scripts/clients/model-log.js takes them.
scenario() {
  local name=$1 tool=$2 before skip made reached=- why=()
  shift 2
  say "scenario: $name"
  before=$(sessions)
  skip=$(wc -l <"$HERMES_CLIENTS_MODEL_LOG")
  "$@" || why+=("the client failed")
  made=$(($(sessions) - before))
  ((made == 1)) || why+=("$made sessions")
  if [[ $tool != - ]]; then
    # Unquoted: TOOL is words, none of them holding a space or a wildcard.
    reached=$(node scripts/clients/model-log.js "$HERMES_CLIENTS_MODEL_LOG" "$skip" $tool) || why+=("tools did not reach the model")
  fi
  local result=pass w
  if ((${#why[@]} > 0)); then
    result="fail (${why[0]}"
    for w in "${why[@]:1}"; do result+=", $w"; done
    result+=")"
    failed=1
  fi
  rows+=("| $name | $made | 1 | $reached | $result |")
}

codex_resume() {
  codex_run "say hello" && codex_run resume --last "and again"
}
# codex_tool: a Codex turn whose model calls Codex's shell tool with
# `echo tool-ran-$((6*7))`; Codex's answer quotes what the shell printed.
codex_tool() {
  local out
  out=$(codex_run "run a command") || return 1
  echo "$out"
  grep -q 'tool-ran-42' <<<"$out" || { say "codex's answer does not hold the command's output, tool-ran-42"; return 1; }
}
# codex_mcp: Codex's config gains the README's [mcp_servers.hermes] table
# as written (hermes found on PATH), and a codex exec turn's model calls
# the server's kanban_create; the task it makes must be on the board.
codex_mcp() {
  local out
  { echo; sed -n '/^# Codex: ~\/.codex\/config.toml$/,/^```$/p' README.md | sed '$d'; } >>"$CODEX_HOME/config.toml"
  grep -q '^\[mcp_servers.hermes\]' "$CODEX_HOME/config.toml" || { say "the README has no Codex snippet for hermes mcp serve"; return 1; }
  out=$(PATH=$tmp:$PATH codex_run "make a task") || return 1
  echo "$out"
  "$tmp/hermes" --json kanban list | grep -q '"made-by-codex-42"' || { say "no task made-by-codex-42 on the board: codex did not run kanban_create"; return 1; }
}
sdk_loop() {
  echo "\$ node sdk-loops.js $1 $base_url $TURNS"
  timeout 120 node scripts/clients/sdk-loops.js "$1" "$base_url" "$TURNS"
}
sdk_tools() {
  echo "\$ node sdk-tools.js $1 $2 $base_url"
  timeout 120 node scripts/clients/sdk-tools.js "$1" "$2" "$base_url"
}
anthropic_sdk() {
  echo "\$ node anthropic-sdk.js $1 ${base_url%/v1}"
  timeout 120 node scripts/clients/anthropic-sdk.js "$1" "${base_url%/v1}"
}
vercel() {
  echo "\$ node vercel.js $base_url"
  timeout 120 node scripts/clients/vercel.js "$base_url"
}

# What sdk-tools.js sets, as the model must receive them: the model it asks
# for, the token limit under either chat completions name, tool_choice in
# the chat completions shape.
common='model="hermes-test-model-2" temperature=0.25 top_p=0.5 max_completion_tokens|max_tokens=300 parallel_tool_calls=false tool_choice={"type":"function","function":{"name":"lookup_order"}}'
chat_params="lookup_order $common seed=7"
responses_params="lookup_order $common"
# What Codex sends with its tools, and what vercel.js sets.
codex_params='exec_command tool_choice="auto" parallel_tool_calls=true'
vercel_params='lookup_order temperature=0.25 max_completion_tokens|max_tokens=300'
# What anthropic-sdk.js sets, in chat completions' names.
anthropic_params='lookup_order model="hermes-test-model-2" max_completion_tokens|max_tokens=300 tool_choice={"type":"function","function":{"name":"lookup_order"}}'

model=echo
start_gateway --provider echo
scenario "a. codex exec, then codex exec resume --last" - codex_resume
stop_gateway

start_gateway --provider exec --exec-command "node $(printf %q "$repo/scripts/clients/tool-model.js")"
scenario "b. codex exec, one tool call (exec provider)" exec_command codex_tool
stop_gateway

start_gateway --provider echo
scenario "c. openai SDK: $TURNS chat.completions turns, whole history each" - sdk_loop chat
scenario "c. openai SDK: $TURNS responses turns, store:false, whole input each" - sdk_loop responses
stop_gateway

model=hermes-test-model
start_gateway --provider openai --base-url "$model_url" --model "$model"
scenario "d. codex exec, one tool call (test model)" "$codex_params" codex_tool
scenario "e. openai SDK: chat.completions, a function tool" "$chat_params" sdk_tools chat whole
scenario "e. openai SDK: chat.completions streamed, a function tool" "$chat_params" sdk_tools chat stream
scenario "e. openai SDK: responses, a function tool" "$responses_params" sdk_tools responses whole
scenario "e. openai SDK: responses streamed, a function tool" "$responses_params" sdk_tools responses stream
scenario "f. Vercel AI SDK: two turns with a tool (Responses)" "$vercel_params" vercel
scenario "g. codex exec, hermes mcp serve's kanban_create (README's config)" mcp__hermes__kanban_create codex_mcp
scenario "h. Anthropic SDK: messages, a tool, then a refused request" "$anthropic_params" anthropic_sdk whole
scenario "h. Anthropic SDK: messages streamed, a tool" "$anthropic_params" anthropic_sdk stream
stop_gateway

echo
echo "$versions"
echo
echo "| scenario | sessions created | expected | tools reached the model | result |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$failed"
