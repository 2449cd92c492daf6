package fsstore

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzLogSeeds are logs with the shapes that matter to a line scanner:
// empty, only newlines, a torn tail, a line longer than the scanner's
// buffer, CRLF and NUL bytes.
func fuzzLogSeeds(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("\n"))
	f.Add([]byte("\n\n\n"))
	f.Add([]byte("a\nb\nc\n"))
	f.Add([]byte("a\nb\ntorn"))
	f.Add([]byte("no newline at all"))
	f.Add([]byte("crlf\r\nline\r\n\r"))
	f.Add([]byte("nul\x00byte\n\x00"))
	f.Add([]byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","role":"user","content":"hi"}` + "\n" + `{"seq":2,"ts":"2026-01-01T00:00:01Z","role":"assi`))
	f.Add([]byte(strings.Repeat("x", 300<<10) + "\nshort\n" + strings.Repeat("y", 70<<10)))
}

// writeFuzzLog writes data as a log file in a fresh directory.
func writeFuzzLog(t *testing.T, data []byte) string {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// FuzzScanLines: the complete lines ScanLines returns, each with its '\n',
// followed by the torn tail, are the input byte for byte, at the offsets it
// reports; LastLine names the same last complete line.
func FuzzScanLines(f *testing.F) {
	fuzzLogSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := writeFuzzLog(t, data)
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		size := int64(len(data))

		var rebuilt []byte
		var lastLine []byte
		lastOff := int64(-1)
		lines := 0
		torn, err := ScanLines(file, size, func(line []byte, off int64) error {
			if off != int64(len(rebuilt)) {
				t.Fatalf("line %d at offset %d, want %d", lines, off, len(rebuilt))
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("line %d at offset %d contains a newline", lines, off)
			}
			rebuilt = append(append(rebuilt, line...), '\n')
			lastLine = append(lastLine[:0], line...)
			lastOff = off
			lines++
			return nil
		})
		if err != nil {
			t.Fatalf("ScanLines: %v", err)
		}
		complete := int64(bytes.LastIndexByte(data, '\n') + 1)
		if int64(len(rebuilt)) != complete {
			t.Fatalf("complete lines cover %d bytes, want %d", len(rebuilt), complete)
		}
		if torn != nil {
			if torn.Offset != complete || torn.Size != size-complete || torn.Size <= 0 {
				t.Fatalf("torn tail at %d of %d bytes; want at %d of %d", torn.Offset, torn.Size, complete, size-complete)
			}
			tail := make([]byte, torn.Size)
			if _, err := file.ReadAt(tail, torn.Offset); err != nil {
				t.Fatal(err)
			}
			rebuilt = append(rebuilt, tail...)
		} else if complete != size {
			t.Fatalf("no torn tail reported, but %d bytes follow the last newline", size-complete)
		}
		if !bytes.Equal(rebuilt, data) {
			t.Fatalf("lines + torn tail != input")
		}

		got, off, err := LastLine(file, size)
		if err != nil {
			t.Fatalf("LastLine: %v", err)
		}
		if lines == 0 {
			if got != nil {
				t.Fatalf("LastLine = %q at %d for a log with no complete line", got, off)
			}
			return
		}
		if !bytes.Equal(got, lastLine) || off != lastOff {
			t.Fatalf("LastLine = %q at %d; ScanLines' last line is %q at %d", got, off, lastLine, lastOff)
		}
	})
}

// FuzzTornTailRecovery: opening any log for append and appending one record
// leaves the log's complete lines untouched, drops the torn tail from it,
// and keeps that tail, exactly, in the torn-aside file.
func FuzzTornTailRecovery(f *testing.F) {
	fuzzLogSeeds(f)
	f.Add([]byte("torn-only, the whole log is a tail"))
	f.Add([]byte("ok\n\x00\x00\x00\x00"))
	record := []byte(`{"seq":9,"ts":"2026-01-01T00:00:00Z","role":"user","content":"after"}` + "\n")
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := writeFuzzLog(t, data)
		file, moved, err := OpenAppend(path, now)
		if err != nil {
			t.Fatalf("OpenAppend: %v", err)
		}
		err = AppendLines(file, [][]byte{record})
		file.Close()
		if err != nil {
			t.Fatalf("AppendLines: %v", err)
		}
		complete := data[:bytes.LastIndexByte(data, '\n')+1]
		tail := data[len(complete):]

		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := append(bytes.Clone(complete), record...)
		if !bytes.Equal(got, want) {
			t.Fatalf("log after append:\n got %q\nwant %q", got, want)
		}

		entries, err := os.ReadDir(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		var aside []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "log.jsonl.torn-") {
				aside = append(aside, filepath.Join(filepath.Dir(path), e.Name()))
			}
		}
		if len(tail) == 0 {
			if moved != "" || len(aside) != 0 {
				t.Fatalf("no torn tail, yet moved=%q and aside files %v", moved, aside)
			}
			return
		}
		if moved == "" || len(aside) != 1 || aside[0] != moved {
			t.Fatalf("torn tail of %d bytes: moved=%q, aside files %v", len(tail), moved, aside)
		}
		kept, err := os.ReadFile(moved)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(kept, tail) {
			t.Fatalf("torn-aside file holds %q, want %q", kept, tail)
		}
	})
}
