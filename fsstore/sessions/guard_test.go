package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// guardFixture is a session with three stored messages.
func guardFixture(t *testing.T) (*Store, *storetest.Clock, string, []Message) {
	t.Helper()
	s, clock, _ := newTestStore(t)
	id := mustCreate(t, s, "guarded")
	stored := []Message{
		textMsg("system", "be brief"),
		textMsg("user", "été"),
		{Role: "assistant", Content: json.RawMessage(`[{"type":"text","text":"ok"}]`)},
	}
	mustAppend(t, s, id, stored...)
	return s, clock, id, stored
}

// history returns fresh copies of msgs (Save numbers what it is given).
func history(msgs ...Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.Seq, m.TS = 0, ""
		out[i] = m
	}
	return out
}

// TestSaveExtendingAppendsOnlyTheTail: a whole-transcript write that
// extends the stored one appends the new messages and rewrites nothing.
func TestSaveExtendingAppendsOnlyTheTail(t *testing.T) {
	s, _, id, stored := guardFixture(t)
	before := storetest.MustRead(t, s.logPath(id))
	msgs := history(append(stored, textMsg("user", "more"), textMsg("assistant", "sure"))...)
	res, err := s.Save(id, msgs, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Appended != 2 || res.Count != 5 || res.Replaced != "" {
		t.Fatalf("Save = %+v, want 2 appended, count 5", res)
	}
	after := storetest.MustRead(t, s.logPath(id))
	if !bytes.HasPrefix(after, before) {
		t.Fatal("the stored lines were rewritten")
	}
	got := readMessages(t, s, id)
	if len(got) != 5 || got[3].Seq != 4 || got[4].Text() != "sure" {
		t.Fatalf("transcript %q", texts(got))
	}
	// The same history again is a no-op.
	res, err = s.Save(id, history(got...), false)
	if err != nil || res.Appended != 0 || res.Count != 5 {
		t.Fatalf("Save of the same history = %+v, %v", res, err)
	}
	if !bytes.Equal(storetest.MustRead(t, s.logPath(id)), after) {
		t.Fatal("a no-op Save changed the transcript")
	}
}

// TestSaveRefusesToShortenOrDiverge checks invariant 2: a write that is
// shorter than the stored history, or contradicts it, is ErrRefused with
// both lengths named, and nothing changes on disk.
func TestSaveRefusesToShortenOrDiverge(t *testing.T) {
	changed := textMsg("user", "not what was said")
	cases := []struct {
		name string
		msgs func(stored []Message) []Message
		want []string // in the error message
	}{
		{"shorter", func(st []Message) []Message { return history(st[:2]...) }, []string{"has 3 messages", "the write has 2"}},
		{"empty", func(st []Message) []Message { return nil }, []string{"has 3 messages", "the write has 0"}},
		{"diverging", func(st []Message) []Message { return history(st[0], changed, st[2]) }, []string{"at message 2", "stored 3 messages", "the write has 3"}},
		{"diverging and longer", func(st []Message) []Message {
			return history(st[0], st[1], changed, textMsg("user", "x"))
		}, []string{"at message 3", "stored 3 messages", "the write has 4"}},
		{"other role", func(st []Message) []Message {
			m := st[1]
			m.Role = "assistant"
			return history(st[0], m, st[2])
		}, []string{"at message 2"}},
		{"extra field", func(st []Message) []Message {
			m := st[2]
			m.Extra = map[string]json.RawMessage{"refusal": json.RawMessage(`"no"`)}
			return history(st[0], st[1], m)
		}, []string{"at message 3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _, id, stored := guardFixture(t)
			log, doc := storetest.MustRead(t, s.logPath(id)), storetest.MustRead(t, s.docPath(id))
			res, err := s.Save(id, c.msgs(stored), false)
			if !errors.Is(err, fsstore.ErrRefused) {
				t.Fatalf("Save = %+v, %v; want fsstore.ErrRefused", res, err)
			}
			if !storetest.ContainsAll(err.Error(), c.want...) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if !bytes.Equal(storetest.MustRead(t, s.logPath(id)), log) || !bytes.Equal(storetest.MustRead(t, s.docPath(id)), doc) {
				t.Fatal("a refused Save changed the session")
			}
			for _, name := range storetest.DirNames(t, s.Dir) {
				if strings.Contains(name, ".replaced-") {
					t.Fatalf("a refused Save made %s", name)
				}
			}
		})
	}
}

// TestSaveForceKeepsTheOldTranscript: with force, the write replaces the
// transcript and the old one stays beside it, byte for byte.
func TestSaveForceKeepsTheOldTranscript(t *testing.T) {
	s, clock, id, _ := guardFixture(t)
	old := storetest.MustRead(t, s.logPath(id))
	clock.Advance(3e9)
	msgs := []Message{textMsg("user", "a new start"), textMsg("assistant", "fine")}
	res, err := s.Save(id, msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	kept := fmt.Sprintf("%s.replaced-%d", s.logPath(id), clock.Now().Unix())
	if res.Replaced != kept || res.Count != 2 {
		t.Fatalf("Save = %+v, want the old transcript kept at %s", res, kept)
	}
	if got := storetest.MustRead(t, kept); !bytes.Equal(got, old) {
		t.Fatalf("%s does not hold the old transcript", kept)
	}
	got := readMessages(t, s, id)
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 || got[0].Text() != "a new start" {
		t.Fatalf("transcript after the forced save: %q", texts(got))
	}
	if d := docOf(t, s, id); d.MessageCount != 2 || d.Preview != "a new start" {
		t.Fatalf("document after the forced save: %+v", d)
	}
	// A second forced save in the same second keeps both old versions.
	if _, err := s.Save(id, msgs[:1], true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kept + ".1"); err != nil {
		t.Fatalf("second kept copy: %v", err)
	}
	if got := storetest.MustRead(t, kept); !bytes.Equal(got, old) {
		t.Fatal("the first kept copy was overwritten")
	}
}

// TestSaveSameAsCanonicalJSON: the guard compares what messages say, not
// how their JSON is spelled: "\u00e9" is "é", and key order in content
// parts does not matter, so such a write extends instead of diverging.
func TestSaveSameAsCanonicalJSON(t *testing.T) {
	s, _, id, _ := guardFixture(t)
	before := storetest.MustRead(t, s.logPath(id))
	respelled := []string{
		`{"role":"system","content":"be brief"}`,
		`{"role":"user","content":"\u00e9t\u00e9"}`,
		`{"content":[{"text":"ok","type":"text"}],"role":"assistant"}`,
		`{"role":"user","content":"next"}`,
	}
	var msgs []Message
	for _, line := range respelled {
		m, err := ParseMessage([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	res, err := s.Save(id, msgs, false)
	if err != nil {
		t.Fatalf("Save of a respelled history: %v", err)
	}
	if res.Appended != 1 || res.Count != 4 {
		t.Fatalf("Save = %+v, want 1 appended", res)
	}
	if !bytes.HasPrefix(storetest.MustRead(t, s.logPath(id)), before) {
		t.Fatal("the stored lines were rewritten")
	}
}

func TestMessageSameAs(t *testing.T) {
	parse := func(s string) Message {
		m, err := ParseMessage([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return m
	}
	cases := []struct {
		a, b string
		same bool
	}{
		{`{"role":"user","content":"é"}`, `{"role":"user","content":"\u00e9"}`, true},
		{`{"seq":1,"ts":"2026-01-01T00:00:00Z","role":"user","content":"x"}`, `{"seq":9,"ts":"2026-02-02T00:00:00.5Z","role":"user","content":"x"}`, true},
		{`{"role":"user","content":[{"type":"text","text":"x"}]}`, `{"role":"user","content":[{"text":"x","type":"text"}]}`, true},
		{`{"role":"user","content":[{"type":"text","text":"x"}]}`, `{"role":"user","content":[ { "type" : "text", "text" : "x" } ]}`, true},
		{`{"role":"user","content":"x","meta":{"a":1,"b":2}}`, `{"role":"user","content":"x","meta":{"b":2,"a":1}}`, true},
		{`{"role":"user","content":"x"}`, `{"role":"user","content":"y"}`, false},
		{`{"role":"user","content":"x"}`, `{"role":"assistant","content":"x"}`, false},
		{`{"role":"user","content":"x"}`, `{"role":"user","content":["x"]}`, false},
		{`{"role":"user","content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}`, `{"role":"user","content":[{"type":"text","text":"y"},{"type":"text","text":"x"}]}`, false},
		{`{"role":"tool","content":"r","tool_call_id":"a"}`, `{"role":"tool","content":"r","tool_call_id":"b"}`, false},
		{`{"role":"assistant","content":null,"tool_calls":[{"id":"1"}]}`, `{"role":"assistant","content":null,"tool_calls":[{"id":"2"}]}`, false},
		{`{"role":"user","content":"x","a":1}`, `{"role":"user","content":"x","b":1}`, false},
		{`{"role":"user","content":"x","a":1}`, `{"role":"user","content":"x"}`, false},
		{`{"role":"user","content":"x","a":null}`, `{"role":"user","content":"x","b":null}`, false},
	}
	for _, c := range cases {
		a, b := parse(c.a), parse(c.b)
		if a.SameAs(b) != c.same || b.SameAs(a) != c.same {
			t.Errorf("SameAs(%s, %s) = %v, want %v", c.a, c.b, a.SameAs(b), c.same)
		}
	}
}

// TestCreateIsIdempotent checks invariant 6: creating a session that
// exists returns the stored document, created=false and no error, and
// changes nothing.
func TestCreateIsIdempotent(t *testing.T) {
	s, clock, _ := newTestStore(t)
	first, created, err := s.Create(Session{ID: "s1", Title: "first", Source: "cli"})
	if err != nil || !created {
		t.Fatalf("first Create: created=%v, %v", created, err)
	}
	mustAppend(t, s, "s1", textMsg("user", "hello"))
	doc, log := storetest.MustRead(t, s.docPath("s1")), storetest.MustRead(t, s.logPath("s1"))
	clock.Advance(5e9)
	again, created, err := s.Create(Session{ID: "s1", Title: "second", Source: "gateway", Model: "m"})
	if err != nil || created {
		t.Fatalf("second Create: created=%v, %v; want false and no error", created, err)
	}
	if again.Title != "first" || again.Source != "cli" || again.CreatedAt != first.CreatedAt || again.MessageCount != 1 {
		t.Fatalf("second Create returned %+v, want the stored document", again)
	}
	if !bytes.Equal(storetest.MustRead(t, s.docPath("s1")), doc) || !bytes.Equal(storetest.MustRead(t, s.logPath("s1")), log) {
		t.Fatal("second Create changed the session")
	}
	// Writes go on as before.
	if n, err := s.Append("s1", []Message{textMsg("user", "again")}); err != nil || n != 2 {
		t.Fatalf("Append after the second Create = %d, %v", n, err)
	}
}

// TestCheckID checks invariant 7 on good and bad ids, and that a store
// refuses a bad id before it touches a path.
func TestCheckID(t *testing.T) {
	cases := []struct {
		id string
		ok bool
	}{
		{"20261121_020734_a1b2c3", true},
		{"a", true},
		{"my-session", true},
		{"under_score-and-dash", true},
		{"été-日本語-сессия", true},
		{"with space", true},
		{"a.b", true},
		{"trailing.", true},
		{"x" + strings.Repeat("y", 95), true}, // 96 bytes
		{strings.Repeat("é", 48), true},       // 96 bytes
		{"", false},
		{"a/b", false},
		{"/abs", false},
		{`a\b`, false},
		{"..", false},
		{"a..b", false},
		{"../etc", false},
		{".", false},
		{".hidden", false},
		{".catalog", false},
		{"nul\x00byte", false},
		{"unit\x1fsep", false},
		{"del\x7f", false},
		{"tab\there", false},
		{"new\nline", false},
		{"c1\u0085control", false},
		{strings.Repeat("y", 97), false},
		{strings.Repeat("é", 48) + "x", false}, // 97 bytes
		{"bad\xffutf8", false},
		{"\xc3", false},
	}
	s, _, _ := newTestStore(t)
	for _, c := range cases {
		err := fsstore.CheckID("session id", c.id)
		if (err == nil) != c.ok {
			t.Errorf("CheckID(%q) = %v, want ok=%v", c.id, err, c.ok)
			continue
		}
		if c.ok {
			continue
		}
		if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), "session id") {
			t.Errorf("CheckID(%q) = %v, want fsstore.ErrInvalid naming the session id", c.id, err)
		}
		// (Create with an empty id makes a new one, so it is left out.)
		if c.id != "" {
			if _, _, err := s.Create(Session{ID: c.id}); !errors.Is(err, fsstore.ErrInvalid) {
				t.Errorf("Create(%q) = %v, want fsstore.ErrInvalid", c.id, err)
			}
		}
		if _, err := s.Append(c.id, []Message{textMsg("user", "x")}); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("Append(%q) = %v, want fsstore.ErrInvalid", c.id, err)
		}
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bad ids made the sessions directory: %v", err)
	}
}
