package cron

import (
	"fmt"

	"github.com/hermes/hermes/fsstore"
)

// Check reads every job document, the runs log and the due index. It
// reports documents that do not parse, a torn tail or corrupt line of the
// runs log, stray temp files, and a due index that misses a job, holds a
// job's entry later than its document says or names no job. With repair,
// unreadable documents are moved aside, the torn tail cut off into
// runs.jsonl.torn-<unix>, stray temp files moved to lostFound, and the
// due index written again from the documents.
func (s *Store) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	out, err := fsstore.CheckTree(s.Dir, func(string) string { return s.runsLock() }, s.LockTimeout, repair, lostFound)
	if err != nil {
		return out, err
	}
	jobs, _ := fsstore.DocIDs(s.jobsDir())
	if len(jobs) == 0 {
		return out, nil
	}
	f := fsstore.Finding{Path: s.duePath(), Problem: true}
	if repair {
		n, err := s.RebuildIndex()
		if err != nil {
			return out, err
		}
		if n > 0 {
			f.What, f.Repaired = fmt.Sprintf("due index entries that disagreed with the jobs: %d; written again from the jobs", n), true
			out = append(out, f)
		}
		return out, nil
	}
	want, known, err := s.indexFromJobs()
	if err != nil {
		return out, err
	}
	have, err := s.loadIndex()
	if err != nil {
		f.What = err.Error()
		return append(out, f), nil
	}
	if n := indexDiff(have, want, known); n > 0 {
		f.What = fmt.Sprintf("due index entries that disagree with the jobs: %d (fsck --repair writes it again)", n)
		out = append(out, f)
	}
	return out, nil
}
