// Package tasks keeps the history of background tasks: a Store holds the
// record of every command run under a supervisor (hermes tasks run, an
// agent's background terminal call, a kanban worker), on the engine of
// package fsstore.
//
// A task's record (<id>.json) is rewritten atomically when the task starts
// and when it finishes; its output (<id>.log) is written by the command
// itself, so it survives its supervisor. A marker in .running/ names each
// task not yet finished (recovery looks only there). .finished.jsonl holds
// one line per finished task, in the order they finished: its whole final
// record, appended before the record file's final write (the commit
// point); once that is done the record file is removed, and the line is
// the record (history reads the log backwards and opens nothing else).
// A record file, where there is one, is the truth: a crash between the
// line and the commit leaves a line whose file says running, which
// readers skip. Profiles written before finished records moved into the
// log hold short entries naming <id>.json, and are read as they are, not
// migrated. RebuildIndex (fsck --repair) makes the markers and the log
// again from the record files and the log's whole records. A Finish whose record cannot be written
// cuts its finished line off again, and a task whose command could not
// start, when not even that can be recorded, is discarded (Discard), so
// that a failure leaves no record of a command that never ran.
//
// An old finished task is found through the finished index
// (.finished.idx, finindex.go): the least and greatest task id of each
// block of about 64 KB of the log, so that `tasks show ID` reads the log's
// last lines and the one or two blocks whose ids hold ID, at 1,000 tasks
// or 100,000. The index is a cache that Finish extends and that a lookup
// checks against the log: a lookup that cannot trust it reads the log
// backwards as before, so a stale index costs time, never a wrong answer.
// A prune and RebuildIndex (fsck --repair) remove it before they rewrite
// the log; fsck does not report it, since a damaged index is found by the
// next lookup, which rebuilds it and answers from the log meanwhile. An
// id prefix (`tasks show 20261125_1`) reads the names of the record
// files, the log's last lines and the blocks whose range of ids meets the
// ids that start with it; an id that no task has (a typo) reads the same,
// as a prefix of ids, once it has read the blocks whose range holds it:
// most often a few lines and no block (finindex.go says why what neither
// reads holds no match). Through an index it cannot trust, they read the
// whole log, as before.
//
// A record names the host its processes run on (host). Only there are its
// pids looked up; on another host that shares the profile a running task
// is judged by its lease: its supervisor heartbeats every HeartbeatEvery
// (10 s) by setting the time of its running marker, which writes no byte
// of the record and syncs nothing, and another host takes the task for
// lost once it has watched the marker's time stay unchanged for Lease
// (60 s) by its own monotonic clock (package hosts): the time is the
// heartbeat's host's clock, seen to change and compared with no other
// clock. A command that runs once records what it saw, and a later one
// judges from there. A record written before hosts were recorded names
// none, and is judged by its pids, as before.
//
// Deletion is explicit: Prune removes only finished tasks, says what it
// removes, and has a dry run. It takes one store-level lock (.prune.lock),
// no lock per task, lists the directory once, and commits by syncing a
// journal (.pruning) of the ids it removes; then it rewrites the finished
// log once, removes each task's record file, log and lock sidecar, syncs
// the directory once and removes the journal. A crash after the journal is
// completed by the next Prune or fsck --repair; a finished record freed
// no block per task, which on a file system that discards freed blocks
// synchronously is most of what removing a file costs.
//
// A run with an idempotency key (CreateOnce, tasks run --key) first records
// the new task's id in .keys/<hash of the key>, synced, under that file's
// lock, then creates the task; only the call that created it starts it, and
// the key with another command is refused. The key's file is the commit
// point: a crash before the task is mended by the next run with the key,
// which makes the task with the recorded id, and a task the key made is
// never made again while its record exists (one pruned since is made anew).
package tasks
