package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/sessions"
)

// A restore of a file beneath the session's directory goes through that
// directory (an os.Root, as confined file tools do): a directory of the
// path swapped for a symbolic link that leads out of it is refused, and
// nothing outside is written, even where the file there holds what the
// agent wrote (no conflict by content).
func TestRestoreRefusesALinkOutOfTheSession(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	cwd := t.TempDir()
	s, _, err := st.Create(sessions.Session{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	ck := checkpoints.Open(t.TempDir())
	env := &Env{SessionID: s.ID, Cwd: cwd, Checkpoints: ck, MaxOutput: DefaultMaxOutput}
	if err := os.MkdirAll(filepath.Join(cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "sub", "f.txt"), []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(s.ID, user("write it")); err != nil {
		t.Fatal(err)
	}
	cenv := env.withCall("call_1")
	raw, _ := json.Marshal(map[string]string{"path": "sub/f.txt", "content": "agent\n"})
	if _, err := (writeFileTool{}).Run(context.Background(), cenv, raw); err != nil {
		t.Fatal(err)
	}
	m := toolResult(providerCall("call_1", "write_file", string(raw)), "ok", false)
	checkpoints.Attach(&m, cenv.call.changes())
	if _, err := st.Append(s.ID, []sessions.Message{callMessage("call_1", "write_file", string(raw)), m}); err != nil {
		t.Fatal(err)
	}
	ck.ClearPending(s.ID, "call_1")

	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(cwd, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(cwd, "sub")); err != nil {
		t.Fatal(err)
	}
	recs, err := checkpoints.Records(s.ID, stored(t, st, s.ID))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Restore(context.Background(), st, ck, s.ID, checkpoints.Plan(recs), false, false, "rewound")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Conflicts) != 1 || !strings.Contains(res.Conflicts[0].Reason, "leads out of "+cwd) || len(res.Changes) != 0 {
		t.Errorf("restore: %+v, want the file a conflict naming the link out of the session's directory", res)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(b) != "agent\n" {
		t.Errorf("the file outside became %q", b)
	}
}

// A file the agent wrote outside the session's directory (its tools not
// confined) is restored through an os.Root of its own directory: that
// directory swapped for a symbolic link since is a conflict, even
// forced, and the file where the link leads is left, even where it holds
// what the agent wrote; a file outside whose directory is as it was is
// restored.
func TestRestoreRefusesALinkedDirectoryOutsideTheSession(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	cwd, elsewhere := t.TempDir(), t.TempDir()
	s, _, err := st.Create(sessions.Session{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	ck := checkpoints.Open(t.TempDir())
	env := &Env{SessionID: s.ID, Cwd: cwd, Checkpoints: ck, MaxOutput: DefaultMaxOutput}
	linked, kept := filepath.Join(elsewhere, "linked", "f.txt"), filepath.Join(elsewhere, "kept", "f.txt")
	if _, err := st.Append(s.ID, user("write them")); err != nil {
		t.Fatal(err)
	}
	for i, path := range []string{linked, kept} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprint("call_", i)
		cenv := env.withCall(id)
		raw, _ := json.Marshal(map[string]string{"path": path, "content": "agent\n"})
		if _, err := (writeFileTool{}).Run(context.Background(), cenv, raw); err != nil {
			t.Fatal(err)
		}
		m := toolResult(providerCall(id, "write_file", string(raw)), "ok", false)
		checkpoints.Attach(&m, cenv.call.changes())
		if _, err := st.Append(s.ID, []sessions.Message{callMessage(id, "write_file", string(raw)), m}); err != nil {
			t.Fatal(err)
		}
		ck.ClearPending(s.ID, id)
	}

	target := t.TempDir()
	if err := os.WriteFile(filepath.Join(target, "f.txt"), []byte("agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(linked)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Dir(linked)); err != nil {
		t.Fatal(err)
	}
	recs, err := checkpoints.Records(s.ID, stored(t, st, s.ID))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Restore(context.Background(), st, ck, s.ID, checkpoints.Plan(recs), true, false, "rewound")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Conflicts) != 1 || res.Conflicts[0].Path != linked || !strings.Contains(res.Conflicts[0].Reason, "symbolic link") {
		t.Errorf("conflicts %+v, want %s's, naming the symbolic link", res.Conflicts, linked)
	}
	if b, _ := os.ReadFile(filepath.Join(target, "f.txt")); string(b) != "agent\n" {
		t.Errorf("the file the link leads to became %q", b)
	}
	if b, _ := os.ReadFile(kept); string(b) != "before\n" || len(res.Changes) != 1 || res.Changes[0].Path != kept {
		t.Errorf("%s = %q, changes %+v; want it restored", kept, b, res.Changes)
	}
}
