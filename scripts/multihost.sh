#!/usr/bin/env bash
# multihost.sh: one hermes profile shared by two hosts on a GlusterFS volume.
#
# It installs GlusterFS from Debian when missing (glusterfs-server,
# glusterfs-client; jq), starts glusterd by hand when none runs, makes a
# single-brick volume with the options README's "Running on several
# machines" documents, mounts it twice with the FUSE client, and runs each
# mount's side in a PID namespace of its own (unshare --pid --fork
# --mount-proc): two hosts whose pids mean nothing to each other. Then:
#
#   appends  3 writers a host × 200 appends to one session: every
#            acknowledged append stored once, seq 1..N; the same on local
#            disk, for the cost
#   docs     100 rounds of a rename on one host and an append on the other
#            at once: each reads the other's change, none is lost
#   board    60 tasks whose worker takes 2 s, a dispatcher on each host
#            until all are done: one claim and one run each, none lost or
#            crashed
#   cron     a cron daemon on each host for 16 s, three every 2s jobs:
#            every occurrence claimed, started and finished once, none
#            missing, none lost
#   kill     the appends again while each host SIGKILLs a random hermes of
#            its own every 20-100 ms; every acknowledged append stored once
#   clientkill  the appends, keyed (sessions append --key), while host
#            b's FUSE client is killed with kill -9, 5 rounds, b mounted
#            again after each and its failed appends run again with their
#            keys: every acknowledged append stored once, seq contiguous,
#            the failed ones that were stored counted; fsck from each host
#   skew     host b's clock 5 minutes ahead (HERMES_TEST_CLOCK_AHEAD, a
#            test-only time source): 8 tasks that fail a first 2 s run and
#            are retried after 4 s, a dispatcher on each host: none with
#            two live workers or retried early; a cron daemon on each host
#            for 10 s, three every 2s jobs: no occurrence run early or
#            twice; profile show and fsck from each host report b's skew
#   cut      host b's FUSE client, in a network namespace of its own and
#            reaching the brick over a veth pair, cut off from it with
#            nftables (drop) for 20 s under keyed appends from both hosts
#            (b's 50 messages an append): every acknowledged append stored
#            once; b's commands exit within --fs-timeout 10s (and 3 s
#            more) naming the path; a's appends that wait for the lock b
#            held give up within --lock-timeout naming b's host and pid;
#            fsck from each host (not in the default list: nftables, iproute2, 45 s)
#   paused   host b's append of 30000 messages stopped (SIGSTOP) once it
#            holds the session's lock and has written a line, b cut off
#            for 45 s (past the bricks' keepalive, 38 s), a appends, b
#            reconnected and resumed: b exits non-zero, none of its lines
#            after a's, seq contiguous, fsck clean (not in the default
#            list: nftables, iproute2, 60 s)
#   memory   8 processes adding 100 memory entries each at once, 6 on one
#            host and 2 on the other: all 800 there, once each
#   usage    3 chats a host × 15 turns whose model reports 10 tokens in and
#            1 out, with usage reports run on both hosts meanwhile: every
#            acknowledged turn's call counted once, from each host
#   fresh    10 fresh profiles, 3 first commands a host on each at once:
#            every one exits 0, 6 sessions, fsck clean
#   fsck     hermes fsck from each host: clean
#
# It prints a Markdown table, tears the volume and the mounts down, and
# exits 1 when a check failed (the brick is kept for a look), 3 when this
# machine cannot run it (not root, no /dev/fuse, GlusterFS not installable
# or not starting; for cut and paused, nftables or a network namespace
# missing), 2 on
# bad usage. It takes about 2 minutes on 2 cores.
#
# Usage: scripts/multihost.sh [STEP...]     steps: appends docs board cron kill clientkill skew cut paused memory usage
#                                           fresh fsck (default all but cut and paused)
#   MULTIHOST_VOLUME=defaults   leave the volume's options at GlusterFS's defaults
#   MULTIHOST_OFF="OPT ..."     turn off these volume options instead of the seven
#   MULTIHOST_MOUNT=OPTS        FUSE mount options (default: none; e.g.
#                               attribute-timeout=0,entry-timeout=0)
#   MULTIHOST_HERMES=PATH       use this hermes instead of building one
set -euo pipefail
cd "$(dirname "$0")/.."

bench=multihost
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/hermes-multihost.XXXXXX")
. scripts/benchlib.sh

