package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

func ids(list []Session) string {
	var out []string
	for _, s := range list {
		out = append(out, s.ID)
	}
	return strings.Join(out, ",")
}

// TestListFollowsActivity: List orders by the latest write, not by
// creation: an append to an old session moves it first, and the limit
// keeps the most recent.
func TestListFollowsActivity(t *testing.T) {
	s, clock, _ := newTestStore(t)
	for _, id := range []string{"a", "b", "c"} {
		clock.Advance(time.Second)
		mustCreate(t, s, id)
	}
	list, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "c,b,a" {
		t.Fatalf("List = %s, want c,b,a", got)
	}
	clock.Advance(time.Second)
	mustAppend(t, s, "a", textMsg("user", "back to a"))
	list, err = s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "a,c,b" {
		t.Fatalf("List after an append to a = %s, want a,c,b", got)
	}
	if list[0].MessageCount != 1 || list[0].Preview != "back to a" {
		t.Fatalf("List[0] = %+v", list[0])
	}
	clock.Advance(time.Second)
	if _, err := s.End("b", "done"); err != nil {
		t.Fatal(err)
	}
	list, err = s.List(ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "b,a" {
		t.Fatalf("List --limit 2 after ending b = %s, want b,a", got)
	}
	list, err = s.List(ListOptions{State: StateActive})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "a,c" {
		t.Fatalf("List --state active = %s, want a,c", got)
	}
}

// TestListRebuildsMissingCatalog: the catalog is a cache: with it deleted,
// List rebuilds it from the documents, in the same order.
func TestListRebuildsMissingCatalog(t *testing.T) {
	s, clock, _ := newTestStore(t)
	for _, id := range []string{"a", "b", "c"} {
		clock.Advance(time.Second)
		mustCreate(t, s, id)
	}
	clock.Advance(time.Second)
	mustAppend(t, s, "a", textMsg("user", "x"))
	if err := os.Remove(s.catalogPath()); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "a,c,b" {
		t.Fatalf("List without a catalog = %s, want a,c,b", got)
	}
	if _, err := os.Stat(s.catalogPath()); err != nil {
		t.Fatalf("catalog was not rebuilt: %v", err)
	}
	// The rebuilt catalog holds its name and one line per session, and
	// serves the next List by itself.
	rebuilt := storetest.MustRead(t, s.catalogPath())
	if n := strings.Count(string(rebuilt), "\n"); n != 4 || !strings.HasPrefix(string(rebuilt), string(catalogHeaderPrefix)) {
		t.Fatalf("rebuilt catalog has %d lines, want its name and 3:\n%s", n, rebuilt)
	}
	list, err = s.List(ListOptions{Limit: 1})
	if err != nil || ids(list) != "a" {
		t.Fatalf("List --limit 1 = %s, %v", ids(list), err)
	}
}

// TestListSkipsCatalogDamage: catalog lines for deleted sessions, lines
// that do not parse, and a torn tail are skipped.
func TestListSkipsCatalogDamage(t *testing.T) {
	s, clock, _ := newTestStore(t)
	for _, id := range []string{"a", "b"} {
		clock.Advance(time.Second)
		mustCreate(t, s, id)
	}
	cat := storetest.MustRead(t, s.catalogPath())
	cat = append(cat, "not json\n{\"session_id\":\"gone\",\"at\":\"x\"}\n{\"session_id\":\"../x\",\"at\":\"x\"}\n{\"session_id\":\"a\",\"at"...)
	storetest.MustWrite(t, s.catalogPath(), cat)
	list, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "b,a" {
		t.Fatalf("List = %s, want b,a", got)
	}
}

// TestSearch: case-insensitive, in ASCII and beyond, in string content and
// text parts, never in the role or other keys of the line.
func TestSearch(t *testing.T) {
	s, clock, _ := newTestStore(t)
	// Ids sort by creation, as real ones do: hits come newest session first.
	mustCreate(t, s, "20260101_old")
	mustAppend(t, s, "20260101_old",
		textMsg("user", "Plans for the summer: l'été à Paris"),
		textMsg("assistant", "Sounds good."),
		Message{Role: "user", Content: json.RawMessage(`[{"type":"text","text":"Hello WORLD"},{"type":"image_url","image_url":{"url":"hello://x"}}]`)},
	)
	clock.Advance(time.Second)
	mustCreate(t, s, "20260102_new")
	mustAppend(t, s, "20260102_new", textMsg("user", "hello again"), textMsg("tool", "Straße"))

	cases := []struct {
		query string
		want  []string // session:seq
	}{
		{"hello", []string{"20260102_new:1", "20260101_old:3"}},
		{"HELLO", []string{"20260102_new:1", "20260101_old:3"}},
		{"world", []string{"20260101_old:3"}},
		{"ÉTÉ", []string{"20260101_old:1"}},
		{"été à", []string{"20260101_old:1"}},
		{"STRASSE", nil}, // no full case folding: ß is not ss
		{"straße", []string{"20260102_new:2"}},
		{"assistant", nil},
		{"user", nil},
		{"role", nil},
		{"image_url", nil},
		{"type", nil},
		{"sounds good.", []string{"20260101_old:2"}},
		{"l'été", []string{"20260101_old:1"}},
	}
	for _, c := range cases {
		hits, err := s.Search(c.query, 0)
		if err != nil {
			t.Fatalf("Search(%q): %v", c.query, err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, fmt.Sprintf("%s:%d", h.SessionID, h.Seq))
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("Search(%q) = %q, want %q", c.query, got, c.want)
		}
	}
	hits, err := s.Search("hello", 1)
	if err != nil || len(hits) != 1 || hits[0].SessionID != "20260102_new" {
		t.Fatalf("Search with limit 1 = %+v, %v", hits, err)
	}
	if hits[0].Snippet != "hello again" || hits[0].Role != "user" {
		t.Fatalf("hit = %+v", hits[0])
	}
	if _, err := s.Search("", 0); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("empty query: %v", err)
	}
}

