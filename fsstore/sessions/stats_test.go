package sessions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Stats reads the catalog, not the documents: it opens none of them, and
// counts each session as of its last write, a removal included. A session
// whose catalog line predates the counts is read from its document.
func TestStatsFromTheCatalog(t *testing.T) {
	t.Parallel()
	s, clock, _ := newTestStore(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		mustCreate(t, s, id)
	}
	mustAppend(t, s, "a", textMsg("user", "one"), textMsg("assistant", "two"))
	mustAppend(t, s, "b", textMsg("user", "three"))
	if _, err := s.End("c", "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.End("d", "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete("d", false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(Session{ID: "e", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	// A line as an older hermes wrote it, for a session written since.
	mustAppend(t, s, "e", textMsg("user", "four"))
	f, err := os.OpenFile(s.catalogPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"session_id":"e","at":"2026-11-21T02:07:36.123456Z"}` + "\n")
	f.Close()
	// An id longer than Stats keys by value, written twice.
	long := strings.Repeat("l", idKeySize+20)
	mustCreate(t, s, long)
	mustAppend(t, s, long, textMsg("user", "five"))
	mustAppend(t, s, long, textMsg("assistant", "six"))
	f, err = os.OpenFile(s.catalogPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"session_id":"` + long + `","at":"2026-11-21T02:07:36.123456Z"}` + "\n")
	f.Close()

	var sizes int64
	for _, id := range []string{"a", "b", "c", "e", long} {
		fi, err := os.Stat(s.logPath(id))
		if err == nil {
			sizes += fi.Size()
		}
	}
	reads := countDocReads(t, s)
	// Stats as `hermes sessions stats` runs it, in a process that has
	// kept no document decoded (docCache).
	st, err := NewStore(filepath.Dir(s.Dir), "default", s.LockTimeout, s.Warn).Stats()
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Sessions: 5, ByState: map[string]int64{"active": 4, "ended": 1},
		BySource: map[string]int64{"test": 4, "api": 1}, Messages: 6, Bytes: sizes}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
	if got := reads(); len(got) != 2 || got["e"] != 1 || got[long] != 1 {
		t.Fatalf("Stats read the documents %v, want only e's and %s's (their lines have no counts)", got, long)
	}
}

// parseCatalogLine reads what encoding/json writes, and declines what it
// does not recognize.
func TestParseCatalogLine(t *testing.T) {
	for _, e := range []catalogEntry{
		{SessionID: "a", At: "2026-01-01T00:00:00.000000Z"},
		{SessionID: "a", At: "2026-01-01T00:00:00.000000Z", State: "ended", Source: "cli", MessageCount: 12, Bytes: 3456},
		{SessionID: "a", At: "2026-01-01T00:00:00.000000Z", State: "active", MessageCount: 1},
		{SessionID: "a", At: "2025-01-01T00:00:00.000000Z", Written: "2026-01-01T00:00:00.000000Z", State: "ended", Source: "claude-code", MessageCount: 7, Bytes: 99},
		{SessionID: "a", At: "2026-01-01T00:00:00.000000Z", Removed: true},
	} {
		line := mustJSON(t, e)
		got, ok := parseCatalogLine(line)
		want := catalogFields{id: []byte(e.SessionID), messages: e.MessageCount, bytes: e.Bytes, removed: e.Removed}
		if e.State != "" {
			want.state = []byte(e.State)
		}
		if e.Source != "" {
			want.source = []byte(e.Source)
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("parseCatalogLine(%s) = %+v, %v", line, got, ok)
		}
	}
	for _, line := range []string{
		`{"session_id":"a","at":"x","source":"a\"b"}`,
		`{"at":"x","session_id":"a"}`,
		`{"session_id":"a","at":"x"} `,
		`{"session_id":"a","at":"x","message_count":-1}`,
	} {
		if _, ok := parseCatalogLine([]byte(line)); ok {
			t.Errorf("parseCatalogLine(%s) took it", line)
		}
	}
	if !strings.HasPrefix(string(mustJSON(t, catalogEntry{SessionID: "a", Written: "2026-01-01T00:00:00.000000Z"})), `{"session_id":"a","at":"","written":"2026-01-01T00:00:00.000000Z"`) {
		t.Fatal("field order changed: parseCatalogLine reads them in order")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
