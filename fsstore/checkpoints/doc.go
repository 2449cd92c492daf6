// Package checkpoints keeps the bytes of files before the agent changed
// them, so that a turn can be taken back with its file changes (DESIGN.md
// invariant 18).
//
// # Layout
//
//	checkpoints/objects/<2 hex>/b3-<62 hex>   a file's bytes, as they are or gzip-compressed,
//	                                          named by the BLAKE3 of the bytes (not of the gzip)
//	checkpoints/objects/<2 hex>/<62 hex>      the same, named by their SHA-256 (an earlier build's)
//	checkpoints/objects/.stage-*              an object's bytes written while they are hashed
//	checkpoints/pending/<session>.jsonl       the session's changes in flight (Pending), one a line;
//	                                          <session>.lock its lock
//
// An object is written once (Put and Save return at once when it exists),
// through a temp file that is synced, renamed and whose directory is
// synced, so that an object that exists is whole; Get checks the bytes
// against the name. Binary files are bytes like any other. Put (a
// restore's present bytes, a shell snapshot) compresses; Save (a tool's
// before-image) stores the bytes as they are, and Compress (run by every
// prune) compresses them later, through a temp file renamed over the
// object. Get reads either: a file that starts as gzip does and whose
// stream hashes to the name is compressed, one whose own bytes hash to
// it is stored as it is (a .gz file saved as it is), anything else is
// corrupt.
//
// # Hashes
//
// An object's name, and the hashes a record holds, are "b3-" and the
// BLAKE3-256 of the bytes in lower-case hex (Hash), spread over
// objects/<first two hex digits of the digest>/. Builds before named them
// by their SHA-256, 64 hex digits with no prefix, and such a store is
// read as it is: the prefix tells the algorithm apart, on each hash,
// wherever a hash is compared with bytes (Get, Compress, fsck, a
// restore's and Resolve's comparison with the present file, which hash
// the file in the algorithm of the hash they compare it with: Matches,
// NewHasher). A prefix rather than a field of the record, since a hash
// travels alone (an object's name, unrestorable.json's keys, a pending
// record, a restore's target whose before and after may come from
// records of both builds) and must say how it was made wherever it goes;
// and a prefix that is not hex, so that no name of one kind is a name of
// the other.
//
// Why BLAKE3: a before-image's hash is on a tool's path (below), and on
// the processors hermes runs on a SHA-256 without SHA instructions takes
// 3.5 to 5.5 ms for 1 MB, where BLAKE3 (github.com/zeebo/blake3: AVX2 and
// SSE4.1 on amd64, pure Go elsewhere) takes about 0.5 ms, and 5 against
// 16 microseconds for 4 KB. Objects are not deduplicated across the two
// algorithms: bytes stored by an earlier build and saved again are
// stored again under their BLAKE3, and the SHA-256 object goes when no
// record names it, by the rules of any object.
//
// # Records
//
// The transcript is the truth: the changes a tool call made are a list of
// Change in the "checkpoint" field of its tool message's line (Field), in
// the same append as the result the model reads. A Change names the
// file's absolute path, the hash of its prior bytes (before, an object),
// the hash of the bytes the call wrote (after, which is not stored: the
// file holds them until someone changes it), the prior mode, and whether
// the call created or removed it. A file larger than checkpoints.max_file
// (DefaultMaxFile, 16 MiB), or one hermes could not read, is changed
// without a checkpoint: its Change says why in not_checkpointed, and the
// tool's result says so to the model and the user. A record is named
// <session>:<seq>, the line that holds it; a fork copies the lines, so a
// forked session holds its parent's records up to the fork.
//
// A restore is recorded the same way: the present bytes of each file it
// replaces are stored first, and its line (a note appended to the session
// it restored) holds a Change for each file, so a restore can itself be
// taken back.
//
// # A change and a crash
//
// A tool call that changes a file does, in order:
//
//  1. The assistant message holding the call is synced (the engine does
//     this before any call runs).
//  2. The file's prior bytes are stored (Put, synced).
//  3. A Pending record naming the session, the call and its changes so
//     far, with the hash the file is about to get, is appended to the
//     session's pending log and synced.
//  4. The file is replaced atomically (temp file, sync, rename, directory
//     sync).
//  5. The tool message with the changes is appended and synced.
//  6. The Pending record is taken out of the log (not synced).
//
// A crash before 3 leaves at most an object nothing refers to (prune
// removes it) and an unchanged file. A crash between 3 and 5 leaves a
// call without a result and its Pending record: the engine answers the
// call as interrupted at the session's next turn, and that answer records
// the changes the Pending record names, each resolved by comparing the
// file: a file that holds the after bytes was changed (recorded), one
// that holds its before bytes (or is absent, for a file the call would
// have created) was not (left out), and one that holds neither was
// changed by someone else since (recorded, so that a restore reports it
// as a conflict rather than overwrite it). So there is never a record
// of a change that did not happen, and never a change without its
// before-image. A crash between 5 and 6 leaves a Pending record whose
// call has its result: it is stale; fsck reports it, and --repair takes
// it out.
//
// A call the engine abandoned (it did not end within its grace after a
// timeout or a cancelled turn) has its one result stored at once, which
// records none of its changes; if it changes files afterwards, its
// changes are recorded in a note appended to the session when it ends
// (Late), and its Pending record goes. A process that ends before the
// call does leaves the Pending record of a call that has its result but
// not those changes: fsck reports it, and --repair records in such a
// note the changes their files show were made (Resolve, the rule above),
// then moves the record aside.
//
// # The cost of a checkpoint
//
// A change's before-image is on the tool's path: the tool waits for it
// before its rename. What it costs, and what was kept off that path
// (measured on a 1 MB file, a two-core machine without SHA
// instructions: a SHA-256 took 4 to 5 ms, a BLAKE3 takes 0.5 ms, a gzip
// at its fastest 5 to 6 ms, an fsync 1 to 2 ms):
//
//   - The hash of the prior bytes is not computed again when they are the
//     bytes the store's previous change wrote to that path (Wrote,
//     Remembered): the store keeps those bytes, up to 64 MiB in all, and a
//     comparison (a fraction of a millisecond) proves them the same. A
//     stat cache (size, times) would be cheaper still, but a file
//     rewritten in place within the clock's tick keeps its times: the
//     bytes are compared, never trusted. When they must be hashed (the
//     file's first change in this process, or one the user changed
//     since), the object's bytes are written to a temp file in objects/
//     and synced while they are hashed (SaveHashing), then renamed to
//     their name: the hash runs beside the object's write rather than
//     before it. Where the object turns out to be stored already, the
//     temp file is removed, not synced unless its sync had begun; one a
//     crash leaves (objects/.stage-*) is removed by a prune once MinAge
//     old.
//   - The object is stored as it is (Save), not compressed: the gzip costs
//     more than the write it spares. A prune compresses what is stored so
//     (Compress), so the store's size between two prunes is the bytes of
//     every version, and after one about a seventh of it for source code.
//   - The object and the pending record are written at once, beside the
//     tool's temp file; the hash of the new bytes, which the pending
//     record needs, runs beside them too. edit_file begins the object as
//     soon as it has read the file, beside its search and replace (for
//     1 MB, 1 to 2 ms of processor that the object's write and sync no
//     longer wait for); an edit refused after that (its old_string not
//     found) leaves the object stored, which nothing refers to, as a
//     crash before step 3 does: it is the before-image of the file's
//     next change, and a prune removes it otherwise.
//   - The pending records of a session are lines of one append-only log,
//     pending/<session>.jsonl, made by the session's first change (its
//     create committed by a sync of pending/) and kept: a record is one
//     write and one sync of a file that exists, no temp file, no rename,
//     no directory sync. Taking it out is not synced (a record a crash
//     brings back is stale, and is treated as one): the log is emptied
//     when no other call of the session is in flight, else a line marks
//     the call done; a log past 256 KiB whose other records are in flight
//     (one left stale by a crash keeps it from emptying) is rewritten
//     with only those, synced, since it holds records still needed. The
//     log's lock (flock, as every log's) orders the calls of a session,
//     which may run at once, and hosts sharing the profile. A torn last
//     line (an append a crash cut short, whose change was never made,
//     since the tool waits for its sync) is skipped by readers and moved
//     aside by the next writer, as in every log.
//
// So what a change syncs in the store before its file is touched is its
// object, when it is new, and the object's directory (and objects/, when
// the object is the first of its objects/<2 hex>), then one line of the
// pending log; when the object is stored already (the file's bytes were
// stored before, by an earlier change or another session), only the
// line: 1 sync against 2 when each record was a file of its own (the
// file and its directory), and 3 against 4 with a new object
// (TestEditSyncs counts them). That is what invariant 18 needs and no
// more: the bytes and their name, so that a restore finds them, and the
// record of the change in flight, so that a crash after the rename is
// resolved. An object's two syncs are
// not replaced by the log: a before-image is written once and read for
// as long as a checkpoint names it, and an object's name is its only
// index.
//
// What is left is the disk: the edit without a checkpoint syncs its temp
// file and its directory; with one, a new object's bytes are a second
// write of the file's size that must be durable before the rename, and
// the pending line's sync, which on a journalling filesystem commits
// with the 1 MB writes in flight beside it; the new bytes' BLAKE3 (0.5
// ms for 1 MB) runs beside the temp file's write and sync. A hard
// link of the old file into the store, where the tool renames over it,
// would spare the object's write but not its syncs, and would share an
// inode with the user's file until the rename, which anything still
// holding the file open could write through: not done.
//
// # fsck
//
// Check walks every session's records: an object a record names that is
// missing or does not hash to its name is a problem; --repair moves a
// corrupt one to lost+found (so that Put, which skips an object that
// exists, can store the same bytes again) and marks the hash lost in
// checkpoints/unrestorable.json, never touching the records. A pending
// record whose call has its result is stale (--repair writes it to
// lost+found as a document and takes it out of its log, synced); one
// whose call has its result but whose changes no record holds is an
// abandoned call's late changes (recorded by --repair, above);
// one whose call has none is left for the session's next turn;
// a restore's is a restore to run again, unless a record of its session
// holds the same changes (a crash after the note): stale, moved aside.
//
// # Prune
//
// Prune first compresses the objects stored as they are (a dry run counts
// them as they are), then removes the objects no record or pending record
// refers to, once MinAge (an hour) old, since a call stores its object a
// moment before its pending record names it; then, with PruneOptions, those
// whose newest record is older than MaxAge, then the oldest past MaxBytes.
// An object removed from under a record is marked unrestorable first, as
// fsck --repair marks a lost one.
//
// A prune also removes the pending logs, and their locks, of sessions
// that are gone (deleted, pruned) and have no record in flight.
//
// # Restore
//
// Plan turns the records after a point of a transcript into one Target
// a file: its state before the first of those changes (an object, or
// absent for a file they created), to be written only where the file is
// still what the last of them left. A file that is not is a conflict,
// left as it is, unless forced. A file whose first change was not
// checkpointed cannot be restored, and is reported so.
package checkpoints
