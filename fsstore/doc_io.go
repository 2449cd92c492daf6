package fsstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode %s: %w", path, err)
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
