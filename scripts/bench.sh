#!/usr/bin/env bash
# bench.sh: hermes side by side with what its users would pick instead, in
# one run on one machine: the sqlite3 command line on a SQLite database of
# the shape the SQLite-based runtime kept (WAL, synchronous=FULL, one
# BEGIN IMMEDIATE transaction per message that inserts it and bumps the
# session's count), a JSON snapshot of the whole session rewritten
# atomically after every turn, and cat, grep and rg as floors.
#
#   1. per-turn persistence at histories of 10, 10,000 and 100,000 messages
#   2. resume load of a 100,000-message session (time and peak memory)
#   3. list the 20 most recent of 1,000 and of 100,000 sessions
#   4. search a word in 1 GB of transcripts
#   5. 8 processes × 500 appends, to one session and to 8
#   6. start-up
#   7. background tasks: history and prune over 100,000 finished tasks
#   8. what grows with the number of sessions and tasks, at 1,000 and
#      100,000: scripts/bench-scale.sh, bench-sessions.sh and bench-tasks.sh
#      (title and id lookups, stats, fsck's time and memory, filtered
#      lists, `tasks show` of an old task, an id prefix and a miss)
#
# Usage: scripts/bench.sh [--quick]
#   --quick  small data and few runs: a smoke test of the script, not a
#            measurement, and it does not write the results file
#
# Every store holds the same data: scripts/gendata and scripts/gentasks
# write the hermes profiles, and scripts/baseline turns them into the
# SQLite database and the snapshots. Whole processes are timed with
# hyperfine (medians), or, where hermes and sqlite3 are compared on the
# same operation, with scripts/interleave, which runs them in alternation;
# peak memory with GNU time. The script installs what
# is missing with apt-get (sqlite3, hyperfine, ripgrep, time), builds
# hermes, prints a Markdown table of medians and ratios against the
# targets, and writes it to scripts/bench-results.md. It takes about 35
# minutes and 3 GB of disk under $TMPDIR (default /tmp), which must be a
# real disk: on tmpfs an fsync costs nothing. It exits 1 when a check of
# the data fails (a lost append, a wrong count), not when a target is
# missed: the table says that.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
case ${1:-} in
--quick) quick=true ;;
"") ;;
*) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac

bench=bench
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. scripts/benchlib.sh
bench_install sqlite3:sqlite3 hyperfine:hyperfine rg:ripgrep /usr/bin/time:time || exit 1

# Sizes. A message is about 300 bytes of text (about 370 as a line).
bytes=300
hist=(10 10000 100000) list_small=1000 list_big=100000
search_sessions=1000 search_messages=2900 # 1,000 transcripts of 1 MB
writers=8 appends_each=500 tasks_n=100000
runs=40 runs_pair=100 runs_slow=10 runs_export=20 runs_search=10 rss_runs=3
if $quick; then
  hist=(10 1000 10000) list_big=5000
  search_sessions=100 search_messages=300
  appends_each=20 tasks_n=5000
  runs=10 runs_pair=10 runs_slow=3 runs_export=5 runs_search=3 rss_runs=1
fi

say "building hermes (scripts/build.sh, and a plain go build for start-up) and the data generators"
scripts/build.sh "$tmp/hermes"
go build -o "$tmp/hermes-plain" .
for tool in gendata gentasks baseline interleave; do go build -o "$tmp/$tool" "./scripts/$tool"; done
hermes=$tmp/hermes sqlite=$(command -v sqlite3)

# gen NAME GENDATA-ARGS...: a hermes home with sessions, checked by fsck,
# its ids in $tmp/NAME.ids, and its SQLite twin $tmp/NAME.db.
gen() {
  local name=$1
  shift
  "$tmp/gendata" -home "$tmp/$name" -bytes-per-message "$bytes" "$@" >"$tmp/$name.ids" 2>/dev/null
  check_fsck "$name"
  "$tmp/baseline" sql -home "$tmp/$name" | "$sqlite" "$tmp/$name.db" >/dev/null
  # Write the data back now, so that its writeback does not slow the
  # measurements' fsyncs.
  sync
}

