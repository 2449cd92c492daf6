#!/bin/sh
# Installs ccusage, the tool Claude Code users run for daily token and cost
# reports, at a pinned version, into $HERMES_CCUSAGE_DIR (default
# ~/.cache/hermes-ccusage): ccusage_test.go checks `hermes usage daily`
# against what it reads from the same Claude Code transcripts. ccusage 20
# is a native binary shipped in an npm package for each platform (an
# optional dependency npm picks). Without npm it says so and exits 3; the
# test then skips, naming this script.
set -eu
dir=${HERMES_CCUSAGE_DIR:-$HOME/.cache/hermes-ccusage}
if ! command -v npm >/dev/null 2>&1; then
	echo "ccusage-npm.sh: npm is not installed; the ccusage oracle test will skip" >&2
	exit 3
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private":true}' > package.json
npm install --no-audit --no-fund --silent ccusage@20.0.24
"$dir/node_modules/.bin/ccusage" --version
echo "ccusage-npm.sh: installed in $dir"
