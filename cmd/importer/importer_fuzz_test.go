package importer

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// FuzzImport: Parse, in every format and with detection, never panics;
// every error is ErrInvalid; every message of an accepted session is one
// the store accepts once written (MarshalJSON, then sessions.ParseMessage).
func FuzzImport(f *testing.F) {
	err := filepath.WalkDir(filepath.Join("..", "..", "testdata", "import"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		f.Add(data)
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"", "\xef\xbb\xbf", "[]", "null", "{", `{"messages":null}`,
		`{"session_id":"s","messages":[{"role":"user","content":"hi"},{"role":"bogus"}]}`,
		`{"messages":[{"role":"user","content":{"x":1}}]}` + "\n",
		`{"type":"user","sessionId":"a","message":{"role":"user","content":[{"type":"tool_result","content":null}]}}`,
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}}`,
		`{"id":"x","timestamp":"not a time"}`,
	} {
		f.Add([]byte(s))
	}
	formats := append([]string{""}, Formats...)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range formats {
			parsed, err := Parse(bytes.NewReader(data), format)
			if err != nil {
				if !errors.Is(err, fsstore.ErrInvalid) {
					t.Fatalf("Parse(format %q) = %v, not ErrInvalid", format, err)
				}
				continue
			}
			if len(parsed) == 0 {
				t.Fatalf("Parse(format %q) accepted the input with no session", format)
			}
			for i, s := range parsed {
				for j, m := range s.Messages {
					m.Seq = int64(j + 1)
					line, err := m.MarshalJSON()
					if err != nil {
						t.Fatalf("format %q session %d message %d: MarshalJSON: %v", format, i, j, err)
					}
					if _, err := sessions.ParseMessage(line); err != nil {
						t.Fatalf("format %q session %d message %d: the store rejects %q: %v", format, i, j, line, err)
					}
				}
			}
		}
		if _, err := Detect(data); err != nil && !errors.Is(err, fsstore.ErrInvalid) {
			t.Fatalf("Detect = %v, not ErrInvalid", err)
		}
	})
}
