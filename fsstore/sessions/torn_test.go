package sessions

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
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
	orig := storetest.MustRead(t, src.logPath(id))
	doc := storetest.MustRead(t, src.docPath(id))
	offs := storetest.LineOffsets(orig)
	if len(offs) != n || orig[len(orig)-1] != '\n' {
		t.Fatalf("transcript has %d lines, want %d", len(offs), n)
	}
	lastStart, newline := offs[n-1], len(orig)-1

	base := t.TempDir()
	for cut := lastStart; cut <= newline; cut++ {
		s, clock, w := newTestStoreIn(t, filepath.Join(base, fmt.Sprint(cut)))
		if err := fsstore.EnsureDir(s.Dir); err != nil {
			t.Fatal(err)
		}
		storetest.MustWrite(t, s.docPath(id), doc)
		storetest.MustWrite(t, s.logPath(id), orig[:cut])
		torn := cut > lastStart

		got := readMessages(t, s, id)
		if strings.Join(texts(got), "|") != strings.Join(want[:n-1], "|") {
			t.Fatalf("cut %d: read %q, want %q", cut, texts(got), want[:n-1])
		}
		warned := w.List()
		if torn {
			report := fmt.Sprintf("torn tail of %d bytes at offset %d", cut-lastStart, lastStart)
			if len(warned) != 1 || !strings.Contains(warned[0], report) || !strings.Contains(warned[0], s.logPath(id)) {
				t.Fatalf("cut %d: warnings %q, want one naming %s and %q", cut, warned, s.logPath(id), report)
			}
		} else if len(warned) != 0 {
			t.Fatalf("cut %d (a clean end): warnings %q, want none", cut, warned)
		}
		w.Reset()

		count, err := s.Append(id, []Message{textMsg("assistant", "after the crash")})
		if err != nil {
			t.Fatalf("cut %d: Append: %v", cut, err)
		}
		if count != n {
			t.Fatalf("cut %d: Append returned count %d, want %d", cut, count, n)
		}
		aside := fmt.Sprintf("%s.torn-%d", s.logPath(id), clock.Now().Unix())
		if torn {
			if got := storetest.MustRead(t, aside); !bytes.Equal(got, orig[lastStart:cut]) {
				t.Fatalf("cut %d: %s holds %q, want the cut bytes %q", cut, aside, got, orig[lastStart:cut])
			}
			if w := w.List(); len(w) != 1 || !strings.Contains(w[0], aside) {
				t.Fatalf("cut %d: warnings %q, want one naming %s", cut, w, aside)
			}
		} else {
			for _, name := range storetest.DirNames(t, s.Dir) {
				if strings.Contains(name, ".torn-") {
					t.Fatalf("cut %d (a clean end): %s was made", cut, name)
				}
			}
		}

		after := storetest.MustRead(t, s.logPath(id))
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
