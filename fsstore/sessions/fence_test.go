package sessions

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestAppendOfStaleHolderRefused: a writer numbered its message under the
// session's lock and lost the lock before its write (its host cut off
// past the mount's keepalive, or paused); another writer took the lock
// and appended. The first append is refused (ErrRefused) with its line
// moved aside, the second stands, and the transcript's seq stays 1, 2, 3
// with no number twice; the next append numbers from the second's line.
func TestAppendOfStaleHolderRefused(t *testing.T) {
	s, _, _ := newTestStore(t)
	other, _, _ := newTestStoreIn(t, filepath.Dir(s.Dir))
	id := mustCreate(t, s, "shared")
	mustAppend(t, s, id, textMsg("user", "one"), textMsg("assistant", "two"))
	paused := true
	storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) {
		if paused && f.Name() == s.logPath(id) {
			paused = false
			if err := os.Remove(s.lockPath(id)); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, other, id, textMsg("user", "from the other host"))
		}
		return f.Write(b)
	})
	_, err := s.Append(id, []Message{textMsg("user", "from the paused host")})
	var fenced *fsstore.FencedError
	if !errors.Is(err, fsstore.ErrRefused) || !errors.As(err, &fenced) || fenced.Aside == "" {
		t.Fatalf("stale holder's Append = %v, want refused with its line moved aside", err)
	}
	mustAppend(t, s, id, textMsg("assistant", "four"))
	msgs := readMessages(t, s, id)
	want := []string{"one", "two", "from the other host", "four"}
	if got := texts(msgs); len(got) != len(want) {
		t.Fatalf("transcript holds %q, want %q", got, want)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) || m.Text() != want[i] {
			t.Errorf("line %d: seq %d %q, want seq %d %q", i+1, m.Seq, m.Text(), i+1, want[i])
		}
	}
	if sess, err := s.Get(id); err != nil || sess.MessageCount != 4 {
		t.Errorf("Get = count %d, %v; want 4", sess.MessageCount, err)
	}
}
