#!/bin/sh
# Installs the npm reference MCP servers that testdata/mcp_npm.txtar runs
# hermes against: @modelcontextprotocol/server-filesystem (stdio) and
# @modelcontextprotocol/server-everything (streamable HTTP), at pinned
# versions, into $HERMES_MCP_NPM_DIR (default ~/.cache/hermes-mcp-npm).
# Without npm it says so and exits 3; the script then skips.
set -eu
dir=${HERMES_MCP_NPM_DIR:-$HOME/.cache/hermes-mcp-npm}
if ! command -v npm >/dev/null 2>&1; then
	echo "mcp-npm.sh: npm is not installed; the MCP reference server tests will skip" >&2
	exit 3
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private":true}' > package.json
npm install --no-audit --no-fund --silent \
	@modelcontextprotocol/server-filesystem@2026.8.31 \
	@modelcontextprotocol/server-everything@2026.8.31
echo "mcp-npm.sh: installed in $dir"
