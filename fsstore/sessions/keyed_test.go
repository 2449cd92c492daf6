package sessions

import (
	"errors"
	"sync"
	"testing"

	"github.com/hermes/hermes/fsstore"
)

// mapKeys keeps key records in memory, as the gateway's store keeps them
// on disk.
type mapKeys map[string]KeyRecord

func (m mapKeys) GetKey(key string) (KeyRecord, bool, error) {
	r, ok := m[key]
	return r, ok, nil
}

func (m mapKeys) PutKey(key string, r KeyRecord) error {
	m[key] = r
	return nil
}

// TestAppendKeyed: an append with a key stores its messages at most once:
// a retry with the key stores nothing and answers the count of the first;
// a retry after a first whose outcome was unknown (its record says it
// began, not that it ended) stores the messages when they are not there
// and nothing when they are; the key with other messages is refused.
func TestAppendKeyed(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "k1")
	keys := mapKeys{}
	msg := func(text string) []Message { return []Message{textMsg("user", text)} }
	n, again, err := s.AppendKeyed(id, "a", msg("one"), keys)
	if err != nil || n != 1 || again {
		t.Fatalf("first keyed append = %d, %v, %v; want 1, false, nil", n, again, err)
	}
	mustAppend(t, s, id, textMsg("assistant", "two"))
	n, again, err = s.AppendKeyed(id, "a", msg("one"), keys)
	if err != nil || n != 1 || !again {
		t.Fatalf("retry = %d, %v, %v; want 1 (the first's count), true, nil", n, again, err)
	}
	if _, _, err := s.AppendKeyed(id, "a", msg("not one"), keys); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("the key with other messages = %v, want ErrInvalid", err)
	}
	if _, _, err := s.AppendKeyed(mustCreate(t, s, "other"), "a", msg("one"), keys); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("the key on another session = %v, want ErrInvalid", err)
	}

	// A first append whose outcome was unknown, and whose lines are stored.
	mustAppend(t, s, id, textMsg("user", "three"))
	rec := KeyRecord{SessionID: id, Digest: keyDigest(msg("three")), From: 2}
	keys["b"] = rec
	n, again, err = s.AppendKeyed(id, "b", msg("three"), keys)
	if err != nil || n != 3 || !again {
		t.Fatalf("retry of a stored append of unknown outcome = %d, %v, %v; want 3, true, nil", n, again, err)
	}
	if keys["b"].To != 3 {
		t.Errorf("the key's record says it ended at %d, want 3", keys["b"].To)
	}
	// And one whose lines are not.
	keys["c"] = KeyRecord{SessionID: id, Digest: keyDigest(msg("four")), From: 3}
	n, again, err = s.AppendKeyed(id, "c", msg("four"), keys)
	if err != nil || n != 4 || again {
		t.Fatalf("retry of a lost append of unknown outcome = %d, %v, %v; want 4, false, nil", n, again, err)
	}
	want := []string{"one", "two", "three", "four"}
	got := texts(readMessages(t, s, id))
	if len(got) != len(want) {
		t.Fatalf("transcript holds %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("transcript holds %q, want %q", got, want)
		}
	}
}

// lockedKeys is mapKeys for calls from several goroutines.
type lockedKeys struct {
	mu sync.Mutex
	m  mapKeys
}

func (l *lockedKeys) GetKey(key string) (KeyRecord, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.GetKey(key)
}

func (l *lockedKeys) PutKey(key string, r KeyRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.PutKey(key, r)
}

// TestAppendKeyedAtOnce: calls with one key at once store its message
// once, and each answers the same count.
func TestAppendKeyedAtOnce(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "k1")
	keys := &lockedKeys{m: mapKeys{}}
	var wg sync.WaitGroup
	counts := make([]int64, 8)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _, err := s.AppendKeyed(id, "once", []Message{textMsg("user", "hi")}, keys)
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		}()
	}
	wg.Wait()
	if got := readMessages(t, s, id); len(got) != 1 {
		t.Fatalf("%d calls with one key stored %q", len(counts), texts(got))
	}
	for i, n := range counts {
		if n != 1 {
			t.Errorf("call %d answered %d, want 1", i, n)
		}
	}
}

// TestAppendKeyedAfterPart: a first append of several messages killed
// between its lines (each line is its own write) left the first of them
// stored, and another writer appended after them: the retry with the key
// appends only the rest, so that each message is stored once.
func TestAppendKeyedAfterPart(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "k1")
	keys := mapKeys{}
	batch := []Message{textMsg("user", "b1"), textMsg("user", "b2"), textMsg("user", "b3")}
	keys["k"] = KeyRecord{SessionID: id, Digest: keyDigest(batch), From: 0}
	mustAppend(t, s, id, textMsg("user", "b1"))
	mustAppend(t, s, id, textMsg("user", "other"))
	n, again, err := s.AppendKeyed(id, "k", batch, keys)
	if err != nil || n != 4 || again {
		t.Fatalf("retry of an append whose first line is stored = %d, %v, %v; want 4, false, nil", n, again, err)
	}
	want := []string{"b1", "other", "b2", "b3"}
	got := texts(readMessages(t, s, id))
	if len(got) != len(want) {
		t.Fatalf("transcript holds %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("transcript holds %q, want %q", got, want)
		}
	}
	if keys["k"].To != 4 {
		t.Errorf("the key's record says it ended at %d, want 4", keys["k"].To)
	}
	n, again, err = s.AppendKeyed(id, "k", batch, keys)
	if err != nil || n != 4 || !again {
		t.Fatalf("a second retry = %d, %v, %v; want 4, true, nil", n, again, err)
	}
}
