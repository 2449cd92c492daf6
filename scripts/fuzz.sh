#!/usr/bin/env bash
# fuzz.sh [SECONDS] — run every fuzz target for SECONDS (default 120), one
# after another, and print a summary table. Exits non-zero if any target
# failed; a failing input is written by go test under the package's
# testdata/fuzz/<FuzzName>/ (see its output in the log named in the table).
set -u
secs=${1:-120}
cd "$(dirname "$0")/.."

targets=(
	"FuzzScanLines ./fsstore/"
	"FuzzTornTailRecovery ./fsstore/"
	"FuzzParseStored ./fsstore/sessions/"
	"FuzzCheckID ./fsstore/"
	"FuzzCheckName ./profiles/"
	"FuzzParseDuration ./profiles/"
	"FuzzImport ./cmd/importer/"
)

logdir=$(mktemp -d "${TMPDIR:-/tmp}/hermes-fuzz.XXXXXX")
rows=()
failed=0
for t in "${targets[@]}"; do
	read -r name pkg <<<"$t"
	log="$logdir/$name.log"
	echo "== $name ($pkg) for ${secs}s" >&2
	start=$(date +%s)
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" "$pkg" >"$log" 2>&1; then
		result=ok
	else
		result=FAIL
		failed=1
	fi
	took=$(($(date +%s) - start))
	last=$(grep -E '^fuzz: elapsed:.*execs:' "$log" | tail -n 1)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
	rate=-
	[ -n "$execs" ] && rate=$((execs / secs))
	newi=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
	rows+=("$name|$took|${execs:--}|${rate:--}|${newi:--}|$result")
	[ "$result" = FAIL ] && grep -E -A3 -- '--- FAIL|Failing input' "$log" >&2
done

printf '\n%-22s %7s %12s %9s %15s  %s\n' target seconds execs execs/s new-interesting result
for r in "${rows[@]}"; do
	IFS='|' read -r name took execs rate newi result <<<"$r"
	printf '%-22s %7s %12s %9s %15s  %s\n' "$name" "$took" "$execs" "$rate" "$newi" "$result"
done
echo "logs: $logdir"
exit $failed
