#!/usr/bin/env bash
# build.sh: the release build of hermes, which the benchmark scripts
# measure.
#
#   scripts/build.sh [OUTPUT]    (default ./hermes)
#
# It differs from a plain `go build` in two flags, both for start-up time,
# which every command pays (about 1 ms of a 3.1 ms `hermes --version` on a
# 2-core VM; see the README's Performance section):
#   CGO_ENABLED=0           a static binary: no dynamic loader, no libc
#                           start-up, no cgo runtime threads; the DNS
#                           resolver is Go's own
#   -tags urfave_cli_no_docs  leaves out urfave/cli's Markdown and man
#                           renderers (hermes writes its man page itself)
# -trimpath keeps the build machine's paths out of the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath -tags urfave_cli_no_docs -o "${1:-hermes}" .
