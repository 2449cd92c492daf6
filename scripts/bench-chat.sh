#!/usr/bin/env bash
# bench-chat.sh: how soon `hermes chat --resume` on a session of 100,000
# messages reaches the model provider, against `hermes sessions export` of
# the same session; and a whole echo turn, which reads all of the history.
#
# "Reaches the provider": the exec provider's command stamps the time as
# its first instruction (the history streams to its stdin while it runs);
# the figure is that stamp minus the time just before hermes started,
# median of RUNS runs. Export goes to /dev/null (hyperfine) and to a file.
#
# Usage: scripts/bench-chat.sh            Environment: RUNS (21), MESSAGES (100000)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-21}
MESSAGES=${MESSAGES:-100000}
if ! command -v hyperfine >/dev/null; then
	apt-get install -y hyperfine >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y hyperfine >/dev/null; }
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-chat.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
scripts/build.sh "$tmp/hermes"
go run ./scripts/gendata -home "$tmp/a" -sessions 1 -messages "$MESSAGES" -bytes-per-message 200 -q
id=$(ls "$tmp/a/profiles/default/sessions" | sed -n 's/\.json$//p')
cp -r "$tmp/a" "$tmp/b"
H=$tmp/hermes

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now_us() { echo $(($(date +%s%N) / 1000)); }

reach=()
for _ in $(seq "$RUNS"); do
	t0=$(now_us)
	"$H" --home "$tmp/b" chat --resume "$id" -q hi --provider exec \
		--exec-command "echo \$((\$(date +%s%N) / 1000)) > $tmp/stamp; cat >/dev/null; echo '{\"role\":\"assistant\",\"content\":\"ok\"}'" >/dev/null
	reach+=($(($(cat "$tmp/stamp") - t0)))
done
tofile=()
for _ in $(seq "$RUNS"); do
	t0=$(now_us)
	"$H" --home "$tmp/a" sessions export "$id" >"$tmp/export.out"
	tofile+=($(($(now_us) - t0)))
done
hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$tmp/h.json" \
	"$H --home $tmp/a sessions export $id" "$H --home $tmp/b chat --resume $id -q hi" >/dev/null 2>&1
read -r export_null echo_turn < <(python3 -c "import json; r=json.load(open('$tmp/h.json'))['results']; print(*['%.1f' % (x['median'] * 1000) for x in r])")
reach_ms=$(printf '%s\n' "${reach[@]}" | median | awk '{printf "%.1f", $1 / 1000}')
tofile_ms=$(printf '%s\n' "${tofile[@]}" | median | awk '{printf "%.1f", $1 / 1000}')

cat <<EOT
## hermes chat --resume: $MESSAGES messages

$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(go version | cut -d' ' -f3), medians of $RUNS runs

| measure | median | vs export to /dev/null |
|---|---|---|
| sessions export, to /dev/null | $export_null ms | 1.00 x |
| sessions export, to a file | $tofile_ms ms | $(awk "BEGIN {printf \"%.2f\", $tofile_ms / $export_null}") x |
| chat --resume: start to the provider call | $reach_ms ms | $(awk "BEGIN {printf \"%.2f\", $reach_ms / $export_null}") x (limit 2 x) |
| chat --resume: a whole echo turn (reads every message) | $echo_turn ms | $(awk "BEGIN {printf \"%.2f\", $echo_turn / $export_null}") x |
EOT
