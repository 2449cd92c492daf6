// Package kanban keeps a profile's kanban board: a Board holds its tasks,
// their runs, comments and events, on the engine of package fsstore, and
// is the one home of the board's rules (kanban_rules.go).
//
// A task's states and the rules (kanban_rules.go, deps.go, retry.go) that
// move it, each one compare-and-swap of its document:
//
//	from            to                  by
//	(new)           ready               Create (not_before: --at)
//	(new)           todo                Create with Status todo, or with parents
//	todo            ready               Ready (refused while a parent is not done);
//	                                    a waiting task: read as ready from the commit
//	                                    that completes its last parent (deps.go)
//	ready           todo                Link to a parent not done
//	ready, waiting  running             Claim (refused before not_before or within a
//	                                    retry's backoff, lease.go, or while a parent
//	                                    is not done)
//	running         done                Complete
//	running         blocked             Block, FailRun of spawn_failed, the failure
//	                                    that reaches the limit (gave_up)
//	running         todo                Block by its worker while a subtask is not
//	                                    done: it waits (subtask.go)
//	running         ready               FailRun (crashed, protocol_violation) and
//	                                    Reclaim under the limit, after a backoff
//	blocked         ready (todo)        Unblock (todo when the task has parents)
//	todo, ready     blocked             Block
//	not running     archived            Archive
//
// A task is a document that holds its runs, so that a claim (the task
// becomes running and gains a run) is one atomic write: a compare-and-swap
// under the task's lock (Update). Each rule (claim, block, complete,
// heartbeat, unblock, ready, archive, register session, and the
// dispatcher's fail run and reclaim) is one such compare-and-swap, refused
// with fsstore.ErrRefused when the task is not in a state that allows it;
// a worker acts only for its own run and claim, so a stale worker cannot
// change a task it lost. What happens to a task over time is in its events
// log, what people and workers say in its comments log, both append-only.
//
// A change writes its events first, then the document, its commit point;
// a failure cuts the events back, so a command that fails changed nothing.
// Every event of a change has the document's new updated_at as its ts, so
// an event later than the document's updated_at belongs to a change that
// a crash cut off before its document: readers skip it, and the next
// change of the task moves it aside (<log>.uncommitted-<unix>) before it
// appends. A comment is one line of the comments log and nothing else;
// Events reads each as a "commented" event.
//
// On a filesystem shared by several hosts (GlusterFS through FUSE) a
// client's caches may, for about a second, show a document as it was
// before another host replaced it, even under the task's lock, while the
// events log, appended to in place, is seen as it is. Events later than
// the document read are then another host's committed change, not a
// crash's. So before a change takes such events for a crash's, it
// re-reads the document every 100 ms for 2 s (staleWindow, twice the 1 s
// GlusterFS keeps attributes and entries): if the document has changed
// since it was read, nothing is written, and the change is decided again,
// once, on the document the window saw (a second stale view is refused
// with ErrRefused, exit 4). So a claim of a task another host claimed is
// refused by the rules, which a dispatcher takes for a task someone else
// claimed, a worker's complete lands on the document that holds its run,
// and a create finds the task made. Only a document
// that stays as read through the window leaves the events to a crash. On
// a local filesystem such events follow only a crash, and a read is never
// stale: the window is for a board on FUSE or a network filesystem
// (fsstore.NetworkFS), and a local one handles the crash at once.
//
// Each claim adds one run to the document in the change that logs its
// "claimed" event, so fsck reports a task whose events log holds more
// committed claims than its document holds runs: a claim whose document
// another claim overwrote (two hosts that each saw the task ready through
// a stale cache of a network filesystem). The events log is the record of
// what happened; fsck --repair cannot make the lost run again and leaves
// the task reported.
//
// A run records the host of its claimer (host), where its worker runs:
// its worker's liveness is judged there by pid and elsewhere by the
// worker's lease (package tasks), and only there can an expired claim's
// worker be stopped. A run claimed before hosts were recorded names none.
//
// A claim's expiry (claim_expires) is stamped by the clock of the host
// that claimed or heartbeated, and is compared with no clock: a host takes
// a claim for expired once it has watched it (its run, lock and expiry)
// stay unchanged for the claim's TTL by its own monotonic clock
// (ClaimWatched, lease.go, package hosts). A claim or a heartbeat records
// the writer's sighting, so on its host the TTL runs from the write. A
// retry's backoff (retry_backoff_ms) is watched alike: a host claims the
// retry once it has watched it for the backoff (Due), so a host whose
// clock is ahead of the failing host's does not find its not_before
// passed early. A host whose clock is past hosts.MaxSkew from the shared
// filesystem's claims nothing (CheckClock), saying why.
//
// The dispatcher claims with ClaimPending: until the claim's outcome (its
// worker started, or could not) is stored, the document the claim
// replaced is kept as a hidden hard link, and Undo renames it back when
// not even the outcome can be written (a full disk), which needs no space.
//
// A create with an idempotency key (CreateOnce) first records the new
// task's id in keys/<hash of the key>, under that file's lock, then
// creates the task: the key's file is the commit point, and a crash
// before the task is mended by the next create with the key, which makes
// the task with the recorded id. A comment with a key (AddCommentOnce)
// first records, in keys/<hash>.comment.json under that file's lock, the
// task, a digest of author and text, and the comment's id and time, then
// appends the comment: a call with the key that finds the comment in the
// task's comments writes nothing, one that does not (the first call's
// append failed after the record) appends it with the recorded id and
// time, and the key with another task or text is refused.
//
// A worker's subtask is made in one commit, its document naming the task
// that waits for it; the task's parents gain it after, and are mended by
// the worker's block (subtask.go).
//
// A marker in open/ for each task not done or archived lets a dispatch
// tick read only the open tasks. It is written before the task's document
// and removed after it, so a stale marker names a task whose document says
// otherwise, and readers skip it.
package kanban
