// Package cron keeps the scheduled jobs of a profile and every run of
// them, on the engine of package fsstore, so that each occurrence of a job
// runs at most once however many tickers (cron tick, cron daemon, a
// gateway) look at the profile, on however many hosts.
//
// Layout, under <profile>/cron/:
//
//	jobs/<id>.json   a job's document (Job): what it runs, its schedule and
//	                 zone, catch_up, paused and why, next_due, its failure
//	                 streak, its last run, and its run in progress (run)
//	jobs/<id>.lock   the job's sidecar lock
//	runs.jsonl       the runs log (Event), every job's, append-only:
//	                 claimed (occurrence, host, pid, missed), started (task
//	                 and session ids), finished (status, exit code,
//	                 duration), lost, skipped (how many)
//	runs.lock        the lock of the runs log
//	due.json         the due index: an entry per job that a tick may have
//	                 to look at, in time order
//	due.lock         the lock of the due index, and of job names
//	keys/<hash>.json what a key of cron run --key claimed: the job and the
//	                 occurrence (ClaimNowOnce); <hash>.json.lock its lock
//
// Locks are taken in one order: a key's, then a job's, then the runs
// log's; the due index's, then (for a new name) no other. A job's lock is
// never taken while the index's is held.
//
// Keyed runs. cron run --key K claims a run of a job at most once for K
// (ClaimNowOnce), so that a script may run it again when it does not know
// how the first ended: under the key's lock, and then the job's once the
// job is found free, the key's record (job, occurrence) is written and
// synced, then the occurrence claimed. A retry finds the run the key
// claimed (the job's run in progress, or the occurrence settled in the
// runs log), claims nothing, and prints its task; the key with another
// job is refused (ErrInvalid). A key recorded whose claim was not (a
// crash between, a claim that could not be written) claims its
// occurrence at the next call with it. A run the key claimed whose task
// never started is not run again: the retry is refused, saying so. A
// key's record is kept a week (fsstore.KeyLifetime, SweepKeys).
//
// Exactly once. A tick reads the due index from its start up to the first
// entry in the future, and for each job due takes the job's lock and
// reads its document: the occurrence it finds in next_due, if that is not
// after now, is claimed by writing the document with next_due moved on
// and run set to the claim (host, pid, time), the compare-and-swap that a
// second ticker, reading the document after the lock, finds already done.
// The claimed line is appended to the runs log before the document is
// written (the commit point); a failure of either leaves both as they
// were. A ticker killed between the two leaves a claimed line that the
// next claim of the same occurrence repeats (readers take the later); so
// does a line of a start or a finish (the run's later lines settle it). Only then is the run started: its start (task id) is recorded
// under the lock before the task is made, and refused once the claim is
// older than ClaimLease. A ticker killed between the claim and the start
// leaves the claim; the due index brings the next tick to the job when the
// lease ends, and it records the occurrence lost: an occurrence whose
// outcome is unknown is never run again by itself. A start that cannot be
// written (a full disk) is not left to the lease: its ticker records the
// claim lost at once, under the same lock (the occurrence did not run;
// recording it lost, rather than releasing it, keeps a full disk from
// claiming it again every tick), or, when that cannot be written either,
// leaves it to the lease. A started run is
// finished by its task (cron exec records the outcome); one whose task
// ended without that, or was never made (its ticker killed after the
// start), is recorded with the task's outcome, or lost, by a tick that
// reads the job once ClaimLease has passed since the start: the due index
// brings one, paused job or not. A job runs once at a time:
// while a run is in progress nothing is claimed, and the occurrences that
// fall due meanwhile are caught up when it ends.
//
// Catch-up. The occurrences due when a tick reads a job, the last one
// included, are taken by its catch_up: once (the default) claims the last,
// recording in the claim how many it stands for (missed); none records the
// earlier ones skipped and claims the last only if it is at most OnTime
// late; all claims each in turn, one run after the other.
//
// Failing jobs. A failed or killed run adds one to the job's failure
// streak, a succeeded one sets it to 0, a lost one (outcome unknown)
// leaves it. When it reaches MaxFailures (cron.max_failures, default 3)
// the job pauses itself, and paused_reason says why; cron resume clears
// both the pause and the reason.
//
// Clocks. A claim, and the start that follows it, judge due times and
// stamp claims by this host's clock less its skew ahead of the shared
// filesystem's (Store.Skew, hosts.Clock.Offset), so that a host whose
// clock is ahead runs no occurrence early and a catch-up-all job runs no
// burst of occurrences only its clock finds due; a host past
// hosts.MaxSkew claims nothing (ErrRefused), and a tick says so once.
// The quiet tick reads the due index by the uncorrected clock, which can
// only find more due, never fewer, and measures nothing.
//
// Schedules (ParseSchedule) are read as wall-clock times in the job's
// zone. On the day a daylight-saving change skips an hour, a time in it
// runs once, at the end of the gap (02:30 in Europe/Berlin on the last
// Sunday of March runs at 03:00 CEST); on the day a change repeats an
// hour, a time in it runs once, the first time (02:30 CEST, not 02:30
// CET). "every" counts from the job's creation in real time, whatever the
// zone; "at" runs once.
//
// The due index is a cache of the documents: its entry for a job may be
// earlier than the document says, which costs a tick one read that puts it
// right, never later. A change that brings a job's instant forward (add,
// edit, resume) lowers the entry before the document is written; every
// other change rewrites the entry from the document after it, under the
// index's lock. A tick that finds the index missing or unreadable rebuilds
// it from the documents (moving an unreadable one aside); fsck checks it
// against them, and fsck --repair writes it again.
package cron