check_fsck() {
  if ! "$hermes" --home "$tmp/$1" fsck >"$tmp/fsck.out" 2>&1; then
    say "hermes fsck fails on $1:"
    head -20 "$tmp/fsck.out" >&2
    exit 1
  fi
}

# sq DB SQL: the sqlite3 command line as the runtime's writers used it: a
# 10 s busy timeout (hermes's default --lock-timeout) and
# synchronous=FULL.
sqopts=(-cmd ".timeout 10000" -cmd "PRAGMA synchronous=FULL")
sq() { "$sqlite" "${sqopts[@]}" "$@"; }

# turn_sql ID TEXT: one persisted turn.
turn_sql() {
  local ts=$EPOCHREALTIME
  echo "BEGIN IMMEDIATE; INSERT INTO messages(session_id,role,content,timestamp) VALUES('$1','user','$2',$ts); UPDATE sessions SET message_count=message_count+1, updated_at=$ts WHERE id='$1'; COMMIT;"
}

# peak_rss_mb COMMAND...: the median peak resident memory of COMMAND in MB.
peak_rss_mb() {
  local i
  for ((i = 0; i < rss_runs; i++)); do
    /usr/bin/time -f %M -o "$tmp/rss" "$@" >/dev/null
    cat "$tmp/rss"
  done | median | awk '{printf "%.1f", $1/1024}'
}

count() { "$sqlite" "$1" "$2"; }
msgs() { "$hermes" --home "$tmp/$1" --json sessions show "$2" | grep -o '"message_count": *[0-9]*' | grep -o '[0-9]*$'; }

text="run the tests again and tell me what failed"

# 1 and 2: per-turn persistence; resume load of the longest history.
declare -A app_h app_s app_j start_h start_s
for n in "${hist[@]}"; do
  say "1. a session of $n messages: generating"
  gen "p$n" -sessions 1 -messages "$n"
  id=$(head -1 "$tmp/p$n.ids")
  "$tmp/baseline" snapshot -home "$tmp/p$n" -id "$id" -out "$tmp/p$n.snapshot.json"
  if [[ $n == "${hist[-1]}" ]]; then
    say "2. resume load of $n messages: hermes export, sqlite3 select, cat"
    resume_id=$id
    select_sql="SELECT role, content, tool_calls, tool_call_id, timestamp FROM messages WHERE session_id='$id' ORDER BY id"
    [[ $(count "$tmp/p$n.db" "SELECT count(*) FROM messages WHERE session_id='$id'") == "$n" ]] || { say "the database lacks messages"; exit 1; }
    transcript=$tmp/p$n/profiles/default/sessions/$id.jsonl
    transcript_mb=$(du -m "$transcript" | cut -f1)
    ex_h=$(time_median "$runs_export" 3 "$hermes" --home "$tmp/p$n" sessions export "$id")
    ex_s=$(time_median "$runs_export" 3 "$sqlite" -json "$tmp/p$n.db" "$select_sql")
    ex_c=$(time_median "$runs_export" 3 cat "$transcript")
    rss_h=$(peak_rss_mb "$hermes" --home "$tmp/p$n" sessions export "$id")
    rss_s=$(peak_rss_mb "$sqlite" -json "$tmp/p$n.db" "$select_sql")
  fi
  say "1. a session of $n messages: timing appends"
  # hermes's and sqlite3's appends, and each program's bare start-up
  # (hermes --version, sqlite3 SELECT 1 in memory), in rotation
  # (scripts/interleave), so that a drift of the disk's speed during the
  # runs favours none of them. An append less its program's start-up is
  # the store's own work.
  sql=$(turn_sql "$id" "$text")
  r=$runs
  [[ $n == "${hist[-1]}" ]] && r=$runs_slow
  read -r "app_h[$n]" "app_s[$n]" "start_h[$n]" "start_s[$n]" <<<"$("$tmp/interleave" -runs "$runs_pair" -warmup 3 -- \
    "$hermes" --home "$tmp/p$n" sessions append "$id" --role user --content "$text" ::: \
    "$sqlite" "${sqopts[@]}" "$tmp/p$n.db" "$sql" ::: \
    "$hermes" --version ::: "$sqlite" :memory: "SELECT 1")"
  [[ -n ${start_s[$n]} ]] || { say "interleave failed"; exit 1; }
  app_j[$n]=$(time_median "$r" 1 "$tmp/baseline" snapshot-append -file "$tmp/p$n.snapshot.json" -content "$text")
  # Every append landed, in each store.
  want=$((n + runs_pair + 3))
  got_h=$(msgs "p$n" "$id") got_s=$(count "$tmp/p$n.db" "SELECT message_count FROM sessions WHERE id='$id'")
  [[ $got_h == "$want" && $got_s == "$want" ]] || { say "after the appends: hermes $got_h, sqlite3 $got_s messages, want $want"; exit 1; }
  check_fsck "p$n"
  rm -rf "$tmp/p$n.snapshot.json"
