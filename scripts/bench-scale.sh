#!/usr/bin/env bash
# bench-scale.sh: what grows with the number of sessions, at 1,000 and
# at 100,000 titled sessions, against sqlite3 on the same data:
#
#   (a) every title verb (`sessions show TITLE`, `rename ID TITLE`,
#       `new --title T`) at 100,000 sessions costs at most 1.2x its time
#       at 1,000, and at most 2x sqlite3's lookup over an index on title
#   (b) `sessions stats` at 100,000 sessions costs at most 2x sqlite3's
#       GROUP BY of the same counts
#
# Usage: scripts/bench-scale.sh [--quick]
#   --quick  5,000 sessions instead of 100,000, and few runs: a smoke test
#
# The sessions are written by scripts/gendata -titled (titles "session N",
# two messages each, and the title index), and scripts/baseline turns the
# profile into the SQLite database, to which this script adds the index on
# title that a title lookup needs. Whole processes, medians of hyperfine
# runs. scripts/bench.sh runs it after its own rows; alone it takes about
# 3 minutes, most of it writing 100,000 sessions.
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
bench_install sqlite3:sqlite3 hyperfine:hyperfine || exit 1

say "building hermes (scripts/build.sh), gendata and baseline"
scripts/build.sh "$tmp/hermes"
for tool in gendata baseline; do go build -o "$tmp/$tool" "./scripts/$tool"; done
hermes=$tmp/hermes sqlite=$(command -v sqlite3)

declare -A show_h rename_h new_h stats_h show_s rename_s new_s stats_s
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
  stats_h[$n]=$(time_median "$runs" 3 "$hermes" --home "$home" --json sessions stats)
  stats_s[$n]=$(time_median "$runs" 3 "$sqlite" -json "$db" "$stats_sql")
  rm -rf "$home" "$db"
done

x() { echo "$(ratio "$1" "$2")x"; }
row() { # NAME HERMES-ARRAY [SQLITE-ARRAY]
  local -n h=$2
  local flat sq=""
  flat=$(ratio "${h[$big]}" "${h[$small]}")
  if [[ -n ${3:-} ]]; then
    local -n s=$3
    sq="$(ms "${s[$small]}") / $(ms "${s[$big]}")"
    echo "| $1 | $(ms "${h[$small]}") | $(ms "${h[$big]}") | ${flat}x $(verdict "$flat" 1.2) | $sq | $(x "${h[$big]}" "${s[$big]}") $(verdict "$(ratio "${h[$big]}" "${s[$big]}")" 2) |"
  else
    echo "| $1 | $(ms "${h[$small]}") | $(ms "${h[$big]}") | ${flat}x $(verdict "$flat" 1.2) | | |"
  fi
}
cat <<END
### Sessions at scale: $small and $big titled sessions ($(timer), medians of $runs runs)

| command | hermes at $small | at $big | $big vs $small (≤ 1.2x) | sqlite3 at $small / $big | hermes vs sqlite3 at $big (≤ 2x) |
|---|---|---|---|---|---|
$(row '`sessions show TITLE`' show_h show_s)
$(row '`sessions rename ID TITLE`' rename_h rename_s)
$(row '`sessions new --title T`' new_h new_s)
$(row '`sessions stats`' stats_h stats_s)

sqlite3, on the database scripts/baseline makes of the same sessions, with a unique index on title:
\`SELECT * FROM sessions WHERE title='…'\` (show), \`UPDATE sessions SET title=… WHERE id=…\` (rename),
\`INSERT OR REPLACE INTO sessions … ('fresh', 'a fresh title', …)\` (new), both with synchronous=FULL, and
\`$stats_sql\` (stats).
END
