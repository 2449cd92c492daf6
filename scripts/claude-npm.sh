#!/bin/sh
# Installs Claude Code (npm @anthropic-ai/claude-code, pinned), which
# testdata/claude_code_*.txtar run against hermes gateway serve, into
# $HERMES_CLAUDE_NPM_DIR (default ~/.cache/hermes-claude-npm). The package
# holds Claude Code's native binary for the machine. Without npm it says so
# and exits 3; the scripts then skip.
set -eu
dir=${HERMES_CLAUDE_NPM_DIR:-$HOME/.cache/hermes-claude-npm}
if ! command -v npm >/dev/null 2>&1; then
	echo "claude-npm.sh: npm is not installed; the Claude Code tests will skip" >&2
	exit 3
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private":true}' > package.json
npm install --no-audit --no-fund --silent @anthropic-ai/claude-code@2.1.328
"$dir/node_modules/.bin/claude" --version
echo "claude-npm.sh: installed in $dir"
