package sessions

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// countOpens counts, for the rest of the test, the transcripts search
// opens, by name.
func countOpens(t *testing.T) func() []string {
	var mu sync.Mutex
	var names []string
	storetest.SetOpenRead(t, func(dirfd int, name string) (int, error) {
		mu.Lock()
		names = append(names, name)
		mu.Unlock()
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		slices.Sort(names)
		return slices.Clone(names)
	}
}

// TestSearchOpensNoEmptyTranscript: a transcript with nothing in it costs
// no open, whatever the query; the others are each opened once.
func TestSearchOpensNoEmptyTranscript(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	mustCreate(t, s, "a")
	mustAppend(t, s, "a", textMsg("user", "a needle here"))
	mustCreate(t, s, "b")
	storetest.MustWrite(t, s.logPath("b"), nil)
	mustCreate(t, s, "c")
	mustAppend(t, s, "c", textMsg("user", "nothing to see"))
	opened := countOpens(t)
	for _, query := range []string{"needle", "NÉEDLE", `"needle"`} {
		if _, err := s.Search(query, 0); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"a.jsonl", "a.jsonl", "a.jsonl", "c.jsonl", "c.jsonl", "c.jsonl"}
	if got := opened(); !slices.Equal(got, want) {
		t.Fatalf("opened %q, want %q", got, want)
	}
}

// TestSearchSkipsTornTail: bytes after the last newline are not a message,
// even when they parse, and a line longer than a read buffer is read whole.
func TestSearchSkipsTornTail(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "torn")
	long := strings.Repeat("a", 600<<10) + " needle"
	mustAppend(t, s, id, textMsg("user", "one needle"), textMsg("user", long))
	f, err := os.OpenFile(s.logPath(id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":3,"ts":"2026-01-01T00:00:00.000000Z","role":"user","content":"a needle in the tail"}`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	hits, err := s.Search("needle", 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, h := range hits {
		seqs = append(seqs, h.Seq)
	}
	if !slices.Equal(seqs, []int64{1, 2}) {
		t.Fatalf("hits at seqs %v, want 1 and 2", seqs)
	}
	if want := "…" + strings.Repeat("a", 39) + " needle"; hits[1].Snippet != want {
		t.Fatalf("snippet of the long line = %q", hits[1].Snippet)
	}
}

// TestSearchDuringAppends: a search that runs while messages larger than
// its buffer are appended sees each of them whole or not at all.
func TestSearchDuringAppends(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "busy")
	const n = 20
	text := func(i int) string {
		return strings.Repeat("x", 200<<10) + fmt.Sprintf(" needle-%02d ", i) + strings.Repeat("y", 200<<10)
	}
	want := func(i int) string {
		return "…" + strings.Repeat("x", 39) + fmt.Sprintf(" needle-%02d ", i) + strings.Repeat("y", 36) + "…"
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			if _, err := s.Append(id, []Message{textMsg("user", text(i))}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	check := func() (int, error) {
		hits, err := s.Search("needle", 0)
		if err != nil {
			return 0, err
		}
		for i, h := range hits {
			if h.Seq != int64(i+1) || h.Snippet != want(i+1) {
				return 0, fmt.Errorf("hit %d: seq %d, snippet %q", i, h.Seq, h.Snippet)
			}
		}
		return len(hits), nil
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if _, err := check(); err != nil {
			<-done
			t.Fatal(err)
		}
	}
	if got, err := check(); err != nil || got != n {
		t.Fatalf("%d hits after the appends (%v), want %d", got, err, n)
	}
}

// TestSearchToolActivity: a tool call is found by its name and the values
// of its arguments, shown as name(arguments); a tool result by its
// content; ids, keys of the call and keys of its arguments are not text.
func TestSearchToolActivity(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "tools")
	mustAppend(t, s, id,
		textMsg("user", "what is in the notes?"),
		Message{Role: "assistant", Content: json.RawMessage("null"),
			ToolCalls: json.RawMessage(`[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"notes.md\"}"}}]`)},
		Message{Role: "tool", ToolCallID: "call_1", Name: "read_file", Content: TextContent("a quokka lives here")},
		Message{Role: "assistant", Content: TextContent("Let me look."),
			ToolCalls: json.RawMessage(`[{"id":"call_2","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"ls\"}"}},{"id":"call_3","type":"function","function":{"name":"web_search","arguments":"{\"query\":\"Quokka habitat\"}"}}]`)},
	)
	cases := []struct {
		query string
		want  []string // seq role snippet
	}{
		{"read_file", []string{`2 assistant read_file({"path":"notes.md"})`}},
		{"NOTES.MD", []string{`2 assistant read_file({"path":"notes.md"})`}},
		{"path", nil},
		{`"path":"notes`, nil},
		{"ls", []string{`4 assistant terminal({"command":"ls"})`}},
		{"quokka", []string{"3 tool a quokka lives here", `4 assistant web_search({"query":"Quokka habitat"})`}},
		{"look", []string{"4 assistant Let me look."}},
		{"call_1", nil},
		{"function", nil},
	}
	for _, c := range cases {
		hits, err := s.Search(c.query, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, fmt.Sprintf("%d %s %s", h.Seq, h.Role, h.Snippet))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Search(%q) = %q, want %q", c.query, got, c.want)
		}
	}
}

// TestSearchLimitNewestFirst: with a limit, the hits are those of the
// newest sessions, whichever transcripts the workers finish first.
func TestSearchLimitNewestFirst(t *testing.T) {
	s, _, _ := newTestStore(t)
	for i := range 40 {
		id := mustCreate(t, s, fmt.Sprintf("s%02d", i))
		mustAppend(t, s, id, textMsg("user", "needle one"), textMsg("user", "no"), textMsg("user", "needle two"))
	}
	hits, err := s.Search("needle", 5)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, fmt.Sprintf("%s:%d", h.SessionID, h.Seq))
	}
	if want := []string{"s39:1", "s39:3", "s38:1", "s38:3", "s37:1"}; !slices.Equal(got, want) {
		t.Fatalf("hits %q, want %q", got, want)
	}
}
