package checkpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// unrestorablePath is the document of the objects fsck found lost: a map
// of hash to when and why. The records that refer to them are kept as
// they are (the transcript is not rewritten); this marks them.
func (s *Store) unrestorablePath() string { return filepath.Join(s.Dir, "unrestorable.json") }

// Unrestorable returns the objects marked lost, by hash, with why.
func (s *Store) Unrestorable() (map[string]string, error) {
	out := map[string]string{}
	err := fsstore.ReadDoc(s.unrestorablePath(), &out)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	return out, err
}

// Check is fsck's check of the store against the records of every
// session of st: each object a record names must exist and hash to its
// name; a pending record is either a call the session's next turn
// settles, a stale one (its call has its result), or an interrupted
// restore. With repair, a corrupt object is moved to lostFound (so that
// the same bytes can be stored again), a lost object is marked
// unrestorable (the records are never touched), and a stale pending
// record is moved to lostFound.
func (s *Store) Check(st *sessions.Store, repair bool, lostFound string) ([]fsstore.Finding, error) {
	ids, err := sessionIDs(st)
	if err != nil {
		return nil, err
	}
	refs := map[string][]string{} // hash -> the records naming it
	answered := map[string]map[string]bool{}
	recorded := map[string]map[string]bool{} // session -> its records' changes (changeKey)
	each := map[string]map[string]bool{}     // session -> each change its records hold (changeKey)
	for _, id := range ids {
		msgs, err := st.Messages(id)
		if err != nil {
			// A transcript that cannot be read is the sessions check's to
			// report; its checkpoints are not checked.
			continue
		}
		recs, err := Records(id, msgs)
		if err != nil {
			return []fsstore.Finding{{Path: id, What: err.Error(), Problem: true}}, nil
		}
		recorded[id] = map[string]bool{}
		each[id] = map[string]bool{}
		for _, r := range recs {
			recorded[id][changeKey(r.Changes)] = true
			for _, c := range r.Changes {
				each[id][changeKey([]Change{c})] = true
			}
			for _, c := range r.Changes {
				if c.Before != "" {
					refs[c.Before] = append(refs[c.Before], r.ID())
				}
			}
		}
		answered[id] = map[string]bool{}
		for _, m := range msgs {
			if m.Role == "tool" {
				answered[id][m.ToolCallID] = true
			}
		}
	}
	marked, err := s.Unrestorable()
	if err != nil {
		return nil, err
	}
	var out []fsstore.Finding
	hashes := make([]string, 0, len(refs))
	for h := range refs {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	newly := false
	for _, h := range hashes {
		path, err := s.objectPath(h)
		if err != nil {
			out = append(out, fsstore.Finding{Path: refs[h][0], What: err.Error(), Problem: true})
			continue
		}
		_, err = s.Get(h)
		if err == nil {
			continue
		}
		if _, ok := marked[h]; ok {
			out = append(out, fsstore.Finding{Path: path, What: fmt.Sprintf("object lost, marked unrestorable (%s): checkpoints %v cannot be restored", marked[h], refs[h])})
			continue
		}
		f := fsstore.Finding{Path: path, Problem: true, What: fmt.Sprintf("%v: checkpoints %v cannot be restored", err, refs[h])}
		if repair {
			why := "missing"
			if errors.Is(err, ErrCorrupt) {
				why = "corrupt"
				moved, what := fsstore.MoveToLostFound(path, lostFound, f.What)
				f.What = what
				if !moved {
					out = append(out, f)
					continue
				}
			}
			marked[h] = why + ", found by fsck at " + time.Now().UTC().Format(time.RFC3339)
			newly = true
			f.Repaired = true
			f.What += "; marked unrestorable"
		}
		out = append(out, f)
	}
	if newly {
		if err := fsstore.WriteDoc(s.unrestorablePath(), marked); err != nil {
			return nil, err
		}
	}
	pending, err := s.allPending()
	if err != nil {
		return nil, err
	}
	for _, p := range pending {
		path := p.log + " (call " + p.CallID + ")"
		switch {
		case p.CallID == RestoreCall && recorded[p.SessionID][changeKey(p.Changes)]:
			f := fsstore.Finding{Path: path, Problem: true,
				What: fmt.Sprintf("stale pending restore of session %s: its note records it", p.SessionID)}
			if repair {
				f.Repaired, f.What = s.dropPending(p, lostFound, f.What)
			}
			out = append(out, f)
		case p.CallID == RestoreCall:
			out = append(out, fsstore.Finding{Path: path, Problem: true,
				What: fmt.Sprintf("a restore in session %s was interrupted (files %v): run the same restore again to finish and record it", p.SessionID, Paths(p.Changes))})
		case answered[p.SessionID][p.CallID] && len(unrecorded(p.Changes, each[p.SessionID])) > 0:
			late := unrecorded(p.Changes, each[p.SessionID])
			f := fsstore.Finding{Path: path, Problem: true,
				What: fmt.Sprintf("call %s of session %s has its result, which does not record its changes of %v (the call was abandoned, and its process ended before it did; or a write of it failed)", p.CallID, p.SessionID, Paths(late))}
			if repair {
				f.What, f.Repaired = s.recordLate(st, p, late, lostFound, f.What)
			}
			out = append(out, f)
		case answered[p.SessionID][p.CallID]:
			f := fsstore.Finding{Path: path, Problem: true,
				What: fmt.Sprintf("stale pending change of call %s of session %s: the call's result records its changes", p.CallID, p.SessionID)}
			if repair {
				f.Repaired, f.What = s.dropPending(p, lostFound, f.What)
			}
			out = append(out, f)
		default:
			out = append(out, fsstore.Finding{Path: path,
				What: fmt.Sprintf("call %s of session %s was interrupted while it changed %v: the session's next turn records what it changed", p.CallID, p.SessionID, Paths(p.Changes))})
		}
	}
	return out, nil
}

// unrecorded are the changes of cs that no record holds (recorded: each
// recorded change's changeKey).
func unrecorded(cs []Change, recorded map[string]bool) []Change {
	var out []Change
	for _, c := range cs {
		if !recorded[changeKey([]Change{c})] {
			out = append(out, c)
		}
	}
	return out
}

// recordLate is fsck --repair of the pending record p, whose call was
// abandoned and whose changes late no record holds: those their files
// show were made (Resolve) are recorded in a note of the session (Late),
// then the record is moved to lostFound. It returns the finding's text
// and whether it was repaired.
func (s *Store) recordLate(st *sessions.Store, p loggedPending, late []Change, lostFound, what string) (string, bool) {
	made := Resolve(late, presentHash)
	if len(made) > 0 {
		if _, err := st.Append(p.SessionID, []sessions.Message{Late(p.CallID, "", made)}); err != nil {
			return fmt.Sprintf("%s; not recorded: %v", what, err), false
		}
		what += fmt.Sprintf("; recorded %v in a note", Paths(made))
	} else {
		what += "; their files show none was made"
	}
	moved, what := s.dropPending(p, lostFound, what)
	return what, moved
}

// changeKey is a list of changes in a form equal for equal lists in any
// order.
func changeKey(cs []Change) string {
	keys := make([]string, len(cs))
	for i, c := range cs {
		b, _ := json.Marshal(c)
		keys[i] = string(b)
	}
	sort.Strings(keys)
	return strings.Join(keys, "\n")
}
