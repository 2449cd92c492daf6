package checkpoints

import (
	"crypto/sha256"
	"encoding/hex"
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
// hashes the file at a path (exists false when there is none); its error
// (not a regular file) counts as neither.
func Resolve(cs []Change, present func(path string) (hash string, exists bool, err error)) []Change {
	var out []Change
	for _, c := range cs {
		h, exists, err := present(c.Path)
		if err != nil {
			out = append(out, c)
			continue
		}
		made := (!exists && c.Removed) || (exists && h == c.After)
		unmade := (!exists && c.Created) || (exists && c.Before != "" && h == c.Before)
		if made || (!unmade && c.NotCheckpointed == "") {
			out = append(out, c)
		}
	}
	return out
}

// presentHash is the hash of the regular file at path, read without
// following a symbolic link and without blocking on anything else.
func presentHash(path string) (string, bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(h.Sum(nil)), true, nil
}
