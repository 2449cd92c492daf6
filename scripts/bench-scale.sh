#!/usr/bin/env bash
# bench-scale.sh: what grows with the number of sessions, at 1,000 and
# at 100,000 titled sessions, against sqlite3 on the same data:
#
#   (a) every title verb (`sessions show TITLE`, `rename ID TITLE`,
#       `new --title T`) at 100,000 sessions costs at most 1.2x its time
#       at 1,000, and at most 2x sqlite3's lookup over an index on title
#   (b) `sessions stats` at 100,000 sessions costs at most 2x sqlite3's
#       GROUP BY of the same counts
#   (b2) `sessions show PREFIX` (a unique id prefix) and `sessions show`
#       of a name that matches nothing at 100,000 sessions cost at most
#       1.2x their time at 1,000 (the id index)
#   (c) on 10,000 and 100,000 sessions of mixed sizes (about 1 GB at
#       100,000): `sessions search` against `grep -rlF` (≤ 1.5x) and
#       `rg -l` on the same files, and `fsck` (≤ 10 s at 100,000), with the
#       sessions it checks per second and its peak resident memory (≤ 64 MB
#       at 100,000; median of 3, GNU time's %M)
#
# Usage: scripts/bench-scale.sh [--quick]
#   --quick  5,000 sessions instead of 100,000, and few runs: a smoke test
#
# The sessions are written by scripts/gendata -titled (titles "session N",
# two messages each, and the title index), and scripts/baseline turns the
# profile into the SQLite database, to which this script adds the index on
# title that a title lookup needs. Whole processes, medians of hyperfine
# runs. The mixed sizes come from scripts/gendata -mixed (one transcript
# in ten empty, most small, one in twenty ten times the mean), with one
# word planted in one message. scripts/bench.sh runs it after its own
# rows; alone it takes about 8 minutes, most of it writing sessions.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
[[ ${1:-} == --quick ]] && quick=true
small=1000 big=100000 runs=40
if $quick; then
  big=5000 runs=10
fi

bench=bench-scale
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-scale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh
bench_install sqlite3:sqlite3 hyperfine:hyperfine rg:ripgrep /usr/bin/time:time || exit 1

bench_build gendata baseline
sqlite=$(command -v sqlite3)

