package sessions

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

func TestAppendNormalisesTS(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "tz")
	m := textMsg("user", "x")
	m.TS = "2026-01-01T09:00:00+09:00"
	mustAppend(t, s, id, m)
	if got := readMessages(t, s, id)[0].TS; got != "2026-01-01T00:00:00.000000Z" {
		t.Fatalf("stored ts %q", got)
	}
	line := string(storetest.MustRead(t, s.logPath(id)))
	if !strings.Contains(line, `"ts":"2026-01-01T00:00:00.000000Z"`) {
		t.Fatalf("transcript line %s", line)
	}
	// A far-east zone that sorts last as a string does not make the
	// session the most recent.
	late := textMsg("user", "y")
	late.TS = "2026-11-21T02:07:35+14:00" // 2026-11-20T12:07:35Z, before the test clock
	mustAppend(t, s, id, late)
	sess, err := s.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.UpdatedAt != fsstore.TimeOf(storetest.Epoch) {
		t.Fatalf("updated_at %q, want the create's %q", sess.UpdatedAt, fsstore.TimeOf(storetest.Epoch))
	}
}

func TestAppendRefusesABadTS(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "bad")
	m := textMsg("user", "x")
	m.TS = "noon"
	if _, err := s.Append(id, []Message{m}); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("err %v, want fsstore.ErrInvalid", err)
	}
	if b := storetest.MustRead(t, s.logPath(id)); len(b) != 0 {
		t.Fatalf("a refused append wrote %q", b)
	}
}

// fsck reports a document whose times are not in the store's form, and
// --repair rewrites them without moving an instant.
func TestCheckCanonicalTimes(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "old")
	doc := string(storetest.MustRead(t, s.docPath(id)))
	doc = strings.Replace(doc, string(fsstore.TimeOf(storetest.Epoch)), "2026-11-21T11:07:34.123456+09:00", 1)
	if err := os.WriteFile(s.docPath(id), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !hasFinding(findings, "times not in the store's form (created_at") {
		t.Fatalf("findings %+v", findings)
	}
	findings, err = s.Check(true, t.TempDir())
	if err != nil || !hasFinding(findings, "rewritten") {
		t.Fatalf("repair: %+v, %v", findings, err)
	}
	sess, err := s.Get(id)
	if err != nil || sess.CreatedAt != fsstore.TimeOf(storetest.Epoch) {
		t.Fatalf("created_at %q after repair, want %q (%v)", sess.CreatedAt, fsstore.TimeOf(storetest.Epoch), err)
	}
	if findings, _ := s.Check(false, t.TempDir()); hasFinding(findings, "times") {
		t.Fatalf("still reported after repair: %+v", findings)
	}
}

func hasFinding(fs []fsstore.Finding, what string) bool {
	for _, f := range fs {
		if strings.Contains(f.What, what) {
			return true
		}
	}
	return false
}

// An import's created_at, in any zone, is stored in the store's one form.
func TestCreateNormalisesCreatedAt(t *testing.T) {
	s, _, _ := newTestStore(t)
	sess, _, err := s.Create(Session{ID: "imp", CreatedAt: "2025-03-01T10:15:00.5+01:00"})
	if err != nil || sess.CreatedAt != "2025-03-01T09:15:00.500000Z" {
		t.Fatalf("created_at %q, %v", sess.CreatedAt, err)
	}
	if _, _, err := s.Create(Session{ID: "bad", CreatedAt: "March"}); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("a bad created_at: %v", err)
	}
}

// A message ts more than a minute after the store's clock is refused
// before anything is written: a ts in 2099 would pin its session at the
// top of every listing and keep it from every prune. A minute of skew
// between a client's clock and ours is accepted.
func TestFutureTSRefused(t *testing.T) {
	s, clock, _ := newTestStore(t)
	id := mustCreate(t, s, "future")
	docBefore := storetest.MustRead(t, s.docPath(id))
	for _, ts := range []fsstore.Time{"2099-01-01T00:00:00Z", fsstore.TimeOf(clock.Now().Add(time.Minute + time.Millisecond))} {
		m := textMsg("user", "from the future")
		m.TS = ts
		if _, err := s.Append(id, []Message{m}); !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(fmt.Sprint(err), "future") {
			t.Fatalf("Append with ts %s: %v, want ErrInvalid saying future", ts, err)
		}
		if _, err := s.Save(id, []Message{m}, false); !errors.Is(err, fsstore.ErrInvalid) {
			t.Fatalf("Save with ts %s: %v, want ErrInvalid", ts, err)
		}
		if _, err := s.Save(id, []Message{m}, true); !errors.Is(err, fsstore.ErrInvalid) {
			t.Fatalf("Save --force with ts %s: %v, want ErrInvalid", ts, err)
		}
	}
	if b := storetest.MustRead(t, s.logPath(id)); len(b) != 0 {
		t.Fatalf("a refused write stored %q", b)
	}
	if b := storetest.MustRead(t, s.docPath(id)); string(b) != string(docBefore) {
		t.Fatalf("a refused write changed the document:\n%s", b)
	}
	if names := storetest.DirNames(t, s.Dir); strings.Contains(strings.Join(names, " "), "replaced") {
		t.Fatalf("a refused forced save kept a copy aside: %v", names)
	}
	skewed := textMsg("user", "a client a little ahead")
	skewed.TS = fsstore.TimeOf(clock.Now().Add(time.Minute))
	if _, err := s.Append(id, []Message{skewed}); err != nil {
		t.Fatalf("a ts a minute ahead: %v", err)
	}
}
