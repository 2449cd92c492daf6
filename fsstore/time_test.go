package fsstore

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestCanonicalTime(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "",
		"2026-01-01T09:00:00+09:00":        "2026-01-01T00:00:00.000000Z",
		"2026-01-01T00:00:00Z":             "2026-01-01T00:00:00.000000Z",
		"2099-01-01T00:00:00+14:00":        "2098-12-31T10:00:00.000000Z",
		"2026-11-21T02:07:34.123456789Z":   "2026-11-21T02:07:34.123456Z",
		"2026-11-21T02:07:34.5-03:30":      "2026-11-21T05:37:34.500000Z",
		"2026-11-21T02:07:34.123456Z":      "2026-11-21T02:07:34.123456Z",
		"2026-11-21T02:07:34.123456+00:00": "2026-11-21T02:07:34.123456Z",
	} {
		got, err := CanonicalTime(in)
		if err != nil || got != want {
			t.Errorf("CanonicalTime(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "2026-01-01", "2026-01-01 00:00:00Z", "1700000000"} {
		if _, err := CanonicalTime(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CanonicalTime(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

func TestLater(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		// As strings the +14:00 time sorts after; as instants it is earlier.
		{"2099-01-01T00:00:00+14:00", "2098-12-31T11:00:00.000000Z", "2098-12-31T11:00:00.000000Z"},
		{"2098-12-31T11:00:00.000000Z", "2099-01-01T00:00:00+14:00", "2098-12-31T11:00:00.000000Z"},
		{"", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000Z"},
		{"2026-01-01T00:00:00Z", "garbage", "2026-01-01T00:00:00.000000Z"},
		{"", "", ""},
	} {
		if got := Later(c.a, c.b); got != c.want {
			t.Errorf("Later(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

// An appended message's own ts, in any zone, is stored in the store's one
// form, and the session's activity follows the instant.
func TestAppendNormalisesTS(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "tz")
	m := textMsg("user", "x")
	m.TS = "2026-01-01T09:00:00+09:00"
	mustAppend(t, s, id, m)
	if got := readMessages(t, s, id)[0].TS; got != "2026-01-01T00:00:00.000000Z" {
		t.Fatalf("stored ts %q", got)
	}
	line := string(mustRead(t, s.logPath(id)))
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
	if sess.UpdatedAt != Timestamp(testEpoch) {
		t.Fatalf("updated_at %q, want the create's %q", sess.UpdatedAt, Timestamp(testEpoch))
	}
}

func TestAppendRefusesABadTS(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "bad")
	m := textMsg("user", "x")
	m.TS = "noon"
	if _, err := s.Append(id, []Message{m}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v, want ErrInvalid", err)
	}
	if b := mustRead(t, s.logPath(id)); len(b) != 0 {
		t.Fatalf("a refused append wrote %q", b)
	}
}

// fsck reports a document whose times are not in the store's form, and
// --repair rewrites them without moving an instant.
func TestCheckCanonicalTimes(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "old")
	doc := string(mustRead(t, s.docPath(id)))
	doc = strings.Replace(doc, Timestamp(testEpoch), "2026-11-21T11:07:34.123456+09:00", 1)
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
	if err != nil || sess.CreatedAt != Timestamp(testEpoch) {
		t.Fatalf("created_at %q after repair, want %q (%v)", sess.CreatedAt, Timestamp(testEpoch), err)
	}
	if findings, _ := s.Check(false, t.TempDir()); hasFinding(findings, "times") {
		t.Fatalf("still reported after repair: %+v", findings)
	}
}

func hasFinding(fs []Finding, what string) bool {
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
	if _, _, err := s.Create(Session{ID: "bad", CreatedAt: "March"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a bad created_at: %v", err)
	}
}
