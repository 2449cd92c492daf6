// Package fsstore is the storage engine of hermes: it keeps records as
// plain files so that an acknowledged write survives a crash, no write can
// shorten a history, and damage is reported and set aside, never papered
// over.
//
// # Two kinds of file
//
// A document is a small JSON file rewritten whole and atomically
// (WriteFileAtomic): temp file in the same directory, write, fsync, close,
// rename over the old one, fsync the directory. A reader sees the old
// document or the new one, never a mix.
//
// A log is a JSONL file that is only appended to (OpenAppend, AppendLines):
// one record per write call, then one fsync for the batch. A record is
// committed when its newline is on disk. Readers (ScanLines) stream it with
// memory for one line. A log opened to be appended or read is opened with
// OpenFile: one open and one fcntl, where os.OpenFile adds four fcntl and
// an epoll_ctl that a regular file does not need (TestOpenIsOneCall).
//
// Every writer holds a lock: flock on a sidecar file (<name>.lock), never
// on a file that a rename replaces. Waits are bounded (Lock's timeout;
// --lock-timeout on the command line) and end in a *LockTimeoutError that
// names the lock; a wait on behalf of work that can be called off (a tool
// call) also ends when that work is (LockUntil, a store's Cancel), in a
// *LockInterruptedError. A lock is one descriptor on its file, opened
// once (flock(2) called on it directly): a try (LOCK_NB), then, when the
// lock is held, a wait on the same descriptor that blocks in the kernel
// (flock without LOCK_NB), so a waiter holds the lock the
// moment its holder lets go (0.1 ms from release to hold, where polling
// took 1.2 ms: BenchmarkLockHandoff); a wait given up stays blocked until
// the lock is free and then lets it go at once, and past 256 such waits a
// process polls instead. The takers of an exclusive lock in one process
// queue in the process first (lockqueue.go), in the order they came, for
// the inode they opened: only the first of them calls flock, so a lock
// held by another goroutine is handed to the next in line when it is let
// go, never won by a newcomer's try while the kernel wakes a blocked
// waiter (that was the tail of a gateway turn at 16 clients), and a
// process waits in the kernel for other processes only. A holder of an exclusive lock writes who it is in
// the lock's file as it takes it ({"host","pid","at","token"}, not
// synced), through the descriptor that holds the lock (opened for
// writing; read-only, with no record, where the file cannot be written),
// and empties the file as it lets go, so that a lock file at rest
// is empty and takes no disk block; a wait that times out names the
// holder: a lock held by a host that is cut off is told by host and pid.
// A lock that guards logs alone and is held for one append (the activity
// catalog's, the gateway's history index: LockLogUntil) writes no record:
// an append is fenced by its log's end, and writing and emptying the
// record were half of such a lock's cost; a wait that times out on it
// names the lock alone.
// The token fences the holder's documents (see Fencing). Writers to different records take different
// locks and never wait for each other. A reader that wants a shared lock whose file
// is missing and cannot be made (a read-only copy of a profile) reads
// without it; a writer there fails, naming the lock. A holder may remove
// a lock file as its last act (a session's delete does): a lock taken on
// a file its path no longer names (opened before the removal, locked
// after) is let go and taken again, so two holders never hold two inodes
// of one lock. A waiter for a removed record makes the file again; fsck
// reports such a lock file of no record, and --repair removes it when no
// one holds it.
//
// # Assumptions
//
//  1. fsync on a file makes its written bytes durable; fsync on a directory
//     makes the creates, renames and removes of its entries durable. Both
//     are done before a write is acknowledged. (On macOS fsync does not
//     reach the drive's media; File.Sync there is F_FULLFSYNC, which does,
//     and seam.Sync falls back to fsync only where a filesystem refuses it.)
//  2. rename(2) within one directory is atomic: after a crash the name
//     points at the old inode or the new one.
//  3. A crash during an append can leave any prefix of the bytes being
//     written, but does not change bytes that were synced before it.
//  4. flock locks are released by the kernel when their holder dies, so a
//     crashed writer never leaves a lock held.
//  5. The profile directory is on a local filesystem with these semantics
//     (ext4, xfs, btrfs, apfs), or on a distributed one that keeps them
//     between hosts and, under a lock, gives a view no cache makes stale.
//     GlusterFS (FUSE client) does, with its client-side caches turned off
//     (README, "Running on several machines", and scripts/multihost.sh):
//     flock holds between mounts, rename is atomic, and the kernel's
//     attribute cache, which the mount keeps, is read around: a log's size
//     is taken from the server (FreshSize) when it is opened to be read or
//     appended, a document read that answers ESTALE is read again, and a
//     kanban change checks its document against the events log (package
//     kanban). Other network filesystems (NFS, SMB) were not measured.
//  6. Nothing but hermes writes inside a profile. Symlinks inside it are
//     not followed for writes: a log is opened with O_NOFOLLOW, and a
//     store directory, the profile directory or profiles/ that is a
//     symlink is refused (EnsureDir). The root above profiles/ is the
//     user's to place, and a link there is followed.
//
// # The stores
//
// Each kind of record has a package of its own on this engine, with its
// rules and its layout in its doc.go: sessions (conversations: documents,
// transcripts, the activity catalog, search, the truncation guard), tasks
// (background tasks), kanban (the board and its rules) and gatewaystate
// (the gateway's responses, conversations and runs). They keep the same
// split: a record is a document, what happens to it over time is a log.
// Each also keeps an index so that the common question does not read
// every record (the activity catalog of sessions, the running markers and
// finished log of tasks, the open markers of the board, the response
// index of the gateway). An index is always a cache, and a crash leaves it
// stale only in ways its readers detect; fsck --repair rebuilds it from
// the records.
//
// # Changes that write several files
//
// A change that writes several files has one commit point: the write
// after which it has happened. A failure before it is undone before the
// error is returned, so a command exits 0 if and only if its change is
// durable, and a command that fails has changed nothing a reader sees
// (a lock sidecar or an empty directory may stay: they hold no record). A session's catalog line written before a commit that fails
// is taken back: cut off, or followed by a line that says what the
// document says, so the catalog never tells another story than the
// documents; a document whose rename was done when the directory's sync
// failed is put back as it was. A crash before the commit point leaves what
// the list below says, which readers skip and someone named cleans up.
// Files are listed in the order they are written; "(cache)" marks an
// index a reader checks against the records.
//
//	operation                 files, in order                        commit point      a crash before it leaves       cleaned by
//	session create            id index (cache), transcript (empty),  document          a transcript without a         fsck --repair: a document
//	                          catalog (cache), document (the caches                    document                       made from it (recovered)
//	                          unsynced)
//	session import (new)      id index (cache), transcript with the  document          the same, with the messages    the same: nothing is lost
//	                          messages, catalog (cache), document
//	                          (the caches unsynced)
//	session append            transcript, catalog (cache, after the  transcript sync,  a torn tail; a catalog line   the next append moves it
//	                          transcript's sync, unsynced);          or the document   lost (behind the transcript)   aside; fsck --repair
//	                          document at the first user message                                                      levels the catalog
//	session save --force,     copy aside (.replaced-), catalog       document          the new transcript, its copy   fsck --repair: the count;
//	import --force            (cache), transcript, document                            aside, the document behind     the copy stays, a note
//	session rename, end, …    catalog (cache), document              document          a catalog line that says what  fsck reports it; --repair
//	                                                                                   the document does not          rebuilds the catalog
//	session delete, prune     document removed, transcript, copies   document removed  a transcript without a         fsck --repair (recovered)
//	                          aside, lock                                              document
//	board task create         open marker (cache), events,           document          a marker, an events log        OpenTasks (the marker);
//	                          document                                                 without a document             fsck --repair (the log,
//	                                                                                                                  to lost+found)
//	board change (claim,      events, document; open marker          document          events later than the          readers skip them; the
//	block, complete, …)       removed when done or archived                            document's updated_at          next change moves them
//	                                                                                                                  aside (.uncommitted-)
//	board comment             comments log                           its line          a torn tail                    the next comment
//	dispatcher claim          claim (a board change, the previous    the claim's       a run whose worker task has    the next tick: the run
//	                          document kept as a link), worker's     outcome: kept,    no record; a stray link        is lost (crashed);
//	                          task record, its outcome               blocked, or the   (.<id>.json.tmp-undo-…)        fsck --repair (the link,
//	                                                                 claim undone                                     to lost+found)
//	background task create    running marker (cache), log (empty),   record            a marker without a record,     fsck --repair (the
//	                          record                                                   an empty log                   marker); the log stays
//	background task start     record (supervisor pid), command       the command's     a record that says running     recovery marks it lost
//	                          started, record (pid)                  start             with no command                when its supervisor is
//	                                                                                                                  gone
//	background task finish    finished log (cache), record; running  record            a finished line whose record   readers skip it; the
//	                          marker removed                                           says running                   next finish writes it again
//
// The dispatcher claims a task before its worker starts, since the worker
// needs its run and claim. The claim records the worker's task id first,
// so that a crash in between leaves a run whose worker has no record,
// which the next tick finds lost. Its outcome is then stored: the claim
// stands, or the task is blocked (spawn_failed). When not even that can
// be written (a full disk), the claim is undone: the document it replaced,
// kept as a hard link (a link needs no space), is renamed back and the
// claim's events cut off, and the command exits 1 with the task ready
// (the worker's own record of its failed start stays in the task
// history, when it could be written). A background task whose command
// could not start is recorded as failed (exit 127), or, when not even
// that can be written, its record is discarded (tasks.Store.Discard).
// Once a command has started, nothing undoes it: a failure to record its
// end leaves the record running until recovery marks it lost. The
// gateway's own writes are described in the doc of cmd/gateway.
//
// # Times
//
// A record's times are of type Time, which is written in TimeLayout
// whatever form it holds: RFC 3339, UTC, microseconds, 27 bytes. A
// message's own ts (an import's, a client's) is stored in that form,
// whatever zone it came in, and text that is not a time is refused before
// anything is written. Times are read as they are on disk and compared as
// instants (Time.Before, Later), never as text, so a line written before
// that rule still sorts by its instant; fsck reports a session document
// whose times are in another form, and --repair rewrites it without moving
// an instant.
//
// # Recovery procedure
//
// Nothing is repaired by deleting. Each step keeps the damaged bytes:
//
//  1. Torn tail: bytes after the last newline of a log were a write cut
//     short by a crash, never acknowledged. Readers skip them and report
//     them (*TornTail, with the offset). The next writer, under the lock,
//     copies them to <log>.torn-<unix> (synced), truncates the log to its
//     last newline, syncs it, and appends.
//  2. Corrupt record: a complete line in the middle of a log that does not
//     parse cannot come from a crash. It is reported as *CorruptError with
//     its path and offset and left in place for a person to look at; fsck
//     reads every line with the full decoder and reports each one. (The
//     fast reader of transcripts refuses every line the full decoder
//     refuses: it checks seq, ts, each string (no control byte, no bad
//     escape) and, with json.Valid, each object, array, number and
//     literal. A line damaged inside a value, with its shape intact,
//     goes to the full decoder and is reported like any other.)
//  3. Unreadable document: a document that does not parse is renamed to
//     <doc>.corrupt-<unix> under the record's lock and reported. Nothing
//     replaces it with an empty default. For a session, fsck --repair then
//     makes a new document from the transcript (source "recovered", state
//     active, so no prune removes it unseen); the old one stays aside.
//  4. Stale caches: a document count ahead of its transcript is rewritten
//     from the transcript (one behind is the normal state, see Sessions).
//     A catalog that lacks a session is rebuilt from the documents.
//  5. Stray temp files (.<name>.tmp-*) older than a minute are left by a
//     write that crashed before its rename. The old document is intact; fsck
//     --repair moves the temp file to <profile>/lost+found/.
//
// # Hosts
//
// A pid means something only on the host that runs its process. Every
// record that names a process names its host too (host, ThisHost: the
// hostname, the boot id and a pid namespace other than the first, or
// $HERMES_HOST_ID), so that another host that shares the profile judges
// the process by a heartbeat and a lease instead (package tasks), never by
// its own process table. A record written before hosts were recorded
// names none and is taken to be this host's. A lease never compares one
// host's clock with another's stamp: the observer watches the heartbeat
// change, and judges by its own monotonic clock how long it has not
// (package hosts), so that hosts whose clocks disagree judge each other
// right.
//
// # Fencing
//
// A lock can be lost without its holder knowing: on a network filesystem
// the servers drop a client's flocks with its connection (GlusterFS after
// its keepalive, about 40 s), another host then takes the lock, and the
// client, reconnected, writes through descriptors it opened before. A
// holder paused (a frozen VM) across that time wakes with a decision made
// on what it read before: a line numbered from an end that is no longer
// the end, a document changed from one that is no longer the document.
// flock cannot tell it. Three ways to fence it were weighed:
//
//   - Lock the file written instead of a sidecar, so that a descriptor
//     whose lock was lost is refused (GlusterFS's client.strict-locks):
//     a document is replaced by rename, and a lock on the inode replaced
//     guards nothing (hence the sidecars), and only GlusterFS refuses such
//     a descriptor, only with an option set.
//   - Check at commit that a log still ends where its writer read it under
//     the lock. What an append numbers from is that end (a transcript's
//     next seq is the last line's plus one); if another writer appended
//     since, the writer's lock was lost. It needs nothing new on disk and
//     no other file read, but it fences only logs.
//   - A fencing token: each holder writes a token of its own in the lock's
//     file as it takes the lock, and a write checks at commit that the
//     file still holds it. A file server does not check a token, so the
//     writer reads it back before it commits: a check of the same kind as
//     the log's end, at the cost of a read of the lock's file, and it
//     fences a document too.
//
// Both checks are made, each at one commit point. An append is fenced by
// its log's end, at WriteLines (AppendLines, AppendThen and AppendLog
// write through it): OpenAppend leaves the descriptor's offset at the end
// it read (from the server: FreshSize), and WriteLines reads the size
// again before it writes. A log that no longer ends there refuses the
// append with a *FencedError (ErrRefused: exit 4), and nothing is
// written. A holder that loses its lock between that check and its write
// (microseconds, where a pause past a keepalive is tens of seconds) is
// caught after it: a log that does not end at the lines' end is read
// back, and lines of this writer that landed after another writer's are
// moved to <log>.fenced-<unix> and the append refused, naming the copy;
// lines that landed where their writer read the end stand (the other
// writer's check moves its own aside). A batch is written a line at a
// time, so a holder paused between two of its lines leaves its first lines
// where it read the end, the other writer's after them (numbered after
// those first lines, which it read), and its other lines at the end: those
// are moved aside, the first stay, and the refusal says how many of each
// (splitLanding). Lines mixed any other way are reported as an unknown
// outcome, for fsck. An append that fails later (its
// sync, its commit) is cut back only while the log still ends with its
// lines: a cut after another writer's lines would remove them.
//
// A document is fenced by its lock's token, at its rename (WriteAtomic,
// WriteDoc; not the caches of WriteCacheFile): Lock records the holder
// ({"host","pid","at","token"}) and keeps the token in the process
// (CheckHeld), and before the rename every lock the process holds over
// the document (X.lock guards X and X.* in its directory) is read again:
// a file that holds another token, or none (its taker let it go), or is
// gone, refuses the write with a *LockLostError (ErrRefused), and the temp
// file is removed. A change
// whose commit point is its document (a board change, a cron claim, a
// background task's record, a session's rename or end) is so refused
// whole: the log lines it wrote first are cut back (AppendThen). The
// token tells holders apart across processes and hosts, which is where
// locks are lost; two holders of one lock in one process (a lock lost by
// a goroutine and taken by another) share the process's record of it,
// and only the log's end tells them apart.
//
// # Waiters
//
// A lock can be held by a process that wrote no holder record: on a
// network filesystem a host cut off from the servers as the lock came to
// its waiting flock never learns that it holds it, and the servers keep
// the lock for it until they drop its connection (GlusterFS's keepalive).
// So a process that has to wait for an exclusive lock (its first try
// failed) records itself first, in the lock's waiters' record,
// <lock>.waiters: one line {"host","pid","since","token"} a waiter,
// rewritten in place under a flock of the record itself, taken without
// blocking for at most 50 ms (one whose host was cut off while it held it
// would otherwise stall every waiter: past that, the waiter waits
// unrecorded). Its line goes when its wait ends: after its holder record
// is written when it took the lock, so that one of the two always names
// it, or as it gives up; the record is removed with its last line. A wait
// that times out and finds no holder record names the other waiters
// recorded, as the likely holder: "held by a process that wrote no
// record; waiting for it when it was granted: pid N on host b, waiting
// since …". A line its waiter could not remove (killed, or cut off) is
// dropped by the next waiter to join: a process of its own host that is
// gone, or any line older than a day (no wait lasts that long, and a day
// dwarfs any disagreement of clocks). A lock taken at the first try reads
// and writes nothing of it, and shared locks do not record their waits.
// The record is not synced: it names, it keeps nothing. It costs a wait
// its line's write and removal: BenchmarkLockHandoff (release to the
// waiter's return, its line removed) went from 177 to 197 µs, medians of
// 7 paired runs on a local disk at a load average of 13 (127 to 166 µs
// at 5.5).
//
// # Idempotency keys
//
// A verb's --key K (CheckKey; the record named by KeyName) stores its
// change at most once for K, so that a script may retry a command whose
// outcome it does not know. The record is kept for KeyLifetime, a week,
// after it was written: a retry within it stores nothing twice, and one
// after it is a new key. The stores that keep such records (tasks run,
// kanban create and comment, cron run) sweep their key directory when a
// new key's record is written, at most once a day (SweepKeys, SweepDaily:
// the directory's .swept file says when last, stamped before the sweep so
// that other commands and hosts skip theirs meanwhile): each record
// written more than KeyLifetime ago goes under its lock, taken without
// waiting, with its lock file; one held stays for the next sweep. The
// keys of sessions append --key are the gateway's records (a day, package
// gatewaystate), swept the same way by the keyed appends themselves, so
// that a profile no gateway serves does not keep them for ever. No prune
// verb or fsck is needed, and a sweep's failure is not its command's.
//
// # Errors
//
// Errors wrap their cause with %w and name the path. Their kind is tested
// with errors.Is: ErrNotFound, ErrInvalid, ErrRefused; or errors.As:
// *LockTimeoutError, *LockInterruptedError (which is also
// context.Canceled), *CorruptError. IsDiskFull tells a full disk apart.
//
// A command that opens a profile on a network filesystem (NetworkFS: one
// statfs of the profile directory: its f_type on Linux, its
// f_fstypename on macOS and FreeBSD) warns once per profile and
// filesystem type (NetFSOnce), remembered by the type written to
// <profile>/.netfs-warned; where that cannot be written it warns each time.
// The marker holds no record, so a command that then refuses its input has
// still changed nothing a reader of the profile sees.
//
// # Testing
//
// The write recipes' steps (the temp file's creation, the write, the
// sync, the rename, a directory's mkdir, a lock sidecar's creation) go
// through fsstore/internal/seam, where a fault-injection test fails one
// chosen step for the files under its own temporary directory
// (seam.Install, storetest.SetSeams): the recipes keep the one code path
// production runs, rather than taking a filesystem value every store and
// command would carry for tests alone, and a fault stays with the test
// that made it, so that the fault tests run in parallel with each other
// and under -race. Production installs nothing; a step costs one atomic
// load more than its os call.
package fsstore
