// Package supervisor runs background tasks and recovers from their
// supervisors' deaths.
//
// A task's command runs in its own process group, with stdout and stderr
// opened on the task's log file: the command writes its output itself, so
// the log survives the supervisor. The supervisor starts the command,
// records its pid and start time, waits for it and records how it ended.
// For `hermes tasks run --wait` the supervisor is the hermes process in the
// foreground, and it copies the log to its stdout as it grows; otherwise it
// is hermes re-executed in its own process session (`tasks supervise`),
// which outlives the caller and the terminal.
//
// Processes are identified by pid and start time (field 22 of
// /proc/<pid>/stat on Linux; on macOS and FreeBSD, which have no /proc,
// the start time sysctl kern.proc.pid gives), so a reused pid is never
// taken for a task's. A task's process group, its signals and the
// supervisor's reaping are POSIX's, the same on the three systems.
// Reconcile, run by every command that reads tasks, marks lost the running
// tasks whose supervisor and command are both gone; while the command
// lives on, the task stays running, and Reconcile renews its lease in the
// supervisor's stead. Until a re-executed supervisor writes its own pid,
// the caller's stands in; a caller that dies first leaves a task that
// Reconcile may mark lost, and a supervisor that then finds its task ended
// does not run the command: the record said it ended, and it did.
//
// Pids are looked up only on the task's own host (its record's host; one
// that names none is taken to be this host's). A task of another host is
// judged by its lease instead: Supervise heartbeats it every 10 s, and
// Reconcile on another host marks it lost only once it has watched 60 s
// pass on its own monotonic clock without a heartbeat (tasks.HeartbeatEvery,
// tasks.Lease, tasks.Store.LeaseHeld). Kill refuses a task of
// another host (exit 4): its pid may be any process here.
//
// Exit codes: a command that exits with code N is "succeeded" (N = 0) or
// "failed"; one killed by a signal is "killed", with exit_code null and the
// signal's name, and `wait` exits 128 + the signal's number, as shells do. A
// command that cannot be started is "failed" with exit code 127.
package supervisor
