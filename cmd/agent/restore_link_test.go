package agent

import (
	"context"
	"encoding/json"
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
