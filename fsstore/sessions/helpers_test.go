package sessions

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// newTestStore returns a store in a fresh profile directory, with a settable
// clock and its warnings collected.
func newTestStore(t testing.TB) (*Store, *storetest.Clock, *storetest.Warnings) {
	t.Helper()
	return newTestStoreIn(t, filepath.Join(t.TempDir(), "profiles", "default"))
}

func newTestStoreIn(t testing.TB, profileDir string) (*Store, *storetest.Clock, *storetest.Warnings) {
	t.Helper()
	w := &storetest.Warnings{}
	clock := storetest.NewClock()
	s := NewStore(profileDir, "default", 10*time.Second, w.Add)
	s.Now = clock.Now
	return s, clock, w
}

// textMsg is a chat message with string content.
func textMsg(role, text string) Message {
	return Message{Role: role, Content: TextContent(text)}
}

// mustCreate creates session id (or fails the test) and returns its id.
func mustCreate(t testing.TB, s *Store, id string) string {
	t.Helper()
	sess, _, err := s.Create(Session{ID: id, Source: "test"})
	if err != nil {
		t.Fatalf("Create(%q): %v", id, err)
	}
	return sess.ID
}

// mustAppend appends msgs to id one call per message.
func mustAppend(t testing.TB, s *Store, id string, msgs ...Message) {
	t.Helper()
	for _, m := range msgs {
		if _, err := s.Append(id, []Message{m}); err != nil {
			t.Fatalf("Append(%s): %v", id, err)
		}
	}
}

// readMessages reads the transcript of id through OpenTranscript and Each.
func readMessages(t testing.TB, s *Store, id string) []Message {
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

// texts returns the text of each message.
func texts(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}

// docOf reads the document of id straight from disk.
func docOf(t testing.TB, s *Store, id string) Session {
	t.Helper()
	var sess Session
	if err := json.Unmarshal(storetest.MustRead(t, s.docPath(id)), &sess); err != nil {
		t.Fatalf("document of %s: %v", id, err)
	}
	return sess
}

// catalogLatest returns the last line of each session the catalog names:
// what a test reads the catalog as.
func (s *Store) catalogLatest() (map[string]catalogEntry, error) {
	ids := map[string]catalogEntry{}
	f, size, err := fsstore.OpenSized(s.catalogPath())
	if f == nil || err != nil {
		return ids, err
	}
	defer f.Close()
	_, err = fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		var e catalogEntry
		if _, ok := lineSession(line); ok && json.Unmarshal(line, &e) == nil {
			ids[e.SessionID] = e
		}
		return nil
	})
	return ids, err
}
