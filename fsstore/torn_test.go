package fsstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTornTailEveryOffset cuts the last record of a transcript at every
// byte, as a crash in the middle of its write could, and checks invariant 3
// at each cut: readers return the complete messages and report the torn
// tail at its offset; the next Append moves exactly the cut bytes aside,
// numbers its message after the last complete one, and leaves every byte
// before the cut as it was.
func TestTornTailEveryOffset(t *testing.T) {
	src, _, _ := newTestStore(t)
	id := mustCreate(t, src, "torn")
	const n = 5
	var want []string
	for i := 1; i <= n; i++ {
		text := fmt.Sprintf("message %d", i)
		if i == n {
			// Multi-byte runes, so that some cuts fall inside a rune.
			text = "last one: été, naïve ✓ \"quoted\" \\ back"
		}
		want = append(want, text)
		mustAppend(t, src, id, textMsg("user", text))
	}
	orig := mustRead(t, src.logPath(id))
	doc := mustRead(t, src.docPath(id))
	offs := lineOffsets(orig)
	if len(offs) != n || orig[len(orig)-1] != '\n' {
		t.Fatalf("transcript has %d lines, want %d", len(offs), n)
	}
	lastStart, newline := offs[n-1], len(orig)-1

	base := t.TempDir()
	for cut := lastStart; cut <= newline; cut++ {
		s, clock, w := newTestStoreIn(t, filepath.Join(base, fmt.Sprint(cut)))
		if err := EnsureDir(s.Dir); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, s.docPath(id), doc)
		mustWrite(t, s.logPath(id), orig[:cut])
		torn := cut > lastStart

		got := readMessages(t, s, id)
		if strings.Join(texts(got), "|") != strings.Join(want[:n-1], "|") {
			t.Fatalf("cut %d: read %q, want %q", cut, texts(got), want[:n-1])
		}
		warned := w.list()
		if torn {
			report := fmt.Sprintf("torn tail of %d bytes at offset %d", cut-lastStart, lastStart)
			if len(warned) != 1 || !strings.Contains(warned[0], report) || !strings.Contains(warned[0], s.logPath(id)) {
				t.Fatalf("cut %d: warnings %q, want one naming %s and %q", cut, warned, s.logPath(id), report)
			}
		} else if len(warned) != 0 {
			t.Fatalf("cut %d (a clean end): warnings %q, want none", cut, warned)
		}
		w.reset()

		count, err := s.Append(id, []Message{textMsg("assistant", "after the crash")})
		if err != nil {
			t.Fatalf("cut %d: Append: %v", cut, err)
		}
		if count != n {
			t.Fatalf("cut %d: Append returned count %d, want %d", cut, count, n)
		}
		aside := fmt.Sprintf("%s.torn-%d", s.logPath(id), clock.Now().Unix())
		if torn {
			if got := mustRead(t, aside); !bytes.Equal(got, orig[lastStart:cut]) {
				t.Fatalf("cut %d: %s holds %q, want the cut bytes %q", cut, aside, got, orig[lastStart:cut])
			}
			if w := w.list(); len(w) != 1 || !strings.Contains(w[0], aside) {
				t.Fatalf("cut %d: warnings %q, want one naming %s", cut, w, aside)
			}
		} else {
			for _, name := range dirNames(t, s.Dir) {
				if strings.Contains(name, ".torn-") {
					t.Fatalf("cut %d (a clean end): %s was made", cut, name)
				}
			}
		}

		after := mustRead(t, s.logPath(id))
		if !bytes.Equal(after[:lastStart], orig[:lastStart]) {
			t.Fatalf("cut %d: bytes before the cut changed", cut)
		}
		tail, err := ParseMessage(bytes.TrimSuffix(after[lastStart:], []byte("\n")))
		if err != nil || tail.Seq != n || tail.Text() != "after the crash" || bytes.Count(after[lastStart:], []byte("\n")) != 1 {
			t.Fatalf("cut %d: after the complete lines the transcript has %q (%v), want one line with seq %d", cut, after[lastStart:], err, n)
		}
		if got := readMessages(t, s, id); len(got) != n || got[n-1].Seq != n {
			t.Fatalf("cut %d: %d messages after the append, want %d", cut, len(got), n)
		}
		if got, err := s.Get(id); err != nil || got.MessageCount != n {
			t.Fatalf("cut %d: Get says %d messages (%v), want %d", cut, got.MessageCount, err, n)
		}
		if d := docOf(t, s, id); d.MessageCount > n {
			t.Fatalf("cut %d: document says %d messages, ahead of the transcript's %d", cut, d.MessageCount, n)
		}
	}
}

// TestScanLinesEveryCut checks ScanLines and LastLine on every prefix of a
// log (through the size argument and through a truncated file): the
// complete lines before the cut are passed with their offsets, and the
// rest comes back as the torn tail.
func TestScanLinesEveryCut(t *testing.T) {
	t.Run("handmade", func(t *testing.T) {
		checkScanLinesEveryCut(t, []byte("{\"a\":1}\n\n{\"b\":\"été\"}\nplain line\n{\"c\":[1,2,3]}\nx\n"))
	})
	t.Run("transcript", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		id := mustCreate(t, s, "s")
		mustAppend(t, s, id, textMsg("system", "be brief"), textMsg("user", "naïve ✓"),
			Message{Role: "assistant", Content: json.RawMessage(`null`), ToolCalls: json.RawMessage(`[{"id":"c1","type":"function"}]`)},
			Message{Role: "tool", Content: TextContent("ok"), ToolCallID: "c1"})
		checkScanLinesEveryCut(t, mustRead(t, s.logPath(id)))
	})
}

func checkScanLinesEveryCut(t *testing.T, data []byte) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	mustWrite(t, full, data)
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
		for _, off := range lineOffsets(data[:cut]) {
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
		mustWrite(t, cutPath, data[:cut])
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
	mustWrite(t, path, data)
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
