package cron

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/hermes/hermes/fsstore"
)

// keysDir holds, for each idempotency key of cron run --key, a document
// named by the key's hash (fsstore.KeyName) that holds the job and the
// occurrence the key claimed.
func (s *Store) keysDir() string { return filepath.Join(s.Dir, "keys") }

// keyRecord is what a key of cron run --key claimed.
type keyRecord struct {
	JobID      string       `json:"job_id"`
	Occurrence fsstore.Time `json:"occurrence"`
}

// ClaimNowOnce is ClaimNow for a run claimed at most once per key, as
// tasks' CreateOnce: the first call records under the key the job and
// the occurrence it claims, synced, under the job's lock once the job is
// found free (its commit point), then claims it; a later one, racing or
// not, claims nothing and returns the run the key claimed (claimed
// false), and its caller starts nothing; the key with another job is
// ErrInvalid. A crash between the two (or a claim that could not be
// written) leaves the key naming an occurrence not claimed, which the
// next call with the key claims. A run the key claimed is never claimed
// again: one whose task never started is recorded lost by the next
// claim of the job, not run a second time.
func (s *Store) ClaimNowOnce(key, id string) (c Claim, run RunRecord, claimed bool, err error) {
	if err := fsstore.CheckKey(key); err != nil {
		return Claim{}, RunRecord{}, false, err
	}
	if err := fsstore.EnsureDir(s.keysDir()); err != nil {
		return Claim{}, RunRecord{}, false, err
	}
	path := filepath.Join(s.keysDir(), fsstore.KeyName(key)+".json")
	unlock, err := fsstore.Lock(path+".lock", s.LockTimeout)
	if err != nil {
		return Claim{}, RunRecord{}, false, err
	}
	defer unlock()
	var rec keyRecord
	err = fsstore.ReadDoc(path, &rec)
	switch {
	case err == nil:
		if rec.JobID != id {
			return Claim{}, RunRecord{}, false, fsstore.Invalidf("key %q was used before for another job (%s)", key, rec.JobID)
		}
		run, found, err := s.keyRun(rec)
		if err != nil || found {
			return Claim{}, run, false, err
		}
		c, err = s.claimNow(id, rec.Occurrence, nil)
	case errors.Is(err, os.ErrNotExist):
		defer fsstore.SweepKeys(s.keysDir())
		c, err = s.claimNow(id, "", func(occ fsstore.Time) error {
			return fsstore.WriteDoc(path, keyRecord{JobID: id, Occurrence: occ})
		})
	default:
		return Claim{}, RunRecord{}, false, err
	}
	return c, RunRecord{}, err == nil, err
}

// keyRun finds the run a key claimed: the job's run in progress when it
// is the key's occurrence, else the key's occurrence in the runs log,
// settled (started, ended, lost). A claim in the log that the job's
// document does not hold was never committed: not found, claimed again.
func (s *Store) keyRun(rec keyRecord) (RunRecord, bool, error) {
	j, err := s.Get(rec.JobID)
	if err != nil {
		return RunRecord{}, false, err
	}
	if r := j.Run; r != nil && r.Manual && r.Occurrence == rec.Occurrence {
		status := Claimed
		if r.TaskID != "" {
			status = Started
		}
		return RunRecord{JobID: j.ID, Occurrence: r.Occurrence, Status: status, Manual: true, Host: r.Host, PID: r.PID,
			TaskID: r.TaskID, SessionID: r.SessionID, ClaimedAt: r.ClaimedAt, StartedAt: r.StartedAt}, true, nil
	}
	runs, err := s.Runs(rec.JobID, 0)
	if err != nil {
		return RunRecord{}, false, err
	}
	for _, r := range runs {
		if r.Manual && r.Occurrence == rec.Occurrence && r.Status != Claimed {
			return r, true, nil
		}
	}
	return RunRecord{}, false, nil
}
