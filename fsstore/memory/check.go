package memory

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/hermes/hermes/fsstore"
)

// Check reads the log and both files. It reports a torn tail or corrupt
// line of the log, stray temp files and copies kept aside (CheckTree), a
// change whose seq is not the next one or that does not apply, and a
// file that does not say what the log says (missing, stale after a
// crash, edited by hand). With repair, the torn tail is cut off into
// log.jsonl.torn-<unix>, stray temp files moved to lostFound, and each
// file that disagrees is copied aside (<file>.replaced-<unix>) and
// written again from the log.
func (s *Store) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	out, err := fsstore.CheckTree(s.Dir, func(string) string { return s.lockPath() }, s.LockTimeout, repair, lostFound)
	if err != nil {
		return out, err
	}
	if _, err := os.Lstat(s.LogPath()); err != nil {
		return out, nil
	}
	unlock, err := fsstore.Lock(s.lockPath(), s.LockTimeout)
	if err != nil {
		return out, err
	}
	defer unlock()
	var st State
	var want int64 = 1
	_, err = s.scan(func(c Change) {
		if c.Seq != want {
			out = append(out, fsstore.Finding{Path: s.LogPath(), What: fmt.Sprintf("change %d follows change %d (a gap or a repeat; revert by number may name the wrong change)", c.Seq, want-1), Problem: true})
		}
		want = c.Seq + 1
		if err := apply(&st, c); err != nil {
			out = append(out, fsstore.Finding{Path: s.LogPath(), What: fmt.Sprintf("change %d does not apply: %v (not repaired: the log is the truth)", c.Seq, err), Problem: true})
		}
		st.Seq = c.Seq
	})
	if err != nil {
		return out, err
	}
	if f := s.checkCache(st, repair); f != nil {
		out = append(out, *f)
	}
	for _, target := range []string{Memory, User} {
		path, text := s.Path(target), Render(st.Entries(target))
		have, err := os.ReadFile(path)
		if os.IsNotExist(err) && text == "" || err == nil && string(have) == text {
			continue
		}
		f := fsstore.Finding{Path: path, What: "does not hold what " + s.LogPath() + " says", Problem: true}
		if err != nil {
			f.What = fmt.Sprintf("%s (%v)", f.What, err)
		}
		if repair {
			if err := s.writeView(target, nil, st.Entries(target)); err != nil {
				f.What += "; not written again: " + err.Error()
			} else {
				f.Repaired, f.What = true, f.What+"; written again from the log (what it held is kept aside as .replaced-<unix>)"
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// checkCache reports a cache written for the log as it is whose state is
// not the log's (a reader would believe it); repair writes it again. A
// cache for another size is only passed over by readers: no finding.
func (s *Store) checkCache(st State, repair bool) *fsstore.Finding {
	f, size, err := fsstore.OpenSized(s.LogPath())
	if err != nil || f == nil {
		return nil
	}
	f.Close()
	c, ok := s.readCache()
	if !ok || c.LogSize != size {
		return nil
	}
	want, _ := json.Marshal(st.comparable())
	have, _ := json.Marshal(c.State.comparable())
	if string(want) == string(have) {
		return nil
	}
	fd := &fsstore.Finding{Path: s.CachePath(), What: "cache disagrees with " + s.LogPath(), Problem: true}
	if repair {
		s.writeCache(st, size)
		fd.Repaired, fd.What = true, fd.What+"; written again from the log"
	}
	return fd
}

// comparable is st with its empty lists as none: a file emptied by a
// change and one never written hold the same entries, whichever way the
// fold or the cache keeps them.
func (st State) comparable() State {
	if len(st.Memory) == 0 {
		st.Memory = nil
	}
	if len(st.User) == 0 {
		st.User = nil
	}
	return st
}
