package subagents

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// A claim held is refused to a second claimer, naming the holder; once let
// go (its process died, or it ended), the next claim takes it over with
// one more run; a finished child's claim comes back done, runs unchanged.
func TestClaim(t *testing.T) {
	s := Open(t.TempDir())
	c := Claim{SessionID: "p-task-1a2b3c4d-1", ParentSessionID: "p", ToolCallID: "call_1", TaskIndex: 0}
	h, err := s.Claim(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.State != Running || h.Runs != 1 || h.PID != os.Getpid() || h.Host == "" || h.ClaimedAt == "" {
		t.Fatalf("first claim %+v", h.Claim)
	}
	_, err = s.Claim(c, nil)
	if !errors.Is(err, fsstore.ErrRefused) || !strings.Contains(err.Error(), "is running in pid") {
		t.Fatalf("a second claim while held: %v", err)
	}
	h.Release()
	h, err = s.Claim(c, nil)
	if err != nil || h.Runs != 2 || h.State != Running {
		t.Fatalf("claim after release: %+v, %v", h, err)
	}
	if err := h.Finish(); err != nil {
		t.Fatal(err)
	}
	h.Release()
	got, err := s.Get(c.SessionID)
	if err != nil || got.State != Done || got.FinishedAt == "" || got.Runs != 2 || got.ToolCallID != "call_1" {
		t.Fatalf("record %+v, %v", got, err)
	}
	h, err = s.Claim(c, nil)
	if err != nil || h.State != Done || h.Runs != 2 {
		t.Fatalf("claim of a finished child: %+v, %v", h, err)
	}
	h.Release()
	if _, err := s.Get("missing"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("get of a child never claimed: %v", err)
	}
	if _, err := s.Claim(Claim{SessionID: "../x"}, nil); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("a bad id: %v", err)
	}
}

// A claim held for a moment (the lock's descriptor in a child of a killed
// process, until that child's exec closes it) is waited for, within
// LockTimeout, and then taken; a wait is called off by cancel.
func TestClaimWaitsForAMomentaryHolder(t *testing.T) {
	s := Open(t.TempDir())
	s.LockTimeout = 10 * time.Second
	c := Claim{SessionID: "p-task-1a2b3c4d-2", ParentSessionID: "p", ToolCallID: "call_1", TaskIndex: 1}
	h, err := s.Claim(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		h.Release()
	}()
	h2, err := s.Claim(c, nil)
	if err != nil {
		t.Fatalf("a claim let go of a moment later: %v", err)
	}
	if h2.Runs != 2 {
		t.Fatalf("runs %d", h2.Runs)
	}
	cancel := make(chan struct{})
	close(cancel)
	if _, err := s.Claim(c, cancel); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("a cancelled wait: %v", err)
	}
	h2.Release()
}

// fsck's check: a claim record that does not parse is a problem, moved
// aside by repair, never replaced; a sound one is no finding.
func TestCheck(t *testing.T) {
	s := Open(t.TempDir())
	h, err := s.Claim(Claim{SessionID: "p-task-1a2b3c4d-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if f, err := s.Check(false, t.TempDir()); err != nil || len(f) != 0 {
		t.Fatalf("a sound store: %+v, %v", f, err)
	}
	bad := filepath.Join(s.Dir, "p-task-1a2b3c4d-2.json")
	if err := os.WriteFile(bad, []byte("{\"session_id\":"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := s.Check(false, t.TempDir())
	if err != nil || len(f) != 1 || !f[0].Problem || f[0].Repaired {
		t.Fatalf("a damaged record: %+v, %v", f, err)
	}
	f, err = s.Check(true, t.TempDir())
	if err != nil || len(f) != 1 || !f[0].Repaired {
		t.Fatalf("repair: %+v, %v", f, err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatalf("the damaged record is still in place: %v", err)
	}
}

// Forget removes a finished child's claim; a claim held (its child
// running) is refused and left; an id never claimed is no error.
func TestForget(t *testing.T) {
	s := Open(t.TempDir())
	h, err := s.Claim(Claim{SessionID: "p-task-00000000-1", ParentSessionID: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Forget("p-task-00000000-1"); err == nil {
		t.Error("a held claim was forgotten")
	}
	if _, err := s.Get("p-task-00000000-1"); err != nil {
		t.Errorf("the held claim is gone: %v", err)
	}
	h.Finish()
	h.Release()
	if err := s.Forget("p-task-00000000-1", "never-claimed"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("p-task-00000000-1"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Errorf("Get after Forget: %v, want not found", err)
	}
}
