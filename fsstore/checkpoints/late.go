package checkpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/hermes/hermes/fsstore/sessions"
)

// noteMarker is the extra field of the messages hermes adds itself (the
// agent engine's NoteMarker).
const noteMarker = "hermes_note"

// LateNote begins the note that records the file changes of a call the
// engine abandoned (it did not end within its grace), made after its one
// result was stored.
const LateNote = "Note: a call abandoned earlier changed files after hermes stopped waiting for it: "

// Late is the note that records cs, the changes call callID (a tool
// named tool, "" when unknown) made after it was abandoned: a system
// message hermes adds (noteMarker) holding them in Field.
func Late(callID, tool string, cs []Change) sessions.Message {
	what := "call " + callID
	if tool != "" {
		what = tool + " (call " + callID + ")"
	}
	m := sessions.Message{Role: "system", Content: sessions.TextContent(fmt.Sprintf("%s%s changed %s.", LateNote, what, strings.Join(Paths(cs), ", "))),
		Extra: map[string]json.RawMessage{noteMarker: json.RawMessage("true")}}
	Attach(&m, cs)
	return m
}

// Resolve returns the changes of cs, a pending record's, that their files
// show were made (package doc, "A change and a crash"): a file that holds
// what the change was to write was changed; one that holds its prior
// bytes, or is absent where the change was to create it, was not, and its
// change is left out; one that holds neither was changed since, and is
// kept, so that a restore reports it as a conflict. A change that was not
// checkpointed is kept only where the file holds what it wrote. present
// hashes the file at a path for comparison with the hashes like (a
// Hasher's; exists false when there is none); its error (not a regular
// file) counts as neither.
func Resolve(cs []Change, present func(path string, like ...string) (sum Sum, exists bool, err error)) []Change {
	var out []Change
	for _, c := range cs {
		h, exists, err := present(c.Path, c.After, c.Before)
		if err != nil {
			out = append(out, c)
			continue
		}
		made := (!exists && c.Removed) || (exists && h.Is(c.After))
		unmade := (!exists && c.Created) || (exists && h.Is(c.Before))
		if made || (!unmade && c.NotCheckpointed == "") {
			out = append(out, c)
		}
	}
	return out
}

// presentHash is the hash of the regular file at path, for comparison
// with the hashes like, read without following a symbolic link and
// without blocking on anything else.
func presentHash(path string, like ...string) (Sum, bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Sum{}, false, nil
	}
	if err != nil {
		return Sum{}, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Sum{}, false, err
	}
	if !fi.Mode().IsRegular() {
		return Sum{}, false, fmt.Errorf("%s is not a regular file", path)
	}
	h := NewHasher(like...)
	if _, err := io.Copy(h, f); err != nil {
		return Sum{}, false, err
	}
	return h.Sum(), true, nil
}
