#!/usr/bin/env bash
# bench-checkpoint.sh: whole-process runs of `hermes chat` whose scripted
# model makes EDITS edit_file calls, one after the other, on a 1 MB file
# (each a new change, every one checkpointed), in a fresh profile: the
# build of this tree against the build of BASE (a git revision), the two
# alternating, ROUNDS runs of each. It prints the median wall time of a
# run and, where strace is installed, the fsyncs and renames of one run of
# each. BenchmarkEditFile1MB in cmd/agent measures one edit alone.
#
# Usage: BASE=REV scripts/bench-checkpoint.sh    Environment: ROUNDS (9), EDITS (20)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-9}
EDITS=${EDITS:-20}
: "${BASE:?BASE must name the git revision to compare with}"
bench=bench-checkpoint tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-checkpoint.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh

bench_build
mkdir "$tmp/base"
git archive "$BASE" | tar -x -C "$tmp/base"
say "building $BASE"
(cd "$tmp/base" && scripts/build.sh "$tmp/hermes-base")

cat >"$tmp/model.sh" <<'MODEL'
# The scripted model: edit_file turning "counter N" into "counter N+1"
# until EDITS results are in, then "done".
n=$(grep -c '"role":"tool"' || true)
if [ "$n" -ge "$EDITS" ]; then
  echo '{"role":"assistant","content":"done"}'
else
  printf '{"role":"assistant","content":null,"tool_calls":[{"id":"call_%s","type":"function","function":{"name":"edit_file","arguments":"{\\"path\\":\\"big.go\\",\\"old_string\\":\\"counter %s\\\\n\\",\\"new_string\\":\\"counter %s\\\\n\\"}"}}]}\n' "$n" "$n" "$((n + 1))"
fi
MODEL
awk 'BEGIN {
  line = "counter 0\n"; n = length(line); printf "%s", line
  for (i = 0; n < 1048576; i++) {
    line = sprintf("\tif v%06d := compute(%07d); v%06d > limit { return err }\n", i, i * 7, i)
    n += length(line); printf "%s", line
  }
}' >"$tmp/big.go"

# run BIN [WRAP...]: one run in a fresh profile; prints its milliseconds.
run() {
  local bin=$1 d
  shift
  d=$(mktemp -d "$tmp/run.XXXXXX")
  mkdir "$d/proj"
  cp "$tmp/big.go" "$d/proj/big.go"
  local start end
  start=$(date +%s%N)
  (cd "$d/proj" && HERMES_HOME=$d/home HERMES_PROVIDER=exec EDITS=$EDITS \
    HERMES_EXEC_COMMAND="sh $tmp/model.sh" "$@" "$bin" chat --yes -q edit >/dev/null 2>"$d/err") || { cat "$d/err" >&2; exit 1; }
  end=$(date +%s%N)
  grep -q "^counter $EDITS\$" "$d/proj/big.go" || { say "$bin: the edits were not all made"; exit 1; }
  rm -rf "$d"
  echo $(((end - start) / 1000000))
}

say "$ROUNDS rounds of $EDITS edits of a 1 MB file, this tree and $BASE alternating (load: $(uptime | sed 's/.*load average: //'))"
for _ in $(seq "$ROUNDS"); do
  echo "this $(run "$hermes")" >>"$tmp/times"
  echo "base $(run "$tmp/hermes-base")" >>"$tmp/times"
done
say "load after: $(uptime | sed 's/.*load average: //')"
echo "| build | median ms a run of $EDITS edits ($ROUNDS runs) | fsyncs a run | renames a run |"
echo "|---|---|---|---|"
for b in this base; do
  bin=$hermes
  [[ $b == base ]] && bin=$tmp/hermes-base
  syncs=- renames=-
  if command -v strace >/dev/null 2>&1; then
    run "$bin" strace -f -c -o "$tmp/strace" -e trace=fsync,fdatasync,rename,renameat,renameat2 >/dev/null
    syncs=$(awk '$NF ~ /^f(data)?sync$/ {n += $4} END {print n + 0}' "$tmp/strace")
    renames=$(awk '$NF ~ /^rename/ {n += $4} END {print n + 0}' "$tmp/strace")
  fi
  echo "| $b | $(awk -v b=$b '$1 == b {print $2}' "$tmp/times" | median) | $syncs | $renames |"
done
