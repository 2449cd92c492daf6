package fsstore

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// warnings collects what a store reports through Warn.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func (w *warnings) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = nil
}

// testClock is a settable clock: the names of the copies that recovery
// keeps aside (.torn-<unix>, .corrupt-<unix>, .replaced-<unix>) follow it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// advance moves the clock on by d and returns the new time.
func (c *testClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

var testEpoch = time.Date(2026, 11, 21, 2, 7, 34, 123456000, time.UTC)

// newTestStore returns a store in a fresh profile directory, with a settable
// clock and its warnings collected.
func newTestStore(t testing.TB) (*SessionStore, *testClock, *warnings) {
	t.Helper()
	return newTestStoreIn(t, filepath.Join(t.TempDir(), "profiles", "default"))
}

func newTestStoreIn(t testing.TB, profileDir string) (*SessionStore, *testClock, *warnings) {
	t.Helper()
	w := &warnings{}
	clock := &testClock{now: testEpoch}
	s := NewSessionStore(profileDir, "default", 10*time.Second, w.add)
	s.Now = clock.Now
	return s, clock, w
}

// textMsg is a chat message with string content.
func textMsg(role, text string) Message {
	return Message{Role: role, Content: TextContent(text)}
}

// mustCreate creates session id (or fails the test) and returns its id.
func mustCreate(t testing.TB, s *SessionStore, id string) string {
	t.Helper()
	sess, _, err := s.Create(Session{ID: id, Source: "test"})
	if err != nil {
		t.Fatalf("Create(%q): %v", id, err)
	}
	return sess.ID
}

// mustAppend appends msgs to id one call per message.
func mustAppend(t testing.TB, s *SessionStore, id string, msgs ...Message) {
	t.Helper()
	for _, m := range msgs {
		if _, err := s.Append(id, []Message{m}); err != nil {
			t.Fatalf("Append(%s): %v", id, err)
		}
	}
}

// readMessages reads the transcript of id through OpenTranscript and Each.
func readMessages(t testing.TB, s *SessionStore, id string) []Message {
	t.Helper()
	tr, err := s.OpenTranscript(id)
	if err != nil {
		t.Fatalf("OpenTranscript(%s): %v", id, err)
	}
	defer tr.Close()
	var msgs []Message
	if err := tr.Each(func(m Message) error { msgs = append(msgs, m); return nil }); err != nil {
		t.Fatalf("Each(%s): %v", id, err)
	}
	return msgs
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustWrite(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// dirNames lists the names in dir, sorted.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// texts returns the text of each message.
func texts(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}

// lineOffsets returns the offset at which each line of b starts.
func lineOffsets(b []byte) []int {
	var offs []int
	for off := 0; off < len(b); {
		offs = append(offs, off)
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return offs
}

// docOf reads the document of id straight from disk.
func docOf(t testing.TB, s *SessionStore, id string) Session {
	t.Helper()
	var sess Session
	if err := json.Unmarshal(mustRead(t, s.docPath(id)), &sess); err != nil {
		t.Fatalf("document of %s: %v", id, err)
	}
	return sess
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