// TestSearchEscapedContent: content that came in with JSON escapes (as
// Python's json.dumps writes non-ASCII, and Go's json.Marshal writes <, >
// and &) is stored as it came, and search still finds its text.
func TestSearchEscapedContent(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "escaped")
	for _, line := range []string{
		`{"role":"user","content":"l'\u00e9t\u00e9 \u00e0 Paris"}`,
		`{"role":"assistant","content":"use \u003cdiv\u003e \u0026 friends"}`,
		`{"role":"user","content":"path a\/b"}`,
		`{"role":"user","content":[{"type":"text","text":"caf\u00c9"}]}`,
	} {
		m, err := ParseMessage([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, id, m)
	}
	for query, seq := range map[string]int64{"été": 1, "ÉTÉ": 1, "<div>": 2, "& friends": 2, "a/b": 3, "café": 4} {
		hits, err := s.Search(query, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Seq != seq {
			t.Errorf("Search(%q) = %+v, want message %d", query, hits, seq)
		}
	}
}

// TestListOrdersImportsByTheirHistory: a session created with an old
// history (an import) is listed where its last activity puts it, not first
// because its catalog line is the newest; ActiveSince does not stop at it,
// and Prune sees its history's time.
func TestListOrdersImportsByTheirHistory(t *testing.T) {
	s, clock, _ := newTestStore(t)
	start := clock.Now()
	mustCreate(t, s, "old")
	clock.Advance(200 * 24 * time.Hour)
	mustCreate(t, s, "recent")
	clock.Advance(time.Second)
	mustCreate(t, s, "newest")
	clock.Advance(time.Second)
	at := func(d time.Duration) fsstore.Time { return fsstore.TimeOf(start.Add(d)) }
	msgs := []Message{textMsg("user", "long ago"), textMsg("assistant", "indeed")}
	msgs[0].TS, msgs[1].TS = at(time.Hour), at(2*time.Hour)
	imported, _, err := s.CreateWith(Session{ID: "imported", State: StateEnded, CreatedAt: at(time.Hour), UpdatedAt: at(2 * time.Hour)}, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if imported.UpdatedAt != at(2*time.Hour) || imported.EndedAt != at(2*time.Hour) {
		t.Fatalf("imported: updated_at %s, ended_at %s; want both %s", imported.UpdatedAt, imported.EndedAt, at(2*time.Hour))
	}
	for _, limit := range []int{0, 3, 4} {
		list, err := s.List(ListOptions{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		want := "newest,recent,imported,old"
		if limit > 0 {
			want = strings.Join(strings.Split(want, ",")[:limit], ",")
		}
		if got := ids(list); got != want {
			t.Fatalf("List(limit %d) = %s, want %s", limit, got, want)
		}
	}
	active, err := s.ActiveSince(clock.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(active); got != "newest,recent" {
		t.Fatalf("ActiveSince = %s, want newest,recent", got)
	}
	removed, err := s.Prune(clock.Now().Add(-90*24*time.Hour), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].SessionID != "imported" {
		t.Fatalf("Prune = %+v, want the imported session", removed)
	}
}

// seenLine skips a catalog line only when it is one the store writes and
// its session is among those seen; anything else goes to the decoder.
func TestSeenLine(t *testing.T) {
	seen := map[string]bool{"20261124_100000_aaaaaa": true}
	for _, c := range []struct {
		line string
		want bool
	}{
		{`{"session_id":"20261124_100000_aaaaaa","at":"2026-11-24T10:00:00.000000Z"}`, true},
		{`{"session_id":"20261124_100000_bbbbbb","at":"2026-11-24T10:00:00.000000Z"}`, false},
		{`{"at":"2026-11-24T10:00:00.000000Z","session_id":"20261124_100000_aaaaaa"}`, false},
		{`{"session_id":"20261124_100000_aaaaaa\"b","at":"2026-11-24T10:00:00.000000Z"}`, false},
		{`{"session_id":"20261124_100000_aaaaaa`, false},
		{``, false},
	} {
		if got := seenLine([]byte(c.line), seen); got != c.want {
			t.Errorf("seenLine(%s) = %v, want %v", c.line, got, c.want)
		}
	}
}