done
small=${hist[0]} big=${hist[-1]}
hist_ratio=$(ratio "${app_h[$big]}" "${app_h[$small]}")

say "3. list: generating $list_small and $list_big sessions"
gen l_small -sessions "$list_small" -messages 2 -q
gen l_big -sessions "$list_big" -messages 2 -q
list_sql="SELECT id, title, source, state, message_count, created_at, updated_at FROM sessions ORDER BY updated_at DESC LIMIT 20"
for size in small big; do
  # Both list the same 20 sessions, newest first.
  a=$("$hermes" --home "$tmp/l_$size" --json sessions list --limit 20 | grep -o '"id": *"[^"]*"' | cut -d'"' -f4)
  b=$("$sqlite" "$tmp/l_$size.db" "SELECT id FROM ($list_sql)")
  [[ $a == "$b" && $(wc -l <<<"$a") == 20 ]] || { say "hermes and sqlite3 list different sessions over $size"; exit 1; }
done
say "3. list: timing"
list_h_small=$(time_median "$runs" 3 "$hermes" --home "$tmp/l_small" sessions list --limit 20 --json)
list_s_small=$(time_median "$runs" 3 "$sqlite" -json "$tmp/l_small.db" "$list_sql")
list_h_big=$(time_median "$runs" 3 "$hermes" --home "$tmp/l_big" sessions list --limit 20 --json)
list_s_big=$(time_median "$runs" 3 "$sqlite" -json "$tmp/l_big.db" "$list_sql")
rm -rf "$tmp"/l_*

say "4. search: generating $search_sessions transcripts of $search_messages messages"
"$tmp/gendata" -home "$tmp/s" -sessions "$search_sessions" -messages "$search_messages" -bytes-per-message "$bytes" >"$tmp/s.ids" 2>/dev/null
sessions_dir=$tmp/s/profiles/default/sessions
# The word, in 5 sessions spread over the profile: a rare word is what a
# search is for, and it makes every tool read every byte.
word=quokka
planted=()
for k in 0 1 2 3 4; do
  planted+=("$(sed -n "$((1 + k * (search_sessions - 1) / 4))p" "$tmp/s.ids")")
done
for id in "${planted[@]}"; do
  "$hermes" --home "$tmp/s" sessions append "$id" --role user --content "the $word in the logs" >/dev/null