steps=("$@")
((${#steps[@]})) || steps=(appends docs board cron kill clientkill skew memory usage fresh fsck)
writers=3 appends=200 tasks=60 work=2 kills=15 rounds=100 tick_for=16
clientkill_rounds=5 clientkill_appends=30
skew_tasks=8 skew_backoff=4 skew_tick_for=10 cut_for=20 paused_cut=45 paused_lines=30000
# A command on host b during the cut must exit within its --fs-timeout and
# cut_slack seconds more (a process's start, a loaded machine).
cut_fs_timeout=10 cut_slack=3

# The client-side caches that make one host's writes invisible to the
# other for about a second, turned off; README says why each.
volume_off=(performance.stat-prefetch performance.quick-read performance.io-cache
  performance.read-ahead performance.write-behind performance.open-behind
  performance.readdir-ahead)
[[ -n ${MULTIHOST_OFF:-} ]] && read -ra volume_off <<<"$MULTIHOST_OFF"

# cannot WHY: this machine cannot run the check (exit 3, not a failure of
# hermes).
cannot() { say "cannot run here: $*"; exit 3; }

[[ $(id -u) == 0 ]] || cannot "needs root (glusterd, mount, unshare)"
[[ -c /dev/fuse ]] || cannot "needs /dev/fuse"
bench_install glusterd:glusterfs-server mount.glusterfs:glusterfs-client jq:jq unshare:util-linux ||
  cannot "GlusterFS could not be installed"
if [[ -n ${MULTIHOST_HERMES:-} ]]; then
  hermes=$MULTIHOST_HERMES
else
  bench_build
fi
mkdir -p "$tmp/bin"
cp "$hermes" "$tmp/bin/hermes"
export PATH=$tmp/bin:$PATH

vol=hermes$$
brick=$tmp/brick
started_glusterd=false
server=127.0.0.2 bnet=() netns="" veth=""
failed=0
rows=()

teardown() {
  local m
  for m in "$tmp/a" "$tmp/b"; do mountpoint -q "$m" && umount -l "$m"; done
  if gluster volume info "$vol" >/dev/null 2>&1; then
    gluster --mode=script volume stop "$vol" force >/dev/null 2>&1 || true
    gluster --mode=script volume delete "$vol" >/dev/null 2>&1 || true
  fi
  if $started_glusterd && [[ -f $tmp/glusterd.pid ]]; then
    local gpid
    gpid=$(cat "$tmp/glusterd.pid")
    kill "$gpid" 2>/dev/null || true
    # A run started next would find this glusterd still exiting, start
    # none, and fail to make its volume: wait for it to go.
    for _ in $(seq 100); do kill -0 "$gpid" 2>/dev/null || break; sleep 0.1; done
  fi
  [[ -z $netns ]] || ip netns del "$netns" 2>/dev/null || true
  [[ -z $veth ]] || ip link del "${veth}a" 2>/dev/null || true
  if ((failed)); then
    say "failed; the brick is kept in $brick"
  else
    rm -rf "$tmp"
  fi
}
trap teardown EXIT

# remount_b: host b's FUSE client (re)started on its mount point, in b's
# network namespace when it has one.
remount_b() {
  umount -l "$tmp/b" 2>/dev/null || true
  "${bnet[@]}" mount -t glusterfs ${MULTIHOST_MOUNT:+-o "$MULTIHOST_MOUNT"} "$server:/$vol" "$tmp/b"
}

# A brick must not be named by 127.0.0.1 (the CLI refuses it); any other
# loopback address reaches this machine. The steps that cut host b off
# (cut) need its FUSE client in a network namespace of its own, reaching
# the brick over a veth pair: the brick is then named by this side's
# address of the pair, which both namespaces route to.
for s in "${steps[@]}"; do
  [[ $s == cut || $s == paused ]] || continue
  bench_install nft:nftables ip:iproute2 nsenter:util-linux || cannot "nftables and iproute2 could not be installed"
  netns=hermes-mh$$ veth=mh$$
  ip netns add "$netns" || cannot "no network namespace (ip netns add failed)"
  ip link add "${veth}a" type veth peer name "${veth}b" || cannot "no veth pair (ip link add failed)"
  ip link set "${veth}b" netns "$netns"
  ip addr add 10.199.0.1/30 dev "${veth}a"
  ip link set "${veth}a" up
  ip netns exec "$netns" ip addr add 10.199.0.2/30 dev "${veth}b"
  ip netns exec "$netns" ip link set "${veth}b" up
  ip netns exec "$netns" ip link set lo up
  ip netns exec "$netns" nft list ruleset >/dev/null 2>&1 || cannot "nftables does not work in a network namespace"
  server=10.199.0.1 bnet=(nsenter "--net=/run/netns/$netns")
  break
done
if ! pgrep -x glusterd >/dev/null; then
  glusterd -p "$tmp/glusterd.pid" || cannot "glusterd did not start"
  started_glusterd=true
  for _ in $(seq 50); do gluster volume list >/dev/null 2>&1 && break; sleep 0.1; done
fi
mkdir -p "$brick" "$tmp/a" "$tmp/b" "$tmp/local"
gluster --mode=script volume create "$vol" "$server:$brick" force >/dev/null || cannot "no volume"
if [[ ${MULTIHOST_VOLUME:-} != defaults ]]; then
  for o in "${volume_off[@]}"; do gluster --mode=script volume set "$vol" "$o" off >/dev/null; done
fi
gluster --mode=script volume start "$vol" >/dev/null || cannot "the volume did not start"
mount -t glusterfs ${MULTIHOST_MOUNT:+-o "$MULTIHOST_MOUNT"} "$server:/$vol" "$tmp/a" || cannot "the FUSE mount failed"
remount_b || cannot "the FUSE mount failed"
say "volume $vol (options: ${MULTIHOST_VOLUME:-documented}; mount: ${MULTIHOST_MOUNT:-defaults}) on $tmp/a and $tmp/b"

# host SIDE SCRIPT: run SCRIPT with bash in a new PID namespace, with
# HERMES_HOME on SIDE's mount (a, b) or on local disk (la, lb: one home).
host() {
  local side=$1 home=$tmp/$1/home
  [[ $side == l? ]] && home=$tmp/local/home
  unshare --pid --fork --mount-proc env HERMES_HOME="$home" SIDE="$side" bash -c "$2"
}

row() { rows+=("| $* |"); }
check() { # check WHAT OK DETAIL
  if [[ $2 == ok ]]; then row "$1 | passed | $3"; else row "$1 | **failed** | $3"; failed=1; fi
}

# The writer loop: WRITERS loops of APPENDS appends to $SID, each
# acknowledged content written to $ACK.$SIDE.$w.
writer_loop='
for w in $(seq '$writers'); do
  (for i in $(seq '$appends'); do
     c="$SIDE-$w-$i"
     if hermes sessions append "$SID" --role user --content "$c" >/dev/null 2>>"$ACK.err"; then
       echo "$c" >>"$ACK.$SIDE.$w"
     else
       echo "$c" >>"$ACK.failed.$SIDE"
     fi
   done) &
done
wait'

# verify_appends SIDE SID ACKPREFIX: the session as hermes on SIDE exports
# it, against what was acknowledged; one line, "ok DETAIL" or "bad DETAIL".
verify_appends() {
  if ! host "$1" "hermes sessions export $2" >"$tmp/export"; then
    echo "bad the export failed: $(head -c 300 "$tmp/export")"
    return
  fi
  jq -r '.messages[] | [.seq, .content] | @tsv' "$tmp/export" >"$tmp/stored"
  local n acked dup gaps missing extra
  n=$(wc -l <"$tmp/stored")
  cat "$3".*.[0-9]* 2>/dev/null | sort >"$tmp/acked"
  acked=$(wc -l <"$tmp/acked")
  dup=$(cut -f1 "$tmp/stored" | sort -n | uniq -d | wc -l)
  gaps=$(cut -f1 "$tmp/stored" | awk '$1 != NR' | wc -l)
  cut -f2 "$tmp/stored" | sort >"$tmp/contents"
  missing=$(comm -23 "$tmp/acked" <(sort -u "$tmp/contents") | wc -l)
  extra=$(uniq -d "$tmp/contents" | wc -l)
  local verdict=ok failures=""
  ((dup == 0 && gaps == 0 && missing == 0 && extra == 0)) || verdict=bad
  if compgen -G "$3.failed.*" >/dev/null; then
    failures="; $(cat "$3".failed.* | wc -l) appends failed or were killed"
    local why
    why=$(grep -v 'warning:' "$3.err" | head -1 | cut -c1-160)
    [[ -z $why ]] || failures+=", e.g. \"$why\""
  fi
  echo "$verdict $acked acknowledged, $n stored; $dup seq duplicated, $gaps out of place, $missing acknowledged missing, $extra stored twice$failures"
}

# appends_on A B: the writer loops of two hosts on one session; prints
# "RATE VERDICT…".
appends_on() {
  local a=$1 b=$2 sid start end
  sid=$(host "$a" 'hermes sessions new')
  rm -f "$tmp/ack".*
  start=$(date +%s.%N)
  host "$a" "SID=$sid ACK=$tmp/ack; $writer_loop" &
  host "$b" "SID=$sid ACK=$tmp/ack; $writer_loop" &
  wait
  end=$(date +%s.%N)
  local rate out
  rate=$(cat "$tmp/ack".*.[0-9]* | wc -l | awk -v s="$start" -v e="$end" '{printf "%.0f", $1/(e-s)}')
  out=$(verify_appends "$b" "$sid" "$tmp/ack")
  # Nothing is killed here: an append that failed is a failure too.
  compgen -G "$tmp/ack.failed.*" >/dev/null && out="bad ${out#* }"
  echo "$rate $out"
}

step_appends() {
  local out rate
  out=$(appends_on a b)
  rate=${out%% *}
  out=${out#* }
  check "appends: $writers+$writers writers × $appends, one session" "${out%% *}" "${out#* }; $rate appends/s"
  local lout lrate
  lout=$(appends_on la lb)
  lrate=${lout%% *}
  lout=${lout#* }
  check "appends on local disk, the same" "${lout%% *}" "${lout#* }; $lrate appends/s"
  row "cost of the volume | | $(awk -v v="$rate" -v l="$lrate" 'BEGIN{printf "%.2fx local disk'"'"'s time an append (%s vs %s appends/s)", l/v, v, l}')"
}

step_board() {
  local prof=$tmp/a/home/profiles/default
  host a 'hermes sessions list >/dev/null'
  mkdir -p "$prof"
  printf 'kanban:\n  worker_command: sh -c "sleep %s; hermes kanban complete --result done"\n' "$work" >"$prof/config.yaml"
  host a "for i in \$(seq $tasks); do hermes kanban create \"task \$i\" >/dev/null; done"
  local start end
  start=$(date +%s.%N)
  local side
  for side in a b; do
    host "$side" '
      for _ in $(seq 600); do
        hermes kanban dispatch --max-workers 8 >/dev/null 2>>"'"$tmp"'/dispatch.$SIDE.err" || true
        [ "$(hermes --json kanban list --status done | wc -l)" -ge '"$tasks"' ] && break
        sleep 0.5
      done' &
  done
  wait
  end=$(date +%s.%N)
  host a 'hermes --json kanban list --status done; hermes --json kanban list' >/dev/null
  local done_n claims runs bad=0 detail
  done_n=$(host b 'hermes --json kanban list --status done' | wc -l)
  claims=0 runs=0
  local id
  for id in $(host b 'hermes --json kanban list --status done' | jq -r .id); do
    local c r
    c=$(jq -r 'select(.type=="claimed") | .type' "$prof/kanban/tasks/$id.events.jsonl" | wc -l)
    r=$(jq '.runs | length' "$prof/kanban/tasks/$id.json")
    claims=$((claims + c)) runs=$((runs + r))
    ((c == 1 && r == 1)) || bad=$((bad + 1))
  done
  local lost
  lost=$(cat "$prof"/kanban/tasks/*.json | jq -r '.runs[]?.outcome' | grep -cv '^completed$' || true)
  detail="$done_n of $tasks done; $claims claims, $runs runs; $bad tasks not claimed and run once; $lost runs not completed; $(awk -v s="$start" -v e="$end" 'BEGIN{printf "%.1f s", e-s}')"
  if ((done_n == tasks && bad == 0 && lost == 0)); then check "board: $tasks tasks, dispatchers on both hosts" ok "$detail"; else check "board: $tasks tasks, dispatchers on both hosts" bad "$detail"; fi
}

# A ticker on each host, racing for the same occurrences: each is claimed
# under its job's lock by one of them, and run once.
step_cron() {
  local prof=$tmp/a/home/profiles/default j side
  for j in x y z; do host a "hermes cron add $j --schedule 'every 2s' --catch-up all -- true" >/dev/null; done
  for side in a b; do
    # The namespace ends with its first process, and its tasks with it:
    # each host waits for the runs in flight before it goes.
    host "$side" 'timeout -s TERM '"$tick_for"' hermes cron daemon --every 250ms 2>>"'"$tmp"'/cron.$SIDE.err"
      for _ in $(seq 200); do hermes cron list | grep -q -e running -e claimed || break; sleep 0.1; done' &
  done
  wait
  local log=$prof/cron/runs.jsonl bad=0 claims=0 n ev detail
  if grep -q -e '"event":"lost"' -e '"event":"skipped"' "$log"; then bad=1; fi
  for j in $(grep -o '"job_id":"[^"]*"' "$log" | sort -u | cut -d'"' -f4); do
    for ev in claimed started finished; do
      grep "\"event\":\"$ev\",\"job_id\":\"$j\"" "$log" | grep -o '"occurrence":"[^"]*"' | sort >"$tmp/$ev.$j"
    done
    n=$(wc -l <"$tmp/claimed.$j")
    claims=$((claims + n))
    ((n >= 5)) || bad=1
    [[ -z $(uniq -d "$tmp/claimed.$j") ]] || bad=1
    cmp -s "$tmp/claimed.$j" "$tmp/started.$j" || bad=1
    cmp -s "$tmp/claimed.$j" "$tmp/finished.$j" || bad=1
    # Consecutive occurrences are 2 seconds apart: none missing.
    cut -d'"' -f4 "$tmp/claimed.$j" | awk -F'T' '{split($2, t, ":"); s = t[1]*3600 + t[2]*60 + t[3]; if (NR > 1 && (s - p < 1.999 || s - p > 2.001)) bad = 1; p = s} END {exit bad}' || bad=1
  done
  # Both hosts took part: the claims name two hosts.
  local hosts
  hosts=$(grep '"event":"claimed"' "$log" | grep -o '"host":"[^"]*"' | sort -u | wc -l)
  ((hosts == 2)) || bad=1
  detail="$claims occurrences of 3 jobs in $tick_for s, claimed by $hosts hosts, each claimed, started and finished once, none missing, lost or skipped"
  ((bad == 0)) || detail="$claims occurrences, claimed by $hosts hosts: one claimed twice, missing, lost or skipped, or not started and finished once (the runs log is kept in the brick)"
  if ((bad == 0)); then check "cron: a daemon on each host, 3 every 2s jobs" ok "$detail"; else check "cron: a daemon on each host, 3 every 2s jobs" bad "$detail"; fi
}

step_kill() {
  local sid
  sid=$(host a 'hermes sessions new')
  rm -f "$tmp/ack".*
  local killer='
    n=0
    while [ $n -lt '$kills' ]; do
      sleep 0.0$((RANDOM % 8 + 2))
      p=$(pgrep -x hermes | shuf -n1) || continue
      [ -n "$p" ] && kill -9 "$p" 2>/dev/null && n=$((n + 1))
    done'
  host a "SID=$sid ACK=$tmp/ack; ($writer_loop) 2>/dev/null & $killer; wait" &
  host b "SID=$sid ACK=$tmp/ack; ($writer_loop) 2>/dev/null & $killer; wait" &
  wait
  host a "hermes sessions append $sid --role user --content last >/dev/null"
  local out
  out=$(verify_appends b "$sid" "$tmp/ack")
  check "kill -9: $kills kills a host under the appends" "${out%% *}" "${out#* }"
}

# The writer loop of step_clientkill: WRITERS loops of CLIENTKILL_APPENDS
# appends to $SID from $ROUND, each with a key of its own and tried again
# with it 3 times; a content acknowledged goes to $ACK.$SIDE.$w, one that
# failed at first to $ACK.failed.$SIDE, one whose retry stored nothing (the
# failed run had stored it) to $ACK.stored.$SIDE, one still failing to
# $ACK.pending.$SIDE, and then the loop stops: its mount is gone.
keyed_writer_loop='
for w in $(seq '$writers'); do
  (for i in $(seq '$clientkill_appends'); do
     c="$SIDE-$ROUND-$w-$i"
     if hermes sessions append "$SID" --key "$c" --role user --content "$c" >/dev/null 2>>"$ACK.err"; then
       echo "$c" >>"$ACK.$SIDE.$w"
       continue
     fi
     echo "$c" >>"$ACK.failed.$SIDE"
     ok=false
     for _ in 1 2 3; do
       sleep 0.2
       if out=$(hermes --json sessions append "$SID" --key "$c" --role user --content "$c" 2>>"$ACK.err"); then
         case $out in *"\"appended\":0"*) echo "$c" >>"$ACK.stored.$SIDE" ;; esac
         echo "$c" >>"$ACK.$SIDE.$w"
         ok=true
         break
       fi
     done
     $ok || { echo "$c" >>"$ACK.pending.$SIDE"; break; }
   done) &
done
wait'

# strays_aside: a write that a fault interrupted (a FUSE client killed, a
# host cut off, whose command gave up and whose process died in the write)
# leaves its temp file (a key's record, a document), which fsck reports
# once it is a minute old and --repair moves to lost+found. They are
# counted (printed) and moved out of the profile, so that the fsck after
# a step judges what its writes left.
strays_aside() {
  mkdir -p "$tmp/strays"
  find "$tmp/a/home" -name '.*.tmp-*' | wc -l
  find "$tmp/a/home" -name '.*.tmp-*' -exec mv -t "$tmp/strays" {} +
}

# Host b's FUSE client (the glusterfs process of mount b) killed with kill
# -9 while both hosts append to one session, CLIENTKILL_ROUNDS rounds; b
# is mounted again after each, and the appends left failing there are run
# again with their keys from the new mount: each stored once.
step_clientkill() {
  local sid r pid kills=0 pending out
  sid=$(host a 'hermes sessions new')
  rm -f "$tmp/ack".*
  for r in $(seq "$clientkill_rounds"); do
    host a "SID=$sid ACK=$tmp/ack ROUND=$r; $keyed_writer_loop" &
    host b "SID=$sid ACK=$tmp/ack ROUND=$r; $keyed_writer_loop" &
    sleep "0.$((RANDOM % 8 + 2))"
    pid=$(pgrep -f -- "glusterfs.* $tmp/b\$" | head -1) || true
    if [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null; then kills=$((kills + 1)); fi
    wait
    remount_b || { check "client kill -9 under the appends" bad "host b could not be mounted again after kill $kills"; return; }
    if [[ -s $tmp/ack.pending.b ]]; then
      mv "$tmp/ack.pending.b" "$tmp/ack.retry"
      host b 'while read -r c; do
          if out=$(hermes --json sessions append '"$sid"' --key "$c" --role user --content "$c" 2>>"'"$tmp"'/ack.err"); then
            case $out in *"\"appended\":0"*) echo "$c" >>"'"$tmp"'/ack.stored.b" ;; esac
            echo "$c" >>"'"$tmp"'/ack.b.retried"
          else
            echo "$c" >>"'"$tmp"'/ack.pending.b"
          fi
        done <"'"$tmp"'/ack.retry"'
      # The retried ones counted with b's acknowledged: .b.retried ends in
      # no digit, so it is renamed to one.
      [[ -f $tmp/ack.b.retried ]] && cat "$tmp/ack.b.retried" >>"$tmp/ack.b.0" && rm "$tmp/ack.b.retried"
    fi
  done
  out=$(verify_appends b "$sid" "$tmp/ack")
  local verdict=${out%% *} stored=0 left=0
  [[ -f $tmp/ack.stored.a || -f $tmp/ack.stored.b ]] && stored=$(cat "$tmp"/ack.stored.* | wc -l)
  [[ -f $tmp/ack.pending.a || -f $tmp/ack.pending.b ]] && left=$(cat "$tmp"/ack.pending.* | wc -l)
  ((left == 0 && kills == clientkill_rounds)) || verdict=bad
  local strays
  strays=$(strays_aside)
  check "client kill -9: host b's FUSE client killed under the appends, $clientkill_rounds rounds" "$verdict" "${out#* }; $stored of them stored by the run that failed, stored once with their key; $left still failing after the remount; $kills kills; $strays temp files of interrupted writes left (fsck reports them after a minute)"
  step_fsck
}

# Host b's clock 5 minutes ahead (the test-only time source
# HERMES_TEST_CLOCK_AHEAD moves every hermes there, not the FUSE client's
# stamps): a board whose tasks each fail a first 2 s run and are retried
# after a 4 s backoff, a dispatcher on each host; then three every 2s cron
# jobs with a daemon on each host. No task has two live workers or a retry
# brought forward, no occurrence is run early or twice, and hermes from b
# reports b's skew; fsck from each host finds nothing else.
step_skew() {
  # A profile of its own: the board and cron steps' tasks and runs are not
  # this step's.
  local prof=$tmp/a/skew/profiles/default side ahead
  local ids="export HERMES_HOME=$tmp/\$SIDE/skew HERMES_HOST_ID=host-\$SIDE; [ \$SIDE = b ] && export HERMES_TEST_CLOCK_AHEAD=5m;"
  host a "$ids hermes sessions list >/dev/null"
  mkdir -p "$prof" "$tmp/marks"
  # The worker notes when it starts and when its failing first run ends by
  # this machine's real clock (a run's own stamps are the clock of the
  # host that wrote them).
  local m="$tmp/marks/\\\$HERMES_KANBAN_TASK"
  printf 'kanban:\n  retry_backoff: %ss\n  worker_command: sh -c "date +%%s.%%N >>%s.start; sleep %s; if [ -e %s ]; then hermes kanban complete --result done; else touch %s; date +%%s.%%N >%s.end; exit 1; fi"\n' \
    "$skew_backoff" "$m" "$work" "$m" "$m" "$m" >"$prof/config.yaml"
  host a "$ids for i in \$(seq $skew_tasks); do hermes kanban create \"task \$i\" >/dev/null; done"
  for side in a b; do
    host "$side" "$ids"'
      for _ in $(seq 200); do
        hermes kanban dispatch --max-workers 8 >/dev/null 2>>"'"$tmp"'/skew.$SIDE.err" || true
        [ "$(hermes --json kanban list --status done | wc -l)" -ge '"$skew_tasks"' ] && break
        sleep 0.5
      done' &
  done
  wait
  local done_n bad=0 early=0 overlap=0 id runs claims=0 by_b=0 stamped_b=0
  done_n=$(host a "$ids hermes --json kanban list --status done" | wc -l)
  for id in $(jq -r .id "$prof"/kanban/tasks/*.json); do
    runs=$(jq '.runs | length' "$prof/kanban/tasks/$id.json")
    claims=$((claims + $(jq -r 'select(.type=="claimed") | .type' "$prof/kanban/tasks/$id.events.jsonl" | wc -l)))
    ((runs == 2)) || bad=$((bad + 1))
    # The second worker starts after the first ended (no two live
    # workers) and after the backoff (no retry brought forward).
    local second first_end
    second=$(sed -n 2p "$tmp/marks/$id.start" 2>/dev/null) || second=""
    first_end=$(cat "$tmp/marks/$id.end" 2>/dev/null) || first_end=""
    if [[ -n $second && -n $first_end ]]; then
      awk -v s="$second" -v e="$first_end" 'BEGIN { exit !(s < e) }' && overlap=$((overlap + 1))
      awk -v s="$second" -v e="$first_end" -v b="$skew_backoff" 'BEGIN { exit !(s < e + b) }' && early=$((early + 1))
    fi
    stamped_b=$((stamped_b + $(jq -r '.runs[].ended_at' "$prof/kanban/tasks/$id.json" | awk -v now="$(date -u +%FT%T)" '$1 > now' | wc -l)))
  done
  by_b=$(cat "$prof"/kanban/tasks/*.events.jsonl | jq -r 'select(.type=="claimed") | .host // empty' | grep -c 'host-b' || true)
  local refused
  refused=$(grep -c 'it claims nothing' "$tmp/skew.b.err" || true)
  local detail="$done_n of $skew_tasks done after a failed first run each; $claims claims ($by_b by host b, which refused $refused dispatches: past 15s it claims nothing); $bad tasks not run twice; $overlap with two live workers; $early retried before their ${skew_backoff}s backoff (by this machine's clock); $stamped_b run ends recorded by host b, stamped 5 minutes ahead"
  if ((done_n == skew_tasks && bad == 0 && overlap == 0 && early == 0 && by_b == 0 && refused > 0)); then ahead=ok; else ahead=bad; fi
  check "clock skew: host b 5m ahead, board of $skew_tasks tasks, a dispatcher on each host" "$ahead" "$detail"

  local j log=$prof/cron/runs.jsonl
  for j in x y z; do host a "$ids hermes cron add $j --schedule 'every 2s' --catch-up all -- true" >/dev/null 2>&1; done
  for side in a b; do
    host "$side" "$ids"'timeout -s TERM '"$skew_tick_for"' hermes cron daemon --every 250ms 2>>"'"$tmp"'/skewcron.$SIDE.err"
      for _ in $(seq 200); do hermes cron list | grep -q -e running -e claimed || break; sleep 0.1; done' &
  done
  wait
  local occ twice early_c cron_b
  jq -r 'select(.event=="claimed") | [.job_id, .occurrence, .host, .at // .time // ""] | @tsv' "$log" >"$tmp/claims" 2>/dev/null || true
  occ=$(wc -l <"$tmp/claims")
  twice=$(cut -f1,2 "$tmp/claims" | sort | uniq -d | wc -l)
  cron_b=$(cut -f3 "$tmp/claims" | grep -c host-b || true)
  # An occurrence run early: claimed before its time by the real clock
  # (host a's claims are stamped by it).
  early_c=$(awk -F'\t' '$4 != "" { cmd = "date -d \"" $2 "\" +%s.%N"; cmd | getline o; close(cmd); cmd = "date -d \"" $4 "\" +%s.%N"; cmd | getline c; close(cmd); if (c < o) n++ } END { print n + 0 }' "$tmp/claims")
  detail="$occ occurrences of 3 jobs in $skew_tick_for s, $cron_b claimed by host b; $twice claimed twice; $early_c claimed before their time"
  if ((occ >= 9 && twice == 0 && early_c == 0 && cron_b == 0)); then ahead=ok; else ahead=bad; fi
  check "clock skew: host b 5m ahead, a cron daemon on each host, 3 every 2s jobs" "$ahead" "$detail"

  local shown fsck_out rc
  shown=$(host b "$ids hermes profile show" 2>&1 | grep '^clock of host-b' || true)
  if [[ $shown == *"5m0s ahead"* ]]; then ahead=ok; else ahead=bad; fi
  check "clock skew: profile show from host b" "$ahead" "${shown:-no clock of host-b}"
  for side in a b; do
    rc=0
    fsck_out=$(host "$side" "$ids hermes fsck" 2>&1) || rc=$?
    if grep -q 'clock of host-b: 5m0s ahead' <<<"$fsck_out" && ! grep '^problem' <<<"$fsck_out" | grep -qv 'clock of host-b'; then ahead=ok; else ahead=bad; fi
    check "clock skew: fsck from host $side" "$ahead" "exit $rc: $(grep -m1 'clock of host-b' <<<"$fsck_out" | sed 's/^problem: [^ ]*: //'); no other problem"
  done
}

# The writer loop of step_cut: WRITERS loops appending to $SID until
# $ACK.stop exists, host b's 50 messages an append (its lock held most of
# the time), host a's one, each with a key of its own and run again with it
# until it succeeds. Each failed run is noted in $ACK.times as "SIDE EXIT
# SECONDS-TO-EXIT SECONDS-TO-MESSAGE MESSAGE".
cut_writer_loop='
n=1; [ $SIDE = b ] && n=50
for w in $(seq '$writers'); do
  (i=0
   while [ ! -e "$ACK.stop" ]; do
     i=$((i + 1)); c="$SIDE-$w-$i" in="$ACK-in.$SIDE.$w" e="$ACK-e.$SIDE.$w"
     seq $n | sed "s/.*/{\"role\":\"user\",\"content\":\"$c-&\"}/" >"$in"
     try=0
     while :; do
       t0=$(date +%s.%N)
       if out=$(hermes --json --fs-timeout '$cut_fs_timeout's sessions append "$SID" --key "$c" <"$in" 2> >(while IFS= read -r l; do echo "$(date +%s.%N) $l"; done >"$e")); then
         [ $try -gt 0 ] && case $out in *"\"appended\":0"*) echo "$c" >>"$ACK.stored.$SIDE" ;; esac
         sed "s/.*\"content\":\"\([^\"]*\)\".*/\1/" "$in" >>"$ACK.$SIDE.$w"
         break
       else
         rc=$?
       fi
       t1=$(date +%s.%N)
       sleep 0.2
       msg=$(grep -v warning: "$e" | head -1)
       echo "$SIDE $rc $(awk -v a=$t0 -v b=$t1 -v m="${msg%% *}" "BEGIN { printf \"%.1f %.1f\", b - a, m - a }") ${msg#* }" >>"$ACK.times"
       cut -d" " -f2- "$e" >>"$ACK.err"
       [ $try -eq 0 ] && echo "$c" >>"$ACK.failed.$SIDE"
       try=$((try + 1))
       sleep 0.3
     done
   done) &
done
wait'

# Host b cut off from the brick for cut_for seconds (nftables, drop, in its
# network namespace) while both hosts append to one session: every
# acknowledged append stored once; b's commands exit within their
# --fs-timeout (10 s) naming the profile's path; a's appends that wait for
# the lock b held give up within their --lock-timeout (10 s) naming b's
# host and pid.
step_cut() {
  local sid ids="export HERMES_HOST_ID=host-\$SIDE;"
  sid=$(host a 'HERMES_HOST_ID=host-a hermes sessions new' 2>/dev/null)
  rm -f "$tmp/ack".*
  host a "$ids SID=$sid ACK=$tmp/ack; $cut_writer_loop" &
  host b "$ids SID=$sid ACK=$tmp/ack; $cut_writer_loop" &
  sleep 3
  ip netns exec "$netns" nft -f - <<'NFT'
table inet hermescut {
  chain in { type filter hook input priority 0; policy drop; }
  chain out { type filter hook output priority 0; policy drop; }
}
NFT
  sleep "$cut_for"
  ip netns exec "$netns" nft delete table inet hermescut
  sleep 5
  touch "$tmp/ack.stop"
  wait
  local out verdict
  out=$(verify_appends b "$sid" "$tmp/ack")
  verdict=${out%% *}
  local stored=0
  [[ -f $tmp/ack.stored.a || -f $tmp/ack.stored.b ]] && stored=$(cat "$tmp"/ack.stored.* | wc -l)
  local strays
  strays=$(strays_aside)
  check "cut: host b cut off from the brick for $cut_for s under the appends of both hosts" "$verdict" "${out#* }; $stored of them stored by the run that failed, stored once with their key; $strays temp files of interrupted writes set aside (fsck reports them after a minute)"
  touch "$tmp/ack.times"
  # b's failed runs: within --fs-timeout, naming the profile's path.
  local bn bslow bnamed amax
  bn=$(awk '$1 == "b"' "$tmp/ack.times" | wc -l)
  local blimit=$((cut_fs_timeout + cut_slack))
  bslow=$(awk -v l=$blimit '$1 == "b" && $3 > l' "$tmp/ack.times" | wc -l)
  bnamed=$(awk '$1 == "b"' "$tmp/ack.times" | grep -c "$tmp/b/home" || true)
  local bmax bmsg
  bmax=$(awk '$1 == "b" { if ($3 > m) m = $3 } END { print m + 0 }' "$tmp/ack.times")
  bmsg=$(awk '$1 == "b" { if ($4 > m) m = $4 } END { print m + 0 }' "$tmp/ack.times")
  verdict=ok
  ((bn > 0 && bslow == 0 && bnamed == bn)) || verdict=bad
  check "cut: host b's commands during the cut (--fs-timeout ${cut_fs_timeout}s)" "$verdict" "$bn runs failed, $bnamed of them naming the path, each saying so within $bmsg s and exiting within $bmax s, $bslow past $blimit s; e.g. \"$(awk '$1 == "b"' "$tmp/ack.times" | head -1 | cut -d' ' -f5- | cut -c1-200)\""
  # a's: exit 5 within --lock-timeout, naming b's host and pid.
  local an aslow anamed
  an=$(awk '$1 == "a"' "$tmp/ack.times" | wc -l)
  aslow=$(awk '$1 == "a" && $3 > 11' "$tmp/ack.times" | wc -l)
  anamed=$(awk '$1 == "a" && $2 == 5' "$tmp/ack.times" | grep -c 'pid [0-9]* on host host-b' || true)
  amax=$(awk '$1 == "a" { if ($3 > m) m = $3 } END { print m + 0 }' "$tmp/ack.times")
  verdict=ok
  ((aslow == 0 && anamed == an)) || verdict=bad
  local why="b held the session's lock when it was cut off"
  ((an > 0)) || why="b held no lock when it was cut off: nothing waited"
  check "cut: host a's appends to the session meanwhile (--lock-timeout 10s)" "$verdict" "$why; $an runs failed, the longest after $amax s, $aslow past 11 s, $anamed exit 5 naming host-b and its pid; e.g. \"$(awk '$1 == "a"' "$tmp/ack.times" | head -1 | cut -d' ' -f5- | cut -c1-200)\""
  step_fsck
}

# A lock holder paused across a cut: host b's append of 30000 messages to
# a session is stopped (SIGSTOP) once it holds the session's lock and has
# written a line, b is cut off from the brick for paused_cut seconds
# (longer than the bricks' keepalive, 38 s, so that they drop b's flock),
# host a appends meanwhile, and b is reconnected and resumed (SIGCONT): b's
# append exits non-zero and stores nothing more, or its lines are moved
# aside (SID.jsonl.fenced-*) and named; seq contiguous; fsck clean.
step_paused() {
  local sid ids="export HERMES_HOST_ID=host-\$SIDE;" pid="" i
  sid=$(host a 'HERMES_HOST_ID=host-a hermes sessions new' 2>/dev/null)
  local dir=$tmp/a/home/profiles/default/sessions
  host a "$ids hermes sessions append $sid --role user --content a-0" >/dev/null 2>&1
  seq "$paused_lines" | sed 's/.*/{"role":"user","content":"b-&"}/' >"$tmp/paused.in"
  host b "$ids hermes --lock-timeout 60s sessions append $sid --key paused <$tmp/paused.in >$tmp/paused.out 2>$tmp/paused.err; echo \$? >$tmp/paused.rc" &
  local bside=$!
  # The append that holds the lock is the watched child of the hermes b
  # ran (on a network filesystem a command runs in a child of its own):
  # the matching process whose parent matches too. Between the parent's
  # start and its child's, the parent has none: a pgrep that finds
  # nothing is no failure (under pipefail it ended the script, exit 1,
  # without a word).
  for _ in $(seq 2000); do
    pid=$(for p in $(pgrep -f "^hermes .*--key paused"); do pgrep -f "^hermes .*--key paused" -P "$p" || true; done | head -1)
    [[ -n $pid ]] && break
    sleep 0.005
  done
  for _ in $(seq 2000); do
    [[ -n $pid ]] || break
    if grep -q host-b "$dir/$sid.lock" 2>/dev/null && (($(wc -l <"$dir/$sid.jsonl") > 1)); then
      kill -STOP "$pid"
      break
    fi
    sleep 0.005
  done
  [[ $(ps -o stat= -p "$pid" 2>/dev/null) == T* ]] || pid=""
  if [[ -z $pid ]]; then
    wait "$bside" || true
    check "paused: a lock holder stopped across a cut" bad "host b's append could not be stopped while it held the lock ($(cat "$tmp/paused.rc" 2>/dev/null))"
    return
  fi
  local before
  before=$(wc -l <"$dir/$sid.jsonl")
  ip netns exec "$netns" nft -f - <<'NFT'
table inet hermescut {
  chain in { type filter hook input priority 0; policy drop; }
  chain out { type filter hook output priority 0; policy drop; }
}
NFT
  local t0 t1
  t0=$(date +%s.%N)
  rm -f "$tmp/pack".*
  host a "$ids for i in 1 2 3; do hermes --lock-timeout 60s sessions append $sid --role user --content a-\$i >/dev/null 2>>$tmp/pack.err && echo a-\$i >>$tmp/pack.a.1; done" &
  local aside=$!
  sleep "$paused_cut"
  ip netns exec "$netns" nft delete table inet hermescut
  wait "$aside" || true
  t1=$(date +%s.%N)
  sleep 3
  kill -CONT "$pid"
  local rc=none
  for _ in $(seq 600); do [[ -s $tmp/paused.rc ]] && break; sleep 0.1; done
  wait "$bside" || true
  rc=$(cat "$tmp/paused.rc" 2>/dev/null || echo none)
  echo a-0 >>"$tmp/pack.a.1"
  local out fenced bstored verdict
  out=$(verify_appends a "$sid" "$tmp/pack")
  verdict=${out%% *}
  fenced=$(find "$dir" -name "$sid.jsonl.fenced-*" | wc -l)
  bstored=$(grep -c $'\tb-' "$tmp/stored" || true)
  # b's lines stored are those before the pause, all before a's.
  local bafter
  bafter=$(awk -F'\t' '$2 ~ /^a-[1-9]/ { seen = 1 } seen && $2 ~ /^b-/' "$tmp/stored" | wc -l)
  [[ $rc != 0 && $rc != none && $bafter == 0 ]] || verdict=bad
  ((fenced == 0)) || grep -q 'fenced-' "$tmp/paused.err" || verdict=bad
  check "paused: host b's append stopped holding the lock, b cut off for $paused_cut s, a appends, b resumed" "$verdict" "${out#* }; host a's appends waited $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.0f", b-a}') s; b's append exit $rc: \"$(grep -v warning: "$tmp/paused.err" | head -1 | cut -c1-240)\"; $bstored of b's lines stored ($((before - 2)) when it was stopped), $bafter after a's; $fenced moved aside"
  step_fsck
}

# One host changes a document, the other changes it next, at once: the
# second must read the first's change (a document replaced by rename, read
# through a name the other mount may have cached).
step_docs() {
  local sid i bad=0 got want
  sid=$(host a 'hermes sessions new')
  for i in $(seq "$rounds"); do
    HERMES_HOME=$tmp/a/home hermes sessions rename "$sid" "title $i" >/dev/null
    HERMES_HOME=$tmp/b/home hermes sessions append "$sid" --role user --content "m$i" >/dev/null
    got=$(HERMES_HOME=$tmp/a/home hermes --json sessions show "$sid" | jq -r '"\(.title) \(.message_count)"' | head -1) || got=failed
    want="title $i $i"
    [[ $got == "$want" ]] || bad=$((bad + 1))
  done
  local verdict=ok
  ((bad == 0)) || verdict=bad
  check "documents: $rounds rounds of rename on one host, append on the other" "$verdict" "$bad rounds lost a change or read an old one"
}

# Memory entries added from both hosts at once: each change reads the
# log and appends to it under its lock, so none is lost to another.
step_memory() {
  local prof=$tmp/a/home/profiles/default side n w
  host a 'hermes sessions list >/dev/null'
  mkdir -p "$prof"
  printf 'memory:\n  max_chars: 100000\n' >>"$prof/config.yaml"
  rm -f "$tmp/mack".*
  for side in a b; do
    n=6
    [[ $side == b ]] && n=2
    host "$side" '
      for w in $(seq '$n'); do
        (for i in $(seq 100); do
           c="$SIDE-$w-$i"
           if hermes memory add "$c" 2>>"'"$tmp"'/mack.err"; then echo "$c" >>"'"$tmp"'/mack.$SIDE.$w"; fi
         done) &
      done
      wait' &
  done
  wait
  local acked stored missing dup detail
  host b 'hermes --json memory show' | jq -r '.entries[].text' | sort >"$tmp/mstored"
  cat "$tmp"/mack.*.[0-9]* | sort >"$tmp/macked"
  acked=$(wc -l <"$tmp/macked")
  stored=$(wc -l <"$tmp/mstored")
  missing=$(comm -23 "$tmp/macked" "$tmp/mstored" | wc -l)
  dup=$(uniq -d "$tmp/mstored" | wc -l)
  detail="$acked of 800 acknowledged, $stored stored; $missing acknowledged missing, $dup stored twice"
  if ((acked == 800 && stored == 800 && missing == 0 && dup == 0)); then
    check "memory: 6+2 processes × 100 entries" ok "$detail"
  else
    check "memory: 6+2 processes × 100 entries" bad "$detail"
  fi
}

step_usage() {
  local side a model=$tmp/usage-model.sh
  printf '%s\n' 'cat >/dev/null' 'echo '"'"'{"role":"assistant","content":"ok","usage":{"input":10,"output":1}}'"'" >"$model"
  rm -f "$tmp/uack".*
  # The profile and the chats' sessions first, one at a time: six first
  # commands on a fresh profile from two hosts at once are another test.
  for side in a b; do
    host "$side" 'for w in 1 2 3; do hermes sessions new --id "usage-$SIDE-$w" >/dev/null; done'
  done
  for side in a b; do
    host "$side" '
      for w in 1 2 3; do
        (for i in $(seq 15); do
           if hermes chat --resume "usage-$SIDE-$w" --provider exec --exec-command "sh '"$model"'" -q "turn $i" >/dev/null 2>>"'"$tmp"'/uack.err"; then
             echo "$SIDE-$w-$i" >>"'"$tmp"'/uack.$SIDE.$w"
           fi
         done) &
      done
      for r in 1 2 3; do hermes --json usage daily --since 1d >/dev/null 2>>"'"$tmp"'/uack.err"; sleep 0.5; done
      wait' &
  done
  wait
  local acked calls detail ok=ok
  acked=$(cat "$tmp"/uack.[ab].* 2>/dev/null | wc -l)
  detail="$acked of 90 turns acknowledged"
  for side in a b; do
    calls=$(host "$side" 'hermes --json usage daily --since 1d' | jq -s 'map(.calls) | add // 0')
    input=$(host "$side" 'hermes --json usage daily --since 1d' | jq -s 'map(.input) | add // 0')
    detail="$detail; host $side counts $calls calls, $input tokens in"
    ((calls == acked && input == 10 * acked)) || ok=bad
  done
  ((acked == 90)) || ok=bad
  check "usage: 3+3 chats × 15 turns, reports from both hosts" "$ok" "$detail"
}

# step_fresh: first commands on a fresh profile from both hosts at once,
# 3 a host, 10 rounds (a new profile each): every command exits 0, and
# the profile holds its 6 sessions, fsck clean.
step_fresh() {
  local r side failures=0 made detail rc
  for r in $(seq "${FRESH_ROUNDS:-10}"); do
    for side in a b; do
      host "$side" '
        export HERMES_HOME='"$tmp"'/$SIDE/fresh'"$r"'
        for w in 1 2 3; do
          (case $w in
             1) hermes sessions new --id "fresh-$SIDE-$w" --title "fresh $SIDE $w" ;;
             2) hermes chat --title "fresh $SIDE $w" -q hi ;;
             3) hermes --json usage daily --since 1d && hermes sessions new --id "fresh-$SIDE-$w" ;;
           esac >/dev/null 2>>"'"$tmp"'/fresh.err" || echo "$SIDE-$w" >>"'"$tmp"'/fresh.failed") &
        done
        wait' &
    done
    wait
    rc=0
    made=$(host a 'HERMES_HOME='"$tmp"'/a/fresh'"$r"' hermes --json sessions list' | jq -s length) || rc=$?
    ((rc == 0 && made == 6)) || failures=$((failures + 1))
    host b 'HERMES_HOME='"$tmp"'/b/fresh'"$r"' hermes fsck >/dev/null 2>>'"$tmp"'/fresh.err' || failures=$((failures + 1))
  done
  detail="${FRESH_ROUNDS:-10} rounds of 3+3 first commands"
  if [[ -s $tmp/fresh.failed ]]; then
    failures=$((failures + $(wc -l <"$tmp/fresh.failed")))
    detail+="; $(wc -l <"$tmp/fresh.failed") failed, e.g. \"$(grep -v 'warning:' "$tmp/fresh.err" | head -1 | cut -c1-160)\""
  fi
  if ((failures == 0)); then check "fresh profile: first commands from both hosts at once" ok "$detail"; else check "fresh profile: first commands from both hosts at once" bad "$detail"; fi
}

step_fsck() {
  local side out rc
  for side in a b; do
    rc=0
    out=$(host "$side" 'hermes fsck 2>&1') || rc=$?
    if ((rc == 0)); then check "fsck from host $side" ok "exit 0"; else check "fsck from host $side" bad "exit $rc: $(echo "$out" | head -3 | tr '\n' ' ')"; fi
  done
}

for s in "${steps[@]}"; do
  case $s in
  appends | docs | board | cron | kill | clientkill | skew | cut | paused | memory | usage | fresh | fsck) say "$s"; "step_$s" ;;
  *) say "unknown step $s (appends docs board cron kill clientkill skew cut paused memory usage fresh fsck)"; exit 2 ;;
  esac
done

echo "| check (volume options: ${MULTIHOST_VOLUME:-documented}; mount: ${MULTIHOST_MOUNT:-defaults}) | result | detail |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$failed"
