package checkpoints

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
)

// fsck sorts pending records: one whose call has its result is stale
// (moved to lost+found by --repair), one whose call has none is settled by
// the next turn (a note), an interrupted restore is a problem to finish.
func TestCheckPending(t *testing.T) {
	profile := t.TempDir()
	st := sessions.NewStore(profile, "default", time.Second, func(string) {})
	sess, _, err := st.Create(sessions.Session{})
	if err != nil {
		t.Fatal(err)
	}
	calls := `[{"id":"c1","type":"function","function":{"name":"write_file","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"write_file","arguments":"{}"}}]`
	if _, err := st.Append(sess.ID, []sessions.Message{
		{Role: "user", Content: sessions.TextContent("go")},
		{Role: "assistant", ToolCalls: []byte(calls)},
		{Role: "tool", ToolCallID: "c1", Content: sessions.TextContent("ok")},
	}); err != nil {
		t.Fatal(err)
	}
	s := Open(profile)
	for _, p := range []Pending{
		{SessionID: sess.ID, CallID: "c1", Changes: []Change{{Path: "/stale"}}},
		{SessionID: sess.ID, CallID: "c2", Changes: []Change{{Path: "/open"}}},
		{SessionID: sess.ID, CallID: RestoreCall, Changes: []Change{{Path: "/restoring"}}},
	} {
		if err := s.SetPending(p); err != nil {
			t.Fatal(err)
		}
	}
	lost := filepath.Join(profile, "lost+found")
	find := func(fs []string, sub string) string {
		for _, f := range fs {
			if strings.Contains(f, sub) {
				return f
			}
		}
		t.Fatalf("no finding about %s in %q", sub, fs)
		return ""
	}
	check := func(repair bool) []string {
		got, err := s.Check(st, repair, lost)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range got {
			out = append(out, f.What+map[bool]string{true: " PROBLEM"}[f.Problem]+map[bool]string{true: " REPAIRED"}[f.Repaired])
		}
		return out
	}
	got := check(false)
	if f := find(got, "stale pending change of call c1"); !strings.HasSuffix(f, "PROBLEM") {
		t.Errorf("stale: %s", f)
	}
	if f := find(got, "call c2 of session"); strings.Contains(f, "PROBLEM") {
		t.Errorf("open: %s", f)
	}
	if f := find(got, "a restore in session"); !strings.HasSuffix(f, "PROBLEM") {
		t.Errorf("restore: %s", f)
	}
	got = check(true)
	if f := find(got, "stale pending change of call c1"); !strings.HasSuffix(f, "REPAIRED") || !strings.Contains(f, "moved to "+lost) {
		t.Errorf("stale after repair: %s", f)
	}
	if len(check(false)) != 2 {
		t.Errorf("after repair: %q", check(false))
	}
}
