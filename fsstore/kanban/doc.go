// Package kanban keeps a profile's kanban board: a Board holds its tasks,
// their runs, comments and events, on the engine of package fsstore, and
// is the one home of the board's rules (kanban_rules.go).
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
// A marker in open/ for each task not done or archived lets a dispatch
// tick read only the open tasks. It is written before the task's document
// and removed after it, so a stale marker names a task whose document says
// otherwise, and readers skip it.
package kanban
