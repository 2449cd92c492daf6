package tasks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// Check reads every task record and the indexes. It reports records that
// do not parse, tasks that the running markers or the finished log do not
// agree with, a torn tail of the finished log, an interrupted prune and
// stray temp files. With repair, the interrupted prune is completed,
// unreadable records are quarantined, the indexes rebuilt from the
// records, stray temp files moved to lostFound. A log (a task's output) is
// the command's own bytes and is not checked.
func (s *Store) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	var out []fsstore.Finding
	add := func(f fsstore.Finding) { out = append(out, f) }
	ids, err := s.journal()
	if err != nil || ids != nil {
		f := fsstore.Finding{Path: s.journalPath(), What: fmt.Sprintf("interrupted prune of %d tasks", len(ids)), Problem: true}
		if err != nil {
			f.What = "interrupted prune: " + err.Error()
		} else if repair {
			unlock, err := fsstore.Lock(s.pruneLockPath(), s.LockTimeout)
			if err != nil {
				return nil, err
			}
			err = s.removeTasks(ids)
			unlock()
			if err != nil {
				return nil, err
			}
			f.Repaired = true
			f.What += "; completed"
		}
		add(f)
	}
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	running, err := s.Running()
	if err != nil {
		return nil, err
	}
	marked := map[string]bool{}
	for _, id := range running {
		marked[id] = true
	}
	// listed: the tasks the finished log names; lineRecords: those whose
	// line is their record.
	listed, lineRecords := map[string]bool{}, map[string]bool{}
	finished, err := s.finishedEntries()
	if err != nil {
		return out, err
	}
	for _, e := range finished {
		listed[e.TaskID] = true
		lineRecords[e.TaskID] = e.Record != nil
	}
	// logDamaged: the finished log itself is wrong, not only the markers;
	// only then is it copied aside before it is rebuilt.
	indexOK, logDamaged := true, false
	records := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(s.Dir, name)
		if fsstore.CheckCommon(e, path, repair, lostFound, add) || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		id := strings.TrimSuffix(name, ".json")
		var t Task
		err := fsstore.ReadDoc(path, &t)
		if err == nil && t.ID != id {
			err = &fsstore.CorruptError{Path: path, Err: fmt.Errorf("record has id %q", t.ID)}
		}
		var corrupt *fsstore.CorruptError
		if errors.As(err, &corrupt) {
			f := fsstore.Finding{Path: path, What: "record does not parse: " + corrupt.Err.Error(), Problem: true}
			if repair {
				_, qerr := s.Get(id)
				f.Repaired = qerr != nil && !errors.Is(qerr, fsstore.ErrNotFound)
				if f.Repaired {
					f.What += "; " + qerr.Error()
				}
			}
			add(f)
			continue
		}
		if err != nil {
			return out, err
		}
		records[id] = true
		if slices.Contains(ids, id) {
			// Half removed by the interrupted prune, reported above.
			continue
		}
		switch {
		case t.Finished() && !listed[id]:
			add(fsstore.Finding{Path: s.finishedPath(), What: "finished log lacks task " + id, Problem: true})
			indexOK, logDamaged = false, true
		case !t.Finished() && !marked[id]:
			add(fsstore.Finding{Path: s.runningDir(), What: "no running marker for task " + id, Problem: true})
			indexOK = false
		case t.Finished() && marked[id]:
			add(fsstore.Finding{Path: s.runningMarker(id), What: "running marker of finished task " + id, Problem: true})
			indexOK = false
		}
	}
	for id := range marked {
		switch {
		case records[id]:
		case lineRecords[id]:
			add(fsstore.Finding{Path: s.runningMarker(id), What: "running marker of finished task " + id, Problem: true})
			indexOK = false
		default:
			add(fsstore.Finding{Path: s.runningMarker(id), What: "running marker without a record", Problem: true})
			indexOK = false
		}
	}
	if f, size, err := fsstore.OpenSized(s.finishedPath()); f != nil && err == nil {
		if torn, _ := fsstore.ScanLines(f, size, func([]byte, int64) error { return nil }); torn != nil {
			add(fsstore.Finding{Path: s.finishedPath(), What: fmt.Sprintf("torn tail of %d bytes at offset %d", torn.Size, torn.Offset), Problem: true})
			indexOK, logDamaged = false, true
		}
		f.Close()
	}
	if !indexOK && repair {
		if logDamaged {
			if _, err := fsstore.CopyAside(s.finishedPath(), fmt.Sprintf(".replaced-%d", s.Now().Unix())); err != nil {
				return out, err
			}
		}
		err := s.RebuildIndex()
		for i := range out {
			if out[i].Problem && !out[i].Repaired && (strings.HasPrefix(out[i].Path, s.runningDir()) || out[i].Path == s.finishedPath()) {
				out[i].Repaired = err == nil
			}
		}
	}
	return out, nil
}
