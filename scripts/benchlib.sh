# benchlib.sh: what the whole-process benchmark scripts share. Source it
# after setting bench (the script's name, for messages) and tmp (a scratch
# directory the script removes):
#
#   bench=bench-x tmp=$(mktemp -d) && . scripts/benchlib.sh
#
# time_median times with hyperfine, or with a date loop when hyperfine is
# missing or BENCH_NO_HYPERFINE is set.

say() { echo "$bench: $*" >&2; }

# bench_install CMD:PACKAGE...: install with apt-get the Debian packages
# whose commands are missing. It returns 1 when one could not be had.
bench_install() {
  local want pkgs=()
  for want in "$@"; do
    command -v "${want%%:*}" >/dev/null 2>&1 || pkgs+=("${want#*:}")
  done
  ((${#pkgs[@]})) || return 0
  say "installing ${pkgs[*]}"
  local sudo=sudo
  [[ $(id -u) == 0 ]] && sudo=
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${pkgs[@]}"; } >/dev/null 2>&1 && return 0
  say "could not install ${pkgs[*]}"
  return 1
}

# bench_build TOOL...: the release build of hermes (scripts/build.sh) as
# $hermes, and each named scripts/ tool, into $tmp.
bench_build() {
  say "building hermes (scripts/build.sh)${1:+ and $*}"
  scripts/build.sh "$tmp/hermes"
  local tool
  for tool in "$@"; do go build -o "$tmp/$tool" "./scripts/$tool"; done
  hermes=$tmp/hermes
}

use_hyperfine() { command -v hyperfine >/dev/null 2>&1 && [[ -z ${BENCH_NO_HYPERFINE:-} ]]; }

# median: the median of the numbers on stdin.
median() {
  sort -g | awk '{v[NR]=$1} END {if (NR==0) exit 1; if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}

# mean: the mean of the numbers on stdin.
mean() { awk '{s+=$1} END {if (NR==0) exit 1; print s/NR}'; }

# time_median RUNS WARMUP COMMAND...: the median wall time of COMMAND in
# seconds, over RUNS runs after WARMUP unmeasured ones; its output is
# discarded.
time_median() {
  local runs=$1 warmup=$2
  shift 2
  time_median_prepared "$runs" "$warmup" "" "$@"
}

# time_median_prepared RUNS WARMUP PREPARE COMMAND...: time_median, running
# the command PREPARE (a path, or "" for none) untimed before each run.
time_median_prepared() {
  local runs=$1 warmup=$2 prepare=$3
  shift 3
  if use_hyperfine; then
    local json=$tmp/hyperfine.json args=()
    [[ -n $prepare ]] && args=(--prepare "$prepare")
    if ! hyperfine -N --style none --warmup "$warmup" --runs "$runs" "${args[@]}" --export-json "$json" "$(printf '%q ' "$@")" >"$tmp/hyperfine.out" 2>&1; then
      say "hyperfine failed on: $*"
      tail -5 "$tmp/hyperfine.out" >&2
      return 1
    fi
    grep -o '"median": *[0-9.eE+-]*' "$json" | head -1 | sed 's/.*: *//'
  else
    local i t0 t1
    for ((i = 0; i < warmup; i++)); do
      [[ -n $prepare ]] && $prepare
      "$@" >/dev/null
    done
    for ((i = 0; i < runs; i++)); do
      [[ -n $prepare ]] && $prepare
      t0=$(date +%s%N)
      "$@" >/dev/null
      t1=$(date +%s%N)
      awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.9f\n", (b-a)/1e9}'
    done | median
  fi
}

# timer: what time_median times with, for the reports.
timer() { if use_hyperfine; then echo "hyperfine $(hyperfine --version | cut -d' ' -f2)"; else echo "date loop"; fi; }

ms() { awk -v s="$1" 'BEGIN {printf "%.2f ms", s*1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a <= b)}'; }
verdict() { if le "$1" "$2"; then echo met; else echo MISSED; fi; }