done
check_fsck s
sync
search_mb=$(du -cm "$sessions_dir"/*.jsonl | tail -1 | cut -f1)
hits=$("$hermes" --home "$tmp/s" --json sessions search "$word" | wc -l)
files_g=$(grep -rlF "$word" "$sessions_dir" | wc -l)
files_r=$(rg -l "$word" "$sessions_dir" | wc -l)
[[ $hits == 5 && $files_g == 5 && $files_r == 5 ]] || { say "search found $hits, grep $files_g, rg $files_r, want 5"; exit 1; }
say "4. search: timing over $search_mb MB"
se_h=$(time_median "$runs_search" 1 "$hermes" --home "$tmp/s" sessions search "$word")
se_g=$(time_median "$runs_search" 1 grep -rlF "$word" "$sessions_dir")
se_gi=$(time_median "$runs_search" 1 grep -rliF "$word" "$sessions_dir")
se_r=$(time_median "$runs_search" 1 rg -l "$word" "$sessions_dir")
rm -rf "$tmp/s"

# 5. writers processes, each appending appends_each messages, process p to
# the p-th of the ids (cycling). It prints appends/second; the failures
# go to $tmp/failures.
say "5. concurrency: generating"
gen c_one -sessions 1 -messages 10
gen c_eight -sessions 8 -messages 10
writers_run() {
  local kind=$1 name=$2 t0 t1 p
  mapfile -t ids <"$tmp/$name.ids"
  : >"$tmp/failures"
  t0=$(date +%s%N)
  for ((p = 0; p < writers; p++)); do
    (
      id=${ids[p % ${#ids[@]}]}
      for ((i = 0; i < appends_each; i++)); do
        if [[ $kind == hermes ]]; then
          "$hermes" --home "$tmp/$name" sessions append "$id" --role user --content "writer-$p-message-$i" >/dev/null 2>>"$tmp/failures.$p" || echo "exit $?" >>"$tmp/failures.$p"
        else
          sq "$tmp/$name.db" "$(turn_sql "$id" "writer-$p-message-$i")" >/dev/null 2>>"$tmp/failures.$p" || echo "exit $?" >>"$tmp/failures.$p"
        fi
      done
    ) &
  done
  wait
  t1=$(date +%s%N)
  cat "$tmp"/failures.* >"$tmp/failures" 2>/dev/null || true
  rm -f "$tmp"/failures.*
  awk -v n=$((writers * appends_each)) -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f\n", n/((b-a)/1e9)}'
}
declare -A tp fail
for name in c_one c_eight; do
  for kind in hermes sqlite3; do
    say "5. concurrency: $writers $kind writers × $appends_each appends, $name"
    tp[$kind.$name]=$(writers_run "$kind" "$name")
    fail[$kind.$name]=$(grep -c '^exit' "$tmp/failures" || true)
    fail[locked.$kind.$name]=$(grep -c 'database is locked' "$tmp/failures" || true)
  done
done
# What landed: every append, with each session's seq contiguous.
want=$((10 + writers * appends_each))
check_fsck c_one
got_h=$(msgs c_one "$(head -1 "$tmp/c_one.ids")")
seqs=$("$hermes" --home "$tmp/c_one" sessions export "$(head -1 "$tmp/c_one.ids")" --format jsonl | grep -o '"seq":[0-9]*' | cut -d: -f2 | awk '$1 != NR {bad++} END {print bad+0 " out of place of " NR}')
got_s=$(count "$tmp/c_one.db" "SELECT count(*) FROM messages")
got_s_count=$(count "$tmp/c_one.db" "SELECT message_count FROM sessions")
check_fsck c_eight
got_h8=0
while read -r id; do got_h8=$((got_h8 + $(msgs c_eight "$id"))); done <"$tmp/c_eight.ids"
got_s8=$(count "$tmp/c_eight.db" "SELECT count(*) FROM messages")
rm -rf "$tmp"/c_*

say "6. start-up"
mkdir -p "$tmp/empty"
up_version=$(time_median "$runs" 5 "$hermes" --version)
up_plain=$(time_median "$runs" 5 "$tmp/hermes-plain" --version)
up_list=$(time_median "$runs" 5 "$hermes" --home "$tmp/empty" sessions list)
up_sqlite=$(time_median "$runs" 5 "$sqlite" :memory: "SELECT 1")

say "7. tasks: generating $tasks_n finished tasks"
"$tmp/gentasks" -home "$tmp/t" -tasks "$tasks_n" 2>/dev/null
check_fsck t
"$tmp/baseline" sql -home "$tmp/t" | "$sqlite" "$tmp/t.db" >/dev/null
# The database's logs are files too, as they would be beside it: links to
# the same empty files, in a directory of their own.
tasks_dir=$tmp/t/profiles/default/tasks
mkdir "$tmp/t.logs"
(cd "$tasks_dir" && find . -name '*.log' -print0 | xargs -0 cp -l -t "$tmp/t.logs")
sync
history_sql="SELECT id, name, status, exit_code, started_at, finished_at FROM tasks ORDER BY finished_at DESC LIMIT 20"
say "7. tasks: timing history"
th_h=$(time_median "$runs" 3 "$hermes" --home "$tmp/t" tasks history --limit 20 --json)
th_s=$(time_median "$runs" 3 "$sqlite" -json "$tmp/t.db" "$history_sql")
say "7. tasks: pruning (one run each)"
t0=$(date +%s%N)
"$hermes" --home "$tmp/t" tasks prune --older-than 1d --yes >/dev/null
t1=$(date +%s%N)
cutoff=$(awk -v t="$EPOCHREALTIME" 'BEGIN {printf "%.6f", t - 86400}')
(cd "$tmp/t.logs" && sq "$tmp/t.db" "DELETE FROM tasks WHERE finished_at < $cutoff RETURNING log_path" | xargs rm -f)
t2=$(date +%s%N)
tp_h=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print (b-a)/1e9}')
tp_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN {print (b-a)/1e9}')
left_h=$(find "$tasks_dir" -name '*.json' | wc -l) left_s=$(count "$tmp/t.db" "SELECT count(*) FROM tasks")
left_logs=$(find "$tmp/t.logs" -type f | wc -l)
[[ $left_h == 0 && $left_s == 0 && $left_logs == 0 ]] || { say "after the prunes: $left_h records, $left_s rows, $left_logs logs left"; exit 1; }

x() { echo "$(ratio "$1" "$2")x"; }
# fs_of DIR: DIR's file system type; for ext4, with or without a journal
# (a journaled ext4 device has an entry <device>-8 under /proc/fs/jbd2).
fs_of() {
  local type src
  read -r type src < <(df --output=fstype,source "$1" | sed -n 2p)
  if [[ $type == ext4 ]]; then
    src=$(readlink -f "$src")
    if compgen -G "/proc/fs/jbd2/${src##*/}-*" >/dev/null; then type="ext4 with a journal"; else type="ext4 without a journal"; fi
  fi
  echo "$type"
}
# own SIDE N: an append's own work, the append less its program's start-up.
own() {
  local -n app=app_$1 start=start_$1
  awk -v a="${app[$2]}" -v b="${start[$2]}" 'BEGIN {print a-b}'
}
# each F: F applied to each history, joined with " / ".
each() {
  local n out=()
  for n in "${hist[@]}"; do out+=("$("$@" "$n")"); done
  local IFS=/
  echo "${out[*]}" | sed 's|/| / |g'
}
own_ms() { ms "$(own "$1" "$2")" | sed 's/ ms//'; }
own_x() { ratio "$(own h "$1")" "$(own s "$1")"; }
start_ms() { local -n start=start_$1; ms "${start[$2]}" | sed 's/ ms//'; }
s() { awk -v v="$1" 'BEGIN {printf "%.2f s", v}'; }
report() {
  cat <<EOF
## hermes beside SQLite, snapshots, cat and grep

$(date -u +%Y-%m-%d), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) memory, Linux $(uname -r), $(fs_of "$tmp") under \$TMPDIR; $(go version | cut -d' ' -f3), sqlite3 $("$sqlite" --version | cut -d' ' -f1), $(grep --version | sed -n 1p), $(rg --version | sed -n 1p), $(timer).$($quick && echo " QUICK MODE: not a measurement.")

