package fsstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore/internal/seam"
)

// staleReads is how many times ReadDoc reads a document that answers
// ESTALE before it gives up.
const staleReads = 3

// ReadDoc reads the JSON document at path into v. A document that exists
// but does not parse is a *CorruptError (offset 0); the caller quarantines
// it under its lock with Quarantine. A missing document is os.ErrNotExist.
// A read that fails with ESTALE is tried again: on a network or FUSE
// filesystem the name can still point at the inode another host's rename
// replaced, and the next open looks the name up again.
func ReadDoc(path string, v any) error {
	b, err := seam.ReadFile(path)
	for i := 1; i < staleReads && errors.Is(err, syscall.ESTALE); i++ {
		b, err = seam.ReadFile(path)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &CorruptError{Path: path, Err: err}
	}
	return nil
}

// WriteDoc writes v as an indented JSON document, atomically.
func WriteDoc(path string, v any) error {
	b, err := EncodeDoc(path, v)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b)
}

// EncodeDoc is the JSON of a document as WriteDoc writes it, with an
// error that names path.
func EncodeDoc(path string, v any) ([]byte, error) {
	b, err := EncodeDocument(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", path, err)
	}
	return b, nil
}

// EncodeDocument encodes a document as every store writes it: indented by
// two spaces, HTML characters unescaped, a final newline. The benchmark
// generators under scripts/ write their fixtures with it.
func EncodeDocument(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Quarantine moves an unreadable document aside to path.corrupt-<unix> and
// returns an error that names both. Nothing takes the document's place.
func Quarantine(path string, unix int64, cause error) error {
	dst, err := MoveAside(path, fmt.Sprintf(".corrupt-%d", unix))
	if err != nil {
		return errors.Join(cause, err)
	}
	return fmt.Errorf("%w; moved aside to %s", cause, dst)
}

// Record names the document of one record and the lock that guards it.
type Record struct {
	What, ID   string // for messages: "session", "20261121_020734_a1b2c3"
	Path, Lock string
	Locked     bool // the caller holds Lock
	Timeout    time.Duration
	// Cancel, when it closes, ends a wait for Lock at once (LockUntil).
	Cancel <-chan struct{}
	Now    func() time.Time
}

// ReadRecord reads the document of a record whose id field (idOf) must be
// r.ID. A missing document is ErrNotFound. One that does not parse, or
// that parses but is not this record's ("null", "{}", another id: taking
// it for one would rewrite it as an empty default), is quarantined under
// the record's lock, so that a rewrite in progress is never mistaken for
// damage, and reported.
func ReadRecord[T any](r Record, idOf func(*T) string) (T, error) {
	var v, zero T
	err := ReadDoc(r.Path, &v)
	if errors.Is(err, os.ErrNotExist) {
		return zero, NotFoundf("%s %s not found", r.What, r.ID)
	}
	if err == nil && idOf(&v) != r.ID {
		err = &CorruptError{Path: r.Path, Err: fmt.Errorf("document has id %q, not %q", idOf(&v), r.ID)}
	}
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) {
		return v, err
	}
	if !r.Locked {
		unlock, err := LockUntil(r.Lock, r.Timeout, r.Cancel)
		if err != nil {
			return zero, err
		}
		defer unlock()
		r.Locked = true
		return ReadRecord(r, idOf)
	}
	return zero, Quarantine(r.Path, r.Now().Unix(), err)
}
