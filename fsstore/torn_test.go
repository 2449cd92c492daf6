package fsstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestScanLinesEveryCut checks ScanLines and LastLine on every prefix of a
// log (through the size argument and through a truncated file): the
// complete lines before the cut are passed with their offsets, and the
// rest comes back as the torn tail.
func TestScanLinesEveryCut(t *testing.T) {
	t.Run("handmade", func(t *testing.T) {
		checkScanLinesEveryCut(t, []byte("{\"a\":1}\n\n{\"b\":\"été\"}\nplain line\n{\"c\":[1,2,3]}\nx\n"))
	})
	t.Run("transcript", func(t *testing.T) {
		// Lines as the session store writes them: multi-byte text, a null
		// content with tool calls, a tool result.
		checkScanLinesEveryCut(t, []byte(`{"seq":1,"ts":"2026-11-21T02:07:34.123456Z","role":"system","content":"be brief"}
{"seq":2,"ts":"2026-11-21T02:07:34.123456Z","role":"user","content":"naïve ✓"}
{"seq":3,"ts":"2026-11-21T02:07:34.123456Z","role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function"}]}
{"seq":4,"ts":"2026-11-21T02:07:34.123456Z","role":"tool","content":"ok","tool_call_id":"c1"}
`))
	})
}

func checkScanLinesEveryCut(t *testing.T, data []byte) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	storetest.MustWrite(t, full, data)
	f, err := os.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for cut := 0; cut <= len(data); cut++ {
		// Expected: the lines whose newline is before the cut.
		var lines []string
		var offsets []int64
		boundary := 0
		for _, off := range storetest.LineOffsets(data[:cut]) {
			i := bytes.IndexByte(data[off:cut], '\n')
			if i < 0 {
				break
			}
			lines = append(lines, string(data[off:off+i]))
			offsets = append(offsets, int64(off))
			boundary = off + i + 1
		}
		var wantTorn *TornTail
		if boundary < cut {
			wantTorn = &TornTail{Offset: int64(boundary), Size: int64(cut - boundary)}
		}

		cutPath := filepath.Join(dir, fmt.Sprintf("cut-%d.jsonl", cut))
		storetest.MustWrite(t, cutPath, data[:cut])
		g, err := os.Open(cutPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			f    *os.File
		}{{"size argument", f}, {"truncated file", g}} {
			var gotLines []string
			var gotOffsets []int64
			torn, err := ScanLines(c.f, int64(cut), func(line []byte, off int64) error {
				gotLines = append(gotLines, string(line))
				gotOffsets = append(gotOffsets, off)
				return nil
			})
			if err != nil {
				t.Fatalf("cut %d, %s: %v", cut, c.name, err)
			}
			if fmt.Sprint(gotLines) != fmt.Sprint(lines) || fmt.Sprint(gotOffsets) != fmt.Sprint(offsets) {
				t.Fatalf("cut %d, %s: lines %q at %v, want %q at %v", cut, c.name, gotLines, gotOffsets, lines, offsets)
			}
			switch {
			case wantTorn == nil && torn != nil:
				t.Fatalf("cut %d, %s: torn tail %+v, want none", cut, c.name, *torn)
			case wantTorn != nil && (torn == nil || torn.Offset != wantTorn.Offset || torn.Size != wantTorn.Size || torn.Path != c.f.Name()):
				t.Fatalf("cut %d, %s: torn tail %+v, want %+v", cut, c.name, torn, *wantTorn)
			}

			last, lastOff, err := LastLine(c.f, int64(cut))
			if err != nil {
				t.Fatalf("cut %d, %s: LastLine: %v", cut, c.name, err)
			}
			if len(lines) == 0 {
				if last != nil {
					t.Fatalf("cut %d, %s: LastLine = %q, want none", cut, c.name, last)
				}
			} else if string(last) != lines[len(lines)-1] || lastOff != offsets[len(offsets)-1] {
				t.Fatalf("cut %d, %s: LastLine = %q at %d, want %q at %d", cut, c.name, last, lastOff, lines[len(lines)-1], offsets[len(offsets)-1])
			}
		}
		g.Close()
	}
}

// TestScanLinesLongLines covers lines longer than the reader's buffer,
// complete and torn, which take ScanLines' slow path.
func TestScanLinesLongLines(t *testing.T) {
	long1 := bytes.Repeat([]byte("a"), 600<<10)
	long2 := bytes.Repeat([]byte("é"), 200<<10) // 400 KiB
	var data []byte
	data = append(append(data, long1...), '\n')
	data = append(data, "short\n"...)
	tornAt := len(data)
	data = append(data, long2...)
	path := filepath.Join(t.TempDir(), "long.jsonl")
	storetest.MustWrite(t, path, data)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lens []int
	var offs []int64
	torn, err := ScanLines(f, int64(len(data)), func(line []byte, off int64) error {
		lens = append(lens, len(line))
		offs = append(offs, off)
		if len(line) == len(long1) && !bytes.Equal(line, long1) {
			t.Errorf("the long line came back changed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(lens) != fmt.Sprint([]int{len(long1), 5}) || fmt.Sprint(offs) != fmt.Sprint([]int64{0, int64(len(long1) + 1)}) {
		t.Fatalf("lines of lengths %v at %v", lens, offs)
	}
	if torn == nil || torn.Offset != int64(tornAt) || torn.Size != int64(len(long2)) {
		t.Fatalf("torn tail %+v, want %d bytes at %d", torn, len(long2), tornAt)
	}
	last, off, err := LastLine(f, int64(len(data)))
	if err != nil || string(last) != "short" || off != int64(len(long1)+1) {
		t.Fatalf("LastLine = %q at %d (%v)", last, off, err)
	}
	last, off, err = LastLine(f, int64(len(long1)+1))
	if err != nil || !bytes.Equal(last, long1) || off != 0 {
		t.Fatalf("LastLine of the first line = %d bytes at %d (%v)", len(last), off, err)
	}
}

// TestScanLinesSmallLog: a scan of a small log allocates about the log's
// size, not the reader's whole buffer: a gateway turn reads its
// transcript of a few KB whole for each provider call, and the 256 KB
// buffer, zeroed at each scan, was 3% of the turn's CPU.
func TestScanLinesSmallLog(t *testing.T) {
	data := bytes.Repeat([]byte(`{"seq":1,"role":"user","content":"a short question"}`+"\n"), 40)
	path := filepath.Join(t.TempDir(), "small.jsonl")
	storetest.MustWrite(t, path, data)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const scans = 50
	lines := 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range scans {
		if _, err := ScanLines(f, int64(len(data)), func([]byte, int64) error { lines++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	allocated := int64(after.TotalAlloc-before.TotalAlloc) / scans
	lines /= scans
	if lines != 40 {
		t.Fatalf("%d lines, want 40", lines)
	}
	if limit := int64(4 * len(data)); allocated > limit {
		t.Errorf("a scan of %d bytes allocated %d bytes, want at most %d", len(data), allocated, limit)
	}
}
