package sessions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	t.Parallel()
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

// TestAppendOfHolderPausedMidBatch: a writer of several messages loses its
// lock between two of its lines (paused past the mount's keepalive, as
// scripts/multihost.sh's paused step does it); another writer appends. The
// first writer's first line, which the other numbered after, stays; its
// other lines, which landed after the other writer's, are moved aside, and
// the append is refused saying so. The transcript's seq has no number twice
// (before: the rest of the batch after the other writer's line, seq 4 twice).
func TestAppendOfHolderPausedMidBatch(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	other, _, _ := newTestStoreIn(t, filepath.Dir(s.Dir))
	id := mustCreate(t, s, "shared")
	mustAppend(t, s, id, textMsg("user", "one"), textMsg("assistant", "two"))
	writes := 0
	storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) {
		if f.Name() == s.logPath(id) {
			if writes++; writes == 2 {
				if err := os.Remove(s.lockPath(id)); err != nil {
					t.Fatal(err)
				}
				mustAppend(t, other, id, textMsg("user", "from the other host"))
			}
		}
		return f.Write(b)
	})
	_, err := s.Append(id, []Message{textMsg("user", "paused 1"), textMsg("assistant", "paused 2"), textMsg("user", "paused 3")})
	var fenced *fsstore.FencedError
	if !errors.Is(err, fsstore.ErrRefused) || !errors.As(err, &fenced) || fenced.Aside == "" || fenced.Stored != 1 {
		t.Fatalf("the paused writer's Append = %v, want refused with its first line stored and the rest moved aside", err)
	}
	aside, err := os.ReadFile(fenced.Aside)
	if err != nil || strings.Count(string(aside), "\n") != 2 || !strings.Contains(string(aside), "paused 3") {
		t.Fatalf("moved aside: %q, %v; want the paused writer's last two lines", aside, err)
	}
	mustAppend(t, s, id, textMsg("assistant", "after"))
	msgs := readMessages(t, s, id)
	want := []string{"one", "two", "paused 1", "from the other host", "after"}
	if got := texts(msgs); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("transcript holds %q, want %q", got, want)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Errorf("line %d: seq %d, want %d", i+1, m.Seq, i+1)
		}
	}
}
