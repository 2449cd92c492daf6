package checkpoints

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// Field is the transcript field (sessions.Message.Extra) that holds the
// changes a tool call (or a restore) made: a list of Change.
const Field = "checkpoint"

// Change is one file a tool call changed, as its tool message records it.
type Change struct {
	// Path is the file's absolute path.
	Path string `json:"path"`
	// Before is the hash of the file's bytes before the change, an object
	// of the store; "" when the file did not exist (Created) or was not
	// checkpointed.
	Before string `json:"before,omitempty"`
	// After is the hash of the bytes the change left; "" when it removed
	// the file (Removed).
	After string `json:"after,omitempty"`
	// Mode is the file's permission bits before the change, in octal.
	Mode string `json:"mode,omitempty"`
	// Created: the file did not exist before the change.
	Created bool `json:"created,omitempty"`
	// Removed: the change removed the file.
	Removed bool `json:"removed,omitempty"`
	// NotCheckpointed says why the file's prior bytes are not in the
	// store (larger than checkpoints.max_file, unreadable): such a change
	// cannot be taken back.
	NotCheckpointed string `json:"not_checkpointed,omitempty"`
}

// FileMode is c's Mode as a file mode; 0644 when it has none.
func (c Change) FileMode() fs.FileMode {
	m, err := strconv.ParseUint(c.Mode, 8, 32)
	if err != nil || c.Mode == "" {
		return 0o644
	}
	return fs.FileMode(m) & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// ModeText is a mode as Change.Mode holds it.
func ModeText(m fs.FileMode) string {
	bits := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		bits |= 0o1000
	}
	return fmt.Sprintf("%04o", bits)
}

// Record is the changes one transcript line holds: a tool call's, or a
// restore's. Its id is <session>:<seq>.
type Record struct {
	SessionID string   `json:"session_id"`
	Seq       int64    `json:"seq"`
	TS        string   `json:"ts"`
	Role      string   `json:"role"`
	Changes   []Change `json:"changes"`
}

// ID names the record: the session and the seq of its line.
func (r Record) ID() string { return r.SessionID + ":" + strconv.FormatInt(r.Seq, 10) }

// ParseID splits a record id, <session>:<seq>.
func ParseID(id string) (session string, seq int64, err error) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return "", 0, fsstore.Invalidf("checkpoint id %q is not SESSION:SEQ", id)
	}
	seq, err = strconv.ParseInt(id[i+1:], 10, 64)
	if err != nil || seq < 1 {
		return "", 0, fsstore.Invalidf("checkpoint id %q is not SESSION:SEQ (SEQ a message's seq, from 1)", id)
	}
	return id[:i], seq, nil
}

// Changes decodes the changes m records; a message without any has none.
// A field that does not decode is an ErrInvalid error naming the line.
func Changes(m sessions.Message) ([]Change, error) {
	raw, ok := m.Extra[Field]
	if !ok {
		return nil, nil
	}
	var cs []Change
	if err := json.Unmarshal(raw, &cs); err != nil {
		return nil, fsstore.Invalidf("message %d: its %s field is not a list of changes: %v", m.Seq, Field, err)
	}
	return cs, nil
}

// Attach records cs in m (nothing when cs is empty).
func Attach(m *sessions.Message, cs []Change) {
	if len(cs) == 0 {
		return
	}
	raw, err := json.Marshal(cs)
	if err != nil {
		panic(err) // strings and bools only
	}
	if m.Extra == nil {
		m.Extra = map[string]json.RawMessage{}
	}
	m.Extra[Field] = raw
}

// Records returns the records of a transcript, in order.
func Records(sessionID string, msgs []sessions.Message) ([]Record, error) {
	var out []Record
	for _, m := range msgs {
		cs, err := Changes(m)
		if err != nil {
			return nil, err
		}
		if len(cs) > 0 {
			out = append(out, Record{SessionID: sessionID, Seq: m.Seq, TS: string(m.TS), Role: m.Role, Changes: cs})
		}
	}
	return out, nil
}

// Target is what a restore does to one file: put it back as it was
// (Want, or absent), provided that it is still what the last recorded
// change left (Expect, or absent).
type Target struct {
	Path string `json:"path"`
	// Want is the hash of the bytes to put back; "" with Absent.
	Want string `json:"want,omitempty"`
	// Absent: the file is to be removed (the changes created it).
	Absent bool `json:"absent,omitempty"`
	// Mode is the mode to give it.
	Mode string `json:"mode,omitempty"`
	// Expect is the hash of what the last change left; "" with
	// ExpectAbsent.
	Expect       string `json:"expect,omitempty"`
	ExpectAbsent bool   `json:"expect_absent,omitempty"`
	// Lost says why the file cannot be put back (its earliest change was
	// not checkpointed).
	Lost string `json:"lost,omitempty"`
}

// Plan returns, for each file the records change, what taking them all
// back means: the state before the first of them, expected to be what the
// last of them left. records are in transcript order. The targets are
// sorted by path.
func Plan(records []Record) []Target {
	byPath := map[string]*Target{}
	for _, r := range records {
		for _, c := range r.Changes {
			t, ok := byPath[c.Path]
			if !ok {
				t = &Target{Path: c.Path, Mode: c.Mode}
				switch {
				case c.NotCheckpointed != "":
					t.Lost = c.NotCheckpointed
				case c.Created:
					t.Absent = true
				default:
					t.Want = c.Before
				}
				byPath[c.Path] = t
			}
			t.Expect, t.ExpectAbsent = c.After, c.Removed
		}
	}
	out := make([]Target, 0, len(byPath))
	for _, t := range byPath {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// After returns the records of recs after seq (those a rewind to the
// state before message seq takes back).
func After(recs []Record, seq int64) []Record {
	i := sort.Search(len(recs), func(i int) bool { return recs[i].Seq >= seq })
	return recs[i:]
}