Medians of whole processes. Messages carry about $bytes bytes of text.

| measure | hermes | sqlite3 | other | ratio | target | result |
|---|---|---|---|---|---|---|
| 1. append, history ${hist[0]} | $(ms "${app_h[${hist[0]}]}") | $(ms "${app_s[${hist[0]}]}") | snapshot $(ms "${app_j[${hist[0]}]}") | $(x "${app_h[${hist[0]}]}" "${app_s[${hist[0]}]}") sqlite3 | ≤ 1.0x | $(verdict "$(ratio "${app_h[${hist[0]}]}" "${app_s[${hist[0]}]}")" 1.0) |
| 1. append, history ${hist[1]} | $(ms "${app_h[${hist[1]}]}") | $(ms "${app_s[${hist[1]}]}") | snapshot $(ms "${app_j[${hist[1]}]}") | $(x "${app_h[${hist[1]}]}" "${app_s[${hist[1]}]}") sqlite3 | ≤ 1.0x | $(verdict "$(ratio "${app_h[${hist[1]}]}" "${app_s[${hist[1]}]}")" 1.0) |
| 1. append, history ${hist[2]} | $(ms "${app_h[${hist[2]}]}") | $(ms "${app_s[${hist[2]}]}") | snapshot $(ms "${app_j[${hist[2]}]}") | $(x "${app_h[${hist[2]}]}" "${app_s[${hist[2]}]}") sqlite3 | ≤ 1.0x | $(verdict "$(ratio "${app_h[${hist[2]}]}" "${app_s[${hist[2]}]}")" 1.0) |
| 1. append at $big vs at $small | | | | ${hist_ratio}x | ≤ 1.2x | $(verdict "$hist_ratio" 1.2) |
| 1. start-up beside the appends (\`--version\`, \`SELECT 1\`), history $(each echo) | $(each start_ms h) ms | $(each start_ms s) ms | | | | |
| 1. append less start-up: the store's own work, history $(each echo) | $(each own_ms h) ms | $(each own_ms s) ms | | $(each own_x)x sqlite3 | | |
| 2. resume load of $big messages ($transcript_mb MB) | $(ms "$ex_h") | $(ms "$ex_s") | cat $(ms "$ex_c") | $(x "$ex_h" "$ex_s") sqlite3 | ≤ 1.0x | $(verdict "$(ratio "$ex_h" "$ex_s")" 1.0) |
| 2. resume load vs cat | | | | $(x "$ex_h" "$ex_c") cat | ≤ 3x | $(verdict "$(ratio "$ex_h" "$ex_c")" 3) |
| 2. resume load, peak RSS | $rss_h MB | $rss_s MB | | | ≤ 64 MB | $(verdict "$rss_h" 64) |
| 3. list 20 of $list_small sessions | $(ms "$list_h_small") | $(ms "$list_s_small") | | $(x "$list_h_small" "$list_s_small") sqlite3 | | |
| 3. list 20 of $list_big sessions | $(ms "$list_h_big") | $(ms "$list_s_big") | | $(x "$list_h_big" "$list_s_big") sqlite3 | ≤ 2x | $(verdict "$(ratio "$list_h_big" "$list_s_big")" 2) |
| 3. list at $list_big vs at $list_small | | | | $(x "$list_h_big" "$list_h_small") | ≤ 3x | $(verdict "$(ratio "$list_h_big" "$list_h_small")" 3) |
| 4. search a word in $search_mb MB | $(ms "$se_h") | | grep -rlF $(ms "$se_g"); grep -rliF $(ms "$se_gi"); rg -l $(ms "$se_r") | $(x "$se_h" "$se_g") grep -rlF | ≤ 1.5x | $(verdict "$(ratio "$se_h" "$se_g")" 1.5) |
| 5. $writers writers × $appends_each appends, one session | ${tp[hermes.c_one]}/s, ${fail[hermes.c_one]} failed | ${tp[sqlite3.c_one]}/s, ${fail[sqlite3.c_one]} failed (${fail[locked.sqlite3.c_one]} locked) | | $(x "${tp[hermes.c_one]}" "${tp[sqlite3.c_one]}") sqlite3's rate | nothing lost, seq contiguous | hermes $got_h of $want, seq $seqs; sqlite3 $got_s rows, count $got_s_count |
| 5. $writers writers × $appends_each appends, 8 sessions | ${tp[hermes.c_eight]}/s, ${fail[hermes.c_eight]} failed | ${tp[sqlite3.c_eight]}/s, ${fail[sqlite3.c_eight]} failed (${fail[locked.sqlite3.c_eight]} locked) | | $(x "${tp[hermes.c_eight]}" "${tp[sqlite3.c_eight]}") sqlite3's rate | nothing lost | hermes $got_h8, sqlite3 $got_s8 of $((8 * 10 + writers * appends_each)) |
| 6. \`hermes --version\` | $(ms "$up_version") | \`sqlite3 :memory: 'SELECT 1'\` $(ms "$up_sqlite") | | | ≤ 5 ms | $(verdict "$(awk -v s="$up_version" 'BEGIN {print s*1000}')" 5) |
| 6. \`hermes --version\`, a plain \`go build\` (cgo, doc renderers) | $(ms "$up_plain") | | | | | |
| 6. \`hermes sessions list\`, empty profile | $(ms "$up_list") | | | | | |
| 7. tasks history, last 20 of $tasks_n | $(ms "$th_h") | $(ms "$th_s") | | $(x "$th_h" "$th_s") sqlite3 | | |
| 7. tasks prune of $tasks_n (one run) | $(s "$tp_h") | $(s "$tp_s") (DELETE … RETURNING, then rm of the logs) | | $(x "$tp_h" "$tp_s") sqlite3 | | |

How each side runs:
- **hermes**: the release build of scripts/build.sh; \`hermes sessions append ID --role user --content TEXT\`, \`sessions export ID\`, \`sessions list --limit 20 --json\`, \`sessions search WORD\` (case-insensitive, at most 50 hits), \`tasks history --limit 20 --json\`, \`tasks prune --older-than 1d --yes\`.
- **sqlite3**: \`sqlite3 -cmd '.timeout 10000' -cmd 'PRAGMA synchronous=FULL' DB 'BEGIN IMMEDIATE; INSERT INTO messages …; UPDATE sessions SET message_count=message_count+1, updated_at=… WHERE id=…; COMMIT;'\` on a WAL database (schema in scripts/baseline); reads are \`sqlite3 -json DB 'SELECT …'\` over an index (messages by session and id, sessions by updated_at, tasks by finished_at).
- **snapshot**: \`scripts/baseline snapshot-append\`, in Go: read the session's one JSON document, add the message, write it all to a temporary file, fsync, rename, fsync the directory.
- Appends: medians of $runs_pair runs each; hermes's append, sqlite3's, \`hermes --version\` and \`sqlite3 :memory: 'SELECT 1'\` run in rotation (scripts/interleave), so that the four see the same disk; snapshot $runs runs ($runs_slow at $big). Each run adds a message, so the histories grow by $((runs_pair + 3)).
- Concurrency: $writers shell loops at once, each starting $appends_each processes; the rate is appends over the wall time of all of them.
EOF
}
report
$quick || report >scripts/bench-results.md
# The rows that grow with the number of sessions and tasks (titles, stats,
# id prefixes, fsck; filtered lists; old finished tasks and id prefixes).
for more in bench-scale bench-sessions bench-tasks; do
  if $quick; then "scripts/$more.sh" --quick; else "scripts/$more.sh" | tee -a scripts/bench-results.md; fi
done