declare -A show_h rename_h new_h stats_h show_s rename_s new_s stats_s prefix_h miss_h
stats_sql="SELECT state, source, count(*), sum(message_count) FROM sessions GROUP BY state, source"
for n in "$small" "$big"; do
  say "$n sessions: generating"
  home=$tmp/h$n db=$tmp/h$n.db
  "$tmp/gendata" -home "$home" -sessions "$n" -messages 2 -titled -q
  if ! "$hermes" --home "$home" fsck >"$tmp/fsck.out" 2>&1; then
    say "hermes fsck fails on the generated $n sessions:"
    head -20 "$tmp/fsck.out" >&2
    exit 1
  fi
  "$tmp/baseline" sql -home "$home" | "$sqlite" "$db" >/dev/null
  "$sqlite" "$db" "CREATE UNIQUE INDEX sessions_title ON sessions(title)"
  sync
  # The same session, by title, in both.
  title="session $((n / 2))"
  a=$("$hermes" --home "$home" --json sessions show "$title" | grep -o '"id": *"[^"]*"' | head -1 | cut -d'"' -f4)
  b=$("$sqlite" "$db" "SELECT id FROM sessions WHERE title='$title'")
  [[ -n $a && $a == "$b" ]] || { say "hermes finds $a and sqlite3 $b for $title"; exit 1; }
  count=$("$hermes" --home "$home" --json sessions stats | grep -o '"sessions":[0-9]*' | cut -d: -f2)
  [[ $count == "$n" ]] || { say "hermes stats counts $count sessions, want $n"; exit 1; }

  say "$n sessions: timing"
  show_h[$n]=$(time_median "$runs" 3 "$hermes" --home "$home" sessions show "$title")
  show_s[$n]=$(time_median "$runs" 3 "$sqlite" -json "$db" "SELECT * FROM sessions WHERE title='$title'")
  # rename: the same session to the same free title each run, a full
  # check and write every time.
  rename_h[$n]=$(time_median "$runs" 3 "$hermes" --home "$home" sessions rename "$a" "renamed $n")
  rename_s[$n]=$(time_median "$runs" 3 "$sqlite" -cmd "PRAGMA synchronous=FULL" "$db" "UPDATE sessions SET title='renamed $n' WHERE id='$a'")
  # new --title: the session each run makes is removed before the next.
  printf '#!/bin/sh\n"%s" --home "%s" sessions end fresh >/dev/null 2>&1\n"%s" --home "%s" sessions delete fresh >/dev/null 2>&1\nexit 0\n' \
    "$hermes" "$home" "$hermes" "$home" >"$tmp/prepare.sh"
  chmod +x "$tmp/prepare.sh"
  new_h[$n]=$(time_median_prepared "$runs" 3 "$tmp/prepare.sh" "$hermes" --home "$home" sessions new --id fresh --title "a fresh title")
  new_s[$n]=$(time_median "$runs" 3 "$sqlite" -cmd "PRAGMA synchronous=FULL" "$db" \
    "INSERT OR REPLACE INTO sessions(id, title, source, state, created_at, updated_at) VALUES('fresh', 'a fresh title', 'cli', 'active', 0, 0)")
  # The id up to its second: unique, since gendata makes one a second.
  prefix_h[$n]=$(time_median "$runs" 3 "$hermes" --home "$home" sessions show "${a:0:15}")
  miss_h[$n]=$(time_median_prepared "$runs" 3 "" sh -c '"$0" --home "$1" sessions show no-such-session; [ $? = 3 ]' "$hermes" "$home")
  stats_h[$n]=$(time_median "$runs" 3 "$hermes" --home "$home" --json sessions stats)
  stats_s[$n]=$(time_median "$runs" 3 "$sqlite" -json "$db" "$stats_sql")
  rm -rf "$home" "$db"
done

# (c) mixed sizes: search and fsck.
declare -A search_h grep_t rg_t fsck_h fsck_mb bytes_of
# peak_rss_mb RUNS COMMAND...: the median peak resident memory of COMMAND
# in MB.
peak_rss_mb() {
  local i runs=$1
  shift
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -f %M -o "$tmp/rss" "$@" >/dev/null
    cat "$tmp/rss"
  done | median | awk '{printf "%.1f", $1/1024}'
}
mixed_small=10000 mixed_big=100000 mixed_runs=10
if $quick; then mixed_small=1000 mixed_big=5000 mixed_runs=3; fi
for n in "$mixed_small" "$mixed_big"; do
  say "$n sessions of mixed sizes: generating"
  home=$tmp/m$n dir=$tmp/m$n/profiles/default/sessions
  "$tmp/gendata" -home "$home" -sessions "$n" -messages 40 -bytes-per-message 230 -mixed -q
  # One word no generated text has, in one message of one session.
  target=$(find "$dir" -name '*.jsonl' -size +1k -print -quit)
  sed -i '1s/"content":"/"content":"zqxjv /' "$target"
  bytes_of[$n]=$(du -sb "$dir" | cut -f1)
  sync
  found=$("$hermes" --home "$home" --json sessions search zqxjv | grep -c '"session_id"')
  [[ $found == 1 ]] || { say "hermes search finds $found sessions, want 1"; exit 1; }
  [[ $(grep -rlF zqxjv "$dir" | wc -l) == 1 ]] || { say "grep does not find the planted word once"; exit 1; }
  say "$n sessions of mixed sizes: timing"
  search_h[$n]=$(time_median "$mixed_runs" 1 "$hermes" --home "$home" sessions search zqxjv)
  grep_t[$n]=$(time_median "$mixed_runs" 1 grep -rlF zqxjv "$dir")
  rg_t[$n]=$(time_median "$mixed_runs" 1 rg -l zqxjv "$dir")
  fsck_h[$n]=$(time_median 3 1 "$hermes" --home "$home" fsck)
  fsck_mb[$n]=$(peak_rss_mb 3 "$hermes" --home "$home" fsck)
  rm -rf "$home"
