package cron

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Claim is an occurrence a ticker has claimed and must now start.
type Claim struct {
	Job        Job
	Occurrence fsstore.Time
	Missed     int
	Manual     bool
}

func marshalLine(ev Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Claim takes job id's due occurrence, if it has one, under the job's
// lock: the compare-and-swap of next_due that makes an occurrence run
// once however many tickers look at it. First the run in progress, if
// any, is settled: a claim whose task has not started within ClaimLease
// is recorded lost (and never run); a started run whose task has ended
// without recording it (TaskOutcome) is recorded with the task's outcome.
// While a run is in progress nothing is claimed: a job runs once at a
// time, and the occurrences that fall due meanwhile are caught up by its
// catch_up when it ends. The occurrences due at now are taken by the
// job's catch_up: all, the first of them (the next claim takes the next);
// once, the last, with how many it stands for; none, the last if it is
// within OnTime, the others recorded skipped. Commit point: the job's
// document, written after the runs log's lines. ok is false when nothing
// was claimed.
func (s *Store) Claim(id string) (c Claim, ok bool, err error) {
	j, unlock, err := s.lockJob(id)
	if err != nil {
		return Claim{}, false, err
	}
	defer unlock()
	now, err := s.claimClock()
	if err != nil {
		return Claim{}, false, err
	}
	var events []Event
	changed := false
	if j.Run != nil {
		events, changed = s.settle(&j, now)
		if j.Run != nil {
			return Claim{}, false, s.commit(&j, events, changed, now)
		}
	}
	due, _ := j.NextDue.Instant()
	if j.Paused || j.NextDue == "" || due.After(now) {
		return Claim{}, false, s.commit(&j, events, changed, now)
	}
	sched, err := scheduleOf(j)
	if err != nil {
		return Claim{}, false, err
	}
	// The occurrences due: first .. last, count of them.
	first, last, count := due, due, 1
	next, more := sched.Next(due)
	for more && !next.After(now) && count < maxCount {
		last, count = next, count+1
		next, more = sched.Next(next)
	}
	occ, missed := last, count-1
	switch j.CatchUp {
	case CatchUpAll:
		occ, missed = first, 0
		next, more = sched.Next(first)
	case CatchUpNone:
		late := now.Sub(last) > OnTime
		skipped, until := count-1, prevOf(sched, first, last)
		if late {
			skipped, until = count, last
		}
		if skipped > 0 {
			events = append(events, Event{Event: Skipped, JobID: j.ID, Occurrence: fsstore.TimeOf(first),
				Until: fsstore.TimeOf(until), Missed: skipped, At: fsstore.TimeOf(now)})
		}
		missed = 0
		if late {
			j.NextDue = timeOrNone(next, more)
			return Claim{}, false, s.commit(&j, events, true, now)
		}
	}
	j.NextDue = timeOrNone(next, more)
	c = Claim{Occurrence: fsstore.TimeOf(occ), Missed: missed}
	return s.claim(&j, c, events, now)
}

// claimClock is the time a claim, and the start that follows it, judge
// by: Now less this host's skew ahead of the shared filesystem's (Skew),
// so that a host whose clock is ahead runs no occurrence early and a
// catch-up-all job runs no burst of occurrences only its clock finds due.
// Claims, starts and the leases they are judged by are stamped with it,
// so that hosts compare like with like. A host whose clock is too far off
// (hosts.MaxSkew) is refused.
func (s *Store) claimClock() (time.Time, error) {
	now := s.Now()
	if s.Skew == nil {
		return now, nil
	}
	skew, err := s.Skew()
	if err != nil {
		return time.Time{}, err
	}
	return now.Add(-skew), nil
}

// CheckClock refuses (ErrRefused) what claimClock refuses: a tick on a
// host whose clock is too far from the shared filesystem's claims nothing.
func (s *Store) CheckClock() error {
	_, err := s.claimClock()
	return err
}

// prevOf is the occurrence before last, counting from first.
func prevOf(sched Schedule, first, last time.Time) time.Time {
	prev := first
	for t, ok := sched.Next(first); ok && t.Before(last); t, ok = sched.Next(t) {
		prev = t
	}
	return prev
}

func timeOrNone(t time.Time, ok bool) fsstore.Time {
	if !ok {
		return ""
	}
	return fsstore.TimeOf(t)
}

// ClaimNow claims a run of job id at now, outside its schedule (cron run):
// next_due is left as it is. A job with a run in progress is refused.
func (s *Store) ClaimNow(id string) (Claim, error) { return s.claimNow(id, "", nil) }

// claimNow is ClaimNow of occurrence occ ("": now). before, when not nil,
// is called under the job's lock with the occurrence about to be claimed,
// once the job is found free, and its error refuses the claim.
func (s *Store) claimNow(id string, occ fsstore.Time, before func(fsstore.Time) error) (Claim, error) {
	j, unlock, err := s.lockJob(id)
	if err != nil {
		return Claim{}, err
	}
	defer unlock()
	now, err := s.claimClock()
	if err != nil {
		return Claim{}, err
	}
	var events []Event
	if j.Run != nil {
		events, _ = s.settle(&j, now)
		if j.Run != nil {
			return Claim{}, fsstore.Refusedf("job %s has a run in progress (occurrence %s)", id, j.Run.Occurrence)
		}
	}
	if occ == "" {
		occ = fsstore.TimeOf(now)
	}
	if before != nil {
		if err := before(occ); err != nil {
			return Claim{}, err
		}
	}
	c, _, err := s.claim(&j, Claim{Occurrence: occ, Manual: true}, events, now)
	return c, err
}

// claim records the claim c of j (with events before it) and writes j.
func (s *Store) claim(j *Job, c Claim, events []Event, now time.Time) (Claim, bool, error) {
	j.Run = &Run{Occurrence: c.Occurrence, Manual: c.Manual, Missed: c.Missed, Host: s.Host, PID: s.PID, ClaimedAt: fsstore.TimeOf(now)}
	events = append(events, Event{Event: Claimed, JobID: j.ID, Name: j.Name, Occurrence: c.Occurrence, At: fsstore.TimeOf(now),
		Manual: c.Manual, Missed: c.Missed, Host: s.Host, PID: s.PID})
	if err := s.commit(j, events, true, now); err != nil {
		return Claim{}, false, err
	}
	c.Job = *j
	return c, true, nil
}

// commit appends events and then writes j, when anything changed.
func (s *Store) commit(j *Job, events []Event, changed bool, now time.Time) error {
	if !changed && len(events) == 0 {
		return nil
	}
	j.UpdatedAt = fsstore.TimeOf(now)
	return s.appendEvents(events, func() error { return fsstore.WriteDoc(s.docPath(j.ID), j) })
}

// settle ends j's run in progress if its fate is known (see Claim), and
// returns the events that record it.
func (s *Store) settle(j *Job, now time.Time) ([]Event, bool) {
	r := j.Run
	claimed, _ := r.ClaimedAt.Instant()
	if r.TaskID == "" {
		if now.Sub(claimed) <= ClaimLease {
			return nil, false
		}
		return s.end(j, Outcome{Status: Lost, Error: fmt.Sprintf("claimed by %s (pid %d) and not started within %s", r.Host, r.PID, ClaimLease)}, now), true
	}
	if s.TaskOutcome == nil {
		return nil, false
	}
	out, done, err := s.TaskOutcome(r.TaskID)
	if errors.Is(err, fsstore.ErrNotFound) {
		started, _ := r.StartedAt.Instant()
		if now.Sub(started) <= ClaimLease {
			return nil, false
		}
		out, done = Outcome{Status: Lost, Error: fmt.Sprintf("its task %s was never made", r.TaskID)}, true
	} else if err != nil {
		s.Warn(fmt.Sprintf("job %s: task %s: %v", j.ID, r.TaskID, err))
		return nil, false
	}
	if !done {
		return nil, false
	}
	return s.end(j, out, now), true
}

// end finishes j's run in progress with out: the event that records it,
// the job's last run and failure streak; a failure that makes the streak
// reach MaxFailures pauses the job, saying why. A lost run's outcome is
// unknown and leaves the streak as it is.
func (s *Store) end(j *Job, out Outcome, now time.Time) []Event {
	r := j.Run
	j.Run = nil
	ev := Event{Event: "finished", JobID: j.ID, Occurrence: r.Occurrence, At: fsstore.TimeOf(now), Manual: r.Manual,
		TaskID: r.TaskID, SessionID: r.SessionID, Status: out.Status, ExitCode: out.ExitCode, DurationMS: out.DurationMS, Error: out.Error}
	if out.Status == Lost {
		ev.Event = Lost
	}
	j.LastRun = &LastRun{Occurrence: r.Occurrence, Status: out.Status, ExitCode: out.ExitCode, TaskID: r.TaskID, SessionID: r.SessionID, FinishedAt: fsstore.TimeOf(now)}
	switch out.Status {
	case Succeeded:
		j.FailureStreak = 0
	case Failed, Killed:
		j.FailureStreak++
		if limit := s.MaxFailures; limit > 0 && j.FailureStreak >= limit && !j.Paused {
			j.Paused = true
			j.PausedReason = fmt.Sprintf("%d failed runs in a row (cron.max_failures %d); the last, occurrence %s: %s", j.FailureStreak, limit, r.Occurrence, describe(out))
		}
	}
	return []Event{ev}
}

func describe(out Outcome) string {
	switch {
	case out.ExitCode != nil:
		return fmt.Sprintf("%s with exit code %d", out.Status, *out.ExitCode)
	case out.Error != "":
		return out.Status + ": " + out.Error
	}
	return out.Status
}

// Start records that the claimed occurrence occ of job id is started as
// task taskID (in session sessionID, for a prompt job), before the task
// is made: a ticker killed after it leaves a run whose task is missing,
// which the next tick records lost after ClaimLease. A continue job keeps
// the session. A claim that was meanwhile recorded lost (its lease ran
// out) is refused, and must not be started. A start that cannot be
// written (a full disk) records the claim lost at once, under the same
// lock, and returns the error: the occurrence did not run, and no ticker
// waits out the lease to say so. When that record cannot be written
// either, the claim is left to the lease.
func (s *Store) Start(id string, occ fsstore.Time, taskID, sessionID string) (Job, error) {
	j, unlock, err := s.lockJob(id)
	if err != nil {
		return Job{}, err
	}
	defer unlock()
	now, err := s.claimClock()
	if err != nil {
		return Job{}, err
	}
	r := j.Run
	if r == nil || r.Occurrence != occ || r.TaskID != "" {
		return Job{}, fsstore.Refusedf("job %s: occurrence %s is no longer claimed by this ticker", id, occ)
	}
	if claimed, _ := r.ClaimedAt.Instant(); now.Sub(claimed) > ClaimLease {
		return Job{}, fsstore.Refusedf("job %s: the claim of occurrence %s is older than %s; it will be recorded lost", id, occ, ClaimLease)
	}
	claimed, run := j, *r
	claimed.Run = &run
	r.TaskID, r.SessionID, r.StartedAt = taskID, sessionID, fsstore.TimeOf(now)
	if j.Session == SessionContinue && j.SessionID == "" {
		j.SessionID = sessionID
	}
	ev := Event{Event: Started, JobID: id, Occurrence: occ, At: fsstore.TimeOf(now), Manual: r.Manual, TaskID: taskID, SessionID: sessionID}
	err = s.commit(&j, []Event{ev}, true, now)
	if err != nil {
		lost := s.end(&claimed, Outcome{Status: Lost, Error: "its start could not be recorded: " + err.Error()}, now)
		err = errors.Join(err, s.commit(&claimed, lost, true, now))
	}
	return j, err
}

// Finish records how the run of occurrence occ of job id ended. A run that
// is no longer in progress (settled meanwhile) is left as it was.
func (s *Store) Finish(id string, occ fsstore.Time, out Outcome) (Job, error) {
	j, unlock, err := s.lockJob(id)
	if err != nil {
		return Job{}, err
	}
	defer unlock()
	if j.Run == nil || j.Run.Occurrence != occ {
		return j, nil
	}
	now := s.Now()
	return j, s.commit(&j, s.end(&j, out, now), true, now)
}
