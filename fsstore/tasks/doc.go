// Package tasks keeps the history of background tasks: a Store holds the
// record of every command run under a supervisor (hermes tasks run, an
// agent's background terminal call, a kanban worker), on the engine of
// package fsstore.
//
// A task's record (<id>.json) is rewritten atomically when the task starts
// and when it finishes; its output (<id>.log) is written by the command
// itself, so it survives its supervisor. Two indexes keep the common
// questions from reading every record: a marker in .running/ for each task
// not yet finished (recovery looks only there) and .finished.jsonl, one
// line per finished task in the order they finished (history reads it
// backwards). The markers are written before the record and the finished
// line before the record's final write, so a crash leaves an index stale
// only in ways its readers detect (an entry whose record says otherwise is
// skipped). The records are the truth: RebuildIndex (fsck --repair) makes
// the indexes again from them. A Finish whose record cannot be written
// cuts its finished line off again, and a task whose command could not
// start, when not even that can be recorded, is discarded (Discard), so
// that a failure leaves no record of a command that never ran.
//
// Deletion is explicit: Prune removes only finished tasks, says what it
// removes, and has a dry run.
package tasks