done

x() { echo "$(ratio "$1" "$2")x"; }
row() { # NAME HERMES-ARRAY [SQLITE-ARRAY [FLAT-TARGET]]
  local -n h=$2
  local flat sq=""
  flat="$(ratio "${h[$big]}" "${h[$small]}")x"
  if [[ ${4:-1.2} == none ]]; then flat="$flat (no target)"; else flat="$flat $(verdict "${flat%x}" "${4:-1.2}")"; fi
  if [[ -n ${3:-} ]]; then
    local -n s=$3
    sq="$(ms "${s[$small]}") / $(ms "${s[$big]}")"
    echo "| $1 | $(ms "${h[$small]}") | $(ms "${h[$big]}") | $flat | $sq | $(x "${h[$big]}" "${s[$big]}") $(verdict "$(ratio "${h[$big]}" "${s[$big]}")" 2) |"
  else
    echo "| $1 | $(ms "${h[$small]}") | $(ms "${h[$big]}") | $flat | | |"
  fi
}
cat <<END
### Sessions at scale: $small and $big titled sessions ($(timer), medians of $runs runs)

| command | hermes at $small | at $big | $big vs $small (titles: ≤ 1.2x) | sqlite3 at $small / $big | hermes vs sqlite3 at $big (≤ 2x) |
|---|---|---|---|---|---|
$(row '`sessions show TITLE`' show_h show_s)
$(row '`sessions rename ID TITLE`' rename_h rename_s)
$(row '`sessions new --title T`' new_h new_s)
$(row '`sessions stats`' stats_h stats_s none)
$(row '`sessions show PREFIX` (id prefix)' prefix_h)
$(row '`sessions show` of a name matching nothing' miss_h)


### Sessions at scale: $mixed_small and $mixed_big sessions of mixed sizes ($(timer), medians of $mixed_runs runs; fsck of 3)

| command | at $mixed_small ($(awk -v b="${bytes_of[$mixed_small]}" 'BEGIN {printf "%.0f MB", b/1e6}')) | at $mixed_big ($(awk -v b="${bytes_of[$mixed_big]}" 'BEGIN {printf "%.0f MB", b/1e6}')) | target | |
|---|---|---|---|---|
| \`sessions search WORD\` | $(ms "${search_h[$mixed_small]}") | $(ms "${search_h[$mixed_big]}") | ≤ 1.5x grep | $(x "${search_h[$mixed_big]}" "${grep_t[$mixed_big]}") $(verdict "$(ratio "${search_h[$mixed_big]}" "${grep_t[$mixed_big]}")" 1.5) |
| \`grep -rlF WORD\` | $(ms "${grep_t[$mixed_small]}") | $(ms "${grep_t[$mixed_big]}") | | |
| \`rg -l WORD\` | $(ms "${rg_t[$mixed_small]}") | $(ms "${rg_t[$mixed_big]}") | | |
| \`fsck\` | $(ms "${fsck_h[$mixed_small]}"), ${fsck_mb[$mixed_small]} MB RSS | $(ms "${fsck_h[$mixed_big]}"), $(awk -v n="$mixed_big" -v t="${fsck_h[$mixed_big]}" 'BEGIN {printf "%.0f", n/t}') sessions/s, ${fsck_mb[$mixed_big]} MB RSS | ≤ 10 s, ≤ 64 MB | $(verdict "${fsck_h[$mixed_big]}" 10), $(verdict "${fsck_mb[$mixed_big]}" 64) |

sqlite3, on the database scripts/baseline makes of the same sessions, with a unique index on title:
\`SELECT * FROM sessions WHERE title='…'\` (show), \`UPDATE sessions SET title=… WHERE id=…\` (rename),
\`INSERT OR REPLACE INTO sessions … ('fresh', 'a fresh title', …)\` (new), both with synchronous=FULL, and
\`$stats_sql\` (stats).
END
