package kanban

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestStaleClaimRefused: a claimer whose locks are lost just before it
// commits (its host cut off, or paused, past the filesystem's keepalive)
// while another process claims the task: the stale claim is refused
// (ErrRefused) and the other process's claim stands, with one run.
func TestStaleClaimRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a process; go test ./fsstore/kanban/ (without -short) runs it")
	}
	profileDir := filepath.Join(t.TempDir(), "profiles", "default")
	b := NewBoard(profileDir, 10*time.Second, func(string) {})
	kbCreate(t, b, Task{ID: "t1", Title: "contested"})
	goFile := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var other bytes.Buffer
	paused := true
	storetest.SetSeams(t, func(dir, pattern string) (*os.File, error) {
		if paused && strings.HasPrefix(pattern, ".t1.json.tmp-") {
			paused = false
			// The locks are lost: another process takes them and claims.
			for _, lock := range []string{b.lockPath("t1"), b.eventsPath("t1") + ".lock"} {
				if err := os.Remove(lock); err != nil {
					t.Fatal(err)
				}
			}
			cmd := storetest.HelperCommand(t, "TestHelperKanbanClaimer", storetest.HelperRoleEnv+"=kanban-claimer", storetest.HelperDirEnv+"="+profileDir,
				storetest.HelperIDEnv+"=t1", storetest.HelperTagEnv+"=other", storetest.HelperLockEnv+"="+goFile)
			cmd.Stdout, cmd.Stderr = &other, &other
			if err := cmd.Run(); err != nil {
				t.Fatalf("the other claimer: %v\n%s", err, other.String())
			}
		}
		return os.CreateTemp(dir, pattern)
	}, nil, nil)
	_, err := b.Claim("t1", time.Minute, "stale", nil)
	var lost *fsstore.LockLostError
	if !errors.Is(err, fsstore.ErrRefused) || !errors.As(err, &lost) {
		t.Fatalf("the stale claim = %v, want refused: its lock was lost", err)
	}
	if !strings.Contains(other.String(), "won\n") {
		t.Fatalf("the other claimer said %q, want won", other.String())
	}
	got, err := b.Get("t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != Running || len(got.Runs) != 1 || got.Runs[0].Profile != "other" {
		t.Fatalf("after the stale claim: %+v, want running with the other claimer's one run", got)
	}
}
