package checkpoints

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
)

// fsck sorts pending records: one whose call has its result, which
// records its changes, is stale (moved to lost+found by --repair), one whose call has none is settled by
// the next turn (a note), an interrupted restore is a problem to finish.
func TestCheckPending(t *testing.T) {
	profile := t.TempDir()
	st := sessions.NewStore(profile, "default", time.Second, func(string) {})
	sess, _, err := st.Create(sessions.Session{})
	if err != nil {
		t.Fatal(err)
	}
	calls := `[{"id":"c1","type":"function","function":{"name":"write_file","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"write_file","arguments":"{}"}}]`
	result := sessions.Message{Role: "tool", ToolCallID: "c1", Content: sessions.TextContent("ok")}
	Attach(&result, []Change{{Path: "/stale"}})
	if _, err := st.Append(sess.ID, []sessions.Message{
		{Role: "user", Content: sessions.TextContent("go")},
		{Role: "assistant", ToolCalls: []byte(calls)},
		result,
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

// A pending record whose call has a result that does not record its
// changes (the call was abandoned, and its process ended before it could
// record them) is a problem: --repair records, in a note of the session,
// each change its file shows was made, leaves out one whose file holds
// its prior bytes, and moves the record aside; fsck is clean after.
func TestCheckRecordsLateChanges(t *testing.T) {
	profile := t.TempDir()
	st := sessions.NewStore(profile, "default", time.Second, func(string) {})
	sess, _, err := st.Create(sessions.Session{})
	if err != nil {
		t.Fatal(err)
	}
	calls := `[{"id":"c1","type":"function","function":{"name":"write_file","arguments":"{}"}}]`
	if _, err := st.Append(sess.ID, []sessions.Message{
		{Role: "user", Content: sessions.TextContent("go")},
		{Role: "assistant", ToolCalls: []byte(calls)},
		{Role: "tool", ToolCallID: "c1", Content: sessions.TextContent("cancelled: abandoned")},
	}); err != nil {
		t.Fatal(err)
	}
	s := Open(profile)
	dir := t.TempDir()
	made, unmade := filepath.Join(dir, "made"), filepath.Join(dir, "unmade")
	os.WriteFile(made, []byte("new"), 0o644)
	os.WriteFile(unmade, []byte("old"), 0o644)
	before, err := s.Put([]byte("old"))
	if err != nil {
		t.Fatal(err)
	}
	changes := []Change{
		{Path: made, Before: before, After: Hash([]byte("new")), Mode: "0644"},
		{Path: unmade, Before: before, After: Hash([]byte("newer")), Mode: "0644"},
	}
	if err := s.SetPending(Pending{SessionID: sess.ID, CallID: "c1", Changes: changes}); err != nil {
		t.Fatal(err)
	}
	lost := filepath.Join(profile, "lost+found")
	findings, err := s.Check(st, false, lost)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || !findings[0].Problem || !strings.Contains(findings[0].What, "abandoned") {
		t.Fatalf("findings %+v, want one problem: the call's late changes", findings)
	}
	if findings, err = s.Check(st, true, lost); err != nil || len(findings) != 1 || !findings[0].Repaired {
		t.Fatalf("repair: %+v, %v", findings, err)
	}
	msgs, err := st.Messages(sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Records(sess.ID, msgs)
	if err != nil {
		t.Fatal(err)
	}
	last := msgs[len(msgs)-1]
	if len(recs) != 1 || recs[0].Seq != last.Seq || len(recs[0].Changes) != 1 || recs[0].Changes[0] != changes[0] ||
		last.Role != "system" || string(last.Extra[noteMarker]) != "true" || !strings.Contains(last.Text(), "c1") {
		t.Fatalf("records %+v; last message %+v", recs, last)
	}
	if findings, err = s.Check(st, false, lost); err != nil || len(findings) != 0 {
		t.Fatalf("after repair: %+v, %v", findings, err)
	}
}
