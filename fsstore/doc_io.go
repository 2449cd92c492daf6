package fsstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// readDoc reads the JSON document at path into v. A document that exists
// but does not parse is a *CorruptError (offset 0); the caller quarantines
// it under its lock with quarantine. A missing document is os.ErrNotExist.
func readDoc(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &CorruptError{Path: path, Err: err}
	}
	return nil
}

// writeDoc writes v as an indented JSON document, atomically.
func writeDoc(path string, v any) error {
	b, err := encodeDoc(path, v)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b)
}

// encodeDoc is the JSON of a document as writeDoc writes it.
func encodeDoc(path string, v any) ([]byte, error) {
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

// quarantine moves an unreadable document aside to path.corrupt-<unix> and
// returns an error that names both. Nothing takes the document's place.
func quarantine(path string, unix int64, cause error) error {
	dst, err := moveAside(path, fmt.Sprintf(".corrupt-%d", unix))
	if err != nil {
		return errors.Join(cause, err)
	}
	return fmt.Errorf("%w; moved aside to %s", cause, dst)
}

// recordFile names the document of one record and the lock that guards it.
type recordFile struct {
	what, id   string // for messages: "session", "20261121_020734_a1b2c3"
	path, lock string
	locked     bool // the caller holds lock
	timeout    time.Duration
	now        func() time.Time
}

// readRecord reads the document of a record whose id field (idOf) must be
// r.id. A missing document is ErrNotFound. One that does not parse, or
// that parses but is not this record's ("null", "{}", another id: taking
// it for one would rewrite it as an empty default), is quarantined under
// the record's lock, so that a rewrite in progress is never mistaken for
// damage, and reported.
func readRecord[T any](r recordFile, idOf func(*T) string) (T, error) {
	var v, zero T
	err := readDoc(r.path, &v)
	if errors.Is(err, os.ErrNotExist) {
		return zero, NotFoundf("%s %s not found", r.what, r.id)
	}
	if err == nil && idOf(&v) != r.id {
		err = &CorruptError{Path: r.path, Err: fmt.Errorf("document has id %q, not %q", idOf(&v), r.id)}
	}
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) {
		return v, err
	}
	if !r.locked {
		unlock, err := Lock(r.lock, r.timeout)
		if err != nil {
			return zero, err
		}
		defer unlock()
		r.locked = true
		return readRecord(r, idOf)
	}
	return zero, quarantine(r.path, r.now().Unix(), err)
}
