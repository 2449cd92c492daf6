package cron

import (
	"github.com/hermes/hermes/fsstore"
)

// RunRecord is one run as `cron runs` shows it: the events of one
// occurrence of one job folded together (status the latest: claimed,
// started, succeeded, failed, killed, lost), or one skipped line. A
// claimed line repeated for one occurrence is a claim whose ticker was
// killed before its commit point (the job's document), then the claim
// that was committed: the later line wins.
type RunRecord struct {
	JobID      string       `json:"job_id"`
	Occurrence fsstore.Time `json:"occurrence"`
	Status     string       `json:"status"`
	Manual     bool         `json:"manual"`
	Missed     int          `json:"missed"`
	Until      fsstore.Time `json:"until,omitempty"`
	Host       string       `json:"host"`
	PID        int          `json:"pid"`
	TaskID     string       `json:"task_id"`
	SessionID  string       `json:"session_id"`
	ExitCode   *int         `json:"exit_code"`
	DurationMS int64        `json:"duration_ms"`
	ClaimedAt  fsstore.Time `json:"claimed_at"`
	StartedAt  fsstore.Time `json:"started_at"`
	FinishedAt fsstore.Time `json:"finished_at"`
	Error      string       `json:"error"`
}

// Events calls fn with each complete line of the runs log, oldest first. A
// torn tail is skipped and said through Warn; a line that does not parse
// is said and skipped.
func (s *Store) Events(fn func(Event)) error {
	_, err := fsstore.ScanRecords(s.runsPath(), s.Warn, fn)
	return err
}

// Runs returns the runs of job jobID ("" for every job), newest claim
// first, at most limit of them (0: all).
func (s *Store) Runs(jobID string, limit int) ([]RunRecord, error) {
	type key struct {
		job, occ string
		manual   bool
	}
	var order []*RunRecord
	byKey := map[key]*RunRecord{}
	err := s.Events(func(ev Event) {
		if jobID != "" && ev.JobID != jobID {
			return
		}
		if ev.Event == Skipped {
			order = append(order, &RunRecord{JobID: ev.JobID, Occurrence: ev.Occurrence, Until: ev.Until, Status: Skipped, Missed: ev.Missed, ClaimedAt: ev.At})
			return
		}
		k := key{ev.JobID, string(ev.Occurrence), ev.Manual}
		r := byKey[k]
		if r == nil {
			r = &RunRecord{JobID: ev.JobID, Occurrence: ev.Occurrence, Manual: ev.Manual}
			byKey[k] = r
			order = append(order, r)
		}
		switch ev.Event {
		case Claimed:
			r.Status, r.ClaimedAt, r.Host, r.PID, r.Missed = Claimed, ev.At, ev.Host, ev.PID, ev.Missed
		case Started:
			r.Status, r.StartedAt, r.TaskID, r.SessionID = Started, ev.At, ev.TaskID, ev.SessionID
		default:
			r.Status, r.FinishedAt, r.ExitCode, r.DurationMS, r.Error = ev.Status, ev.At, ev.ExitCode, ev.DurationMS, ev.Error
			if ev.TaskID != "" {
				r.TaskID, r.SessionID = ev.TaskID, ev.SessionID
			}
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]RunRecord, 0, len(order))
	for i := len(order) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		out = append(out, *order[i])
	}
	return out, nil
}
