// Package dispatch runs the kanban dispatcher's ticks: each reconciles the
// board's running tasks with their workers, then claims ready tasks and
// starts their workers under the tasks supervisor, holding the board's
// dispatch lock so that dispatchers take turns.
//
// A running task's worker decides its fate: one that exited 0 without
// completing or blocking is a protocol violation, one that failed, was
// killed or was lost has crashed, and a claim that expired with no
// heartbeat is reclaimed after its worker is stopped; each is retried by
// the board's rules up to a limit (fsstore/kanban retry.go). A worker that
// cannot be stopped yet (its command not started) is left running, and its
// task is not reclaimed, until a tick stops it: a task has at most one
// live worker.
//
// The tasks a tick claims are the open ones that are ready and past their
// not_before, and the waiting ones whose parents are all done: a parent
// that is open is known not done without a read, so only closed parents
// are read. Claims go highest priority first, oldest first, up to
// MaxWorkers running tasks on the board and MaxInProgress of each
// assignee named, counted over every host's runs. Several hosts may
// share a board: a worker's pids are looked up only on its run's host.
// Elsewhere a run is crashed only once its worker's task is lost by its
// lease (60 s watched without a heartbeat), and an expired claim whose worker
// still holds its lease is left to a dispatcher on the worker's host,
// which can stop the worker before the task is claimed again. A worker
// of another host that has no record here (yet) is judged by its claim
// alone. A claim the board refuses, because the task changed since the
// tick read it (another dispatcher claimed it, or another host's claim was
// not yet visible here), skips the task: it is not an error of the tick.
//
// A claim has expired once this host has watched it unchanged for its
// TTL (kanban.Board.ClaimWatched), by its own monotonic clock, never when
// this host's clock passes the expiry another host's clock stamped; a dry
// run judges from what earlier ticks recorded and records nothing. A
// tick with tasks to claim on a host whose clock is past hosts.MaxSkew
// from the shared filesystem's claims none, and fails saying why (exit 4).
package dispatch
