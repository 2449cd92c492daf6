package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// forkParent makes a session of n messages: a system message, then turns
// of a user message and a reply, one of them with a tool call and its
// result.
func forkParent(t *testing.T, s *Store, id string, n int) []byte {
	t.Helper()
	mustCreate(t, s, id)
	msgs := []Message{textMsg("system", "be brief")}
	for i := 0; len(msgs) < n; i++ {
		msgs = append(msgs, textMsg("user", "question "+strings.Repeat("x", i)))
		if i == 2 {
			msgs = append(msgs,
				Message{Role: "assistant", ToolCalls: json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]`)},
				Message{Role: "tool", ToolCallID: "c1", Content: TextContent("a.txt")})
		}
		msgs = append(msgs, textMsg("assistant", "answer"))
	}
	mustAppend(t, s, id, msgs[:n]...)
	return storetest.MustRead(t, s.logPath(id))
}

// lineStarts returns the offset of each line of b and len(b).
func lineStarts(b []byte) []int {
	offs := []int{0}
	for i, c := range b {
		if c == '\n' {
			offs = append(offs, i+1)
		}
	}
	return offs
}

// TestForkEveryPoint: a fork at each seq holds the parent's first lines
// byte for byte, the parent stays as it was, and the child goes on from
// the fork point.
func TestForkEveryPoint(t *testing.T) {
	s, _, _ := newTestStore(t)
	const n = 12
	parent := forkParent(t, s, "p", n)
	parentDoc := storetest.MustRead(t, s.docPath("p"))
	offs := lineStarts(parent)
	for at := int64(1); at <= n; at++ {
		child, err := s.Fork("p", at, "")
		if err != nil {
			t.Fatalf("Fork at %d: %v", at, err)
		}
		if got := storetest.MustRead(t, s.logPath(child.ID)); !bytes.Equal(got, parent[:offs[at]]) {
			t.Fatalf("fork at %d holds\n%s\nwant the parent's first %d lines", at, got, at)
		}
		got, err := s.Get(child.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ParentSessionID != "p" || got.ForkSeq != at || got.MessageCount != at || got.State != StateActive || got.Source != "test" {
			t.Fatalf("fork at %d: document %+v", at, got)
		}
		if wantPreview := at >= 2; (got.Preview != "") != wantPreview {
			t.Fatalf("fork at %d: preview %q", at, got.Preview)
		}
		if c, err := s.Append(child.ID, []Message{textMsg("user", "next")}); err != nil || c != at+1 {
			t.Fatalf("append to the fork at %d = %d, %v; want %d", at, c, err, at+1)
		}
	}
	if !bytes.Equal(storetest.MustRead(t, s.logPath("p")), parent) || !bytes.Equal(storetest.MustRead(t, s.docPath("p")), parentDoc) {
		t.Fatal("forking changed the parent")
	}
	all, err := s.Fork("p", 0, "whole")
	if err != nil || all.ForkSeq != n || all.Title != "whole" {
		t.Fatalf("Fork of all = %+v, %v", all, err)
	}
}

// TestForkRefusals: a fork point out of range, a parent with no messages,
// a taken title, an unknown parent: an error of the right kind and no new
// file.
func TestForkRefusals(t *testing.T) {
	s, _, _ := newTestStore(t)
	forkParent(t, s, "p", 4)
	mustCreate(t, s, "empty")
	if _, err := s.Rename("p", "taken"); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(s.Dir, "*"))
	for _, c := range []struct {
		id    string
		at    int64
		title string
		want  error
	}{
		{"p", 5, "", fsstore.ErrInvalid},
		{"p", -1, "", fsstore.ErrInvalid},
		{"empty", 0, "", fsstore.ErrInvalid},
		{"p", 2, "taken", fsstore.ErrRefused},
		{"nosuch", 0, "", fsstore.ErrNotFound},
		{"../x", 0, "", fsstore.ErrInvalid},
	} {
		if _, err := s.Fork(c.id, c.at, c.title); !errors.Is(err, c.want) {
			t.Errorf("Fork(%q, %d, %q) = %v, want %v", c.id, c.at, c.title, err, c.want)
		}
	}
	after, _ := filepath.Glob(filepath.Join(s.Dir, "*"))
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Fatalf("a refused fork left files:\n%s", strings.Join(after, "\n"))
	}
}

// TestForkTornTail: the parent's torn tail is not copied; a fork of all
// holds its complete lines.
func TestForkTornTail(t *testing.T) {
	s, _, _ := newTestStore(t)
	parent := forkParent(t, s, "p", 5)
	f, err := os.OpenFile(s.logPath("p"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":6,"ts":"2`)
	f.Close()
	for _, at := range []int64{0, 2, 4} {
		child, err := s.Fork("p", at, "")
		if err != nil {
			t.Fatalf("Fork at %d: %v", at, err)
		}
		want := parent
		if at > 0 {
			want = parent[:lineStarts(parent)[at]]
		}
		if got := storetest.MustRead(t, s.logPath(child.ID)); !bytes.Equal(got, want) {
			t.Fatalf("fork at %d holds\n%s", at, got)
		}
	}
}

// TestForkFailureLeavesNothing: a fork whose document cannot be written
// leaves no transcript, no document and no temp file behind.
func TestForkFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	forkParent(t, s, "p", 4)
	before, _ := filepath.Glob(filepath.Join(s.Dir, "*"))
	storetest.SetSeams(t, nil, func(from, to string) error {
		if strings.HasSuffix(to, ".json") && !strings.HasSuffix(to, "p.json") {
			return storetest.ErrInjected
		}
		return os.Rename(from, to)
	}, nil)
	if _, err := s.Fork("p", 2, ""); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("Fork = %v, want the injected error", err)
	}
	after, _ := filepath.Glob(filepath.Join(s.Dir, "*"))
	var extra []string
	for _, p := range after {
		if !strings.HasSuffix(p, ".lock") && !strings.Contains(strings.Join(before, "\n"), p) {
			extra = append(extra, p)
		}
	}
	if len(extra) > 0 {
		t.Fatalf("a failed fork left %v", extra)
	}
}
