package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVersionNamesCommit builds hermes from this checkout, as a user's
// `go build` does (but with -buildvcs=true, whatever GOFLAGS says), and
// checks that --version and --json version name the checkout's commit and
// its date.
func TestVersionNamesCommit(t *testing.T) {
	skipUnlessLong(t, "links a binary of its own with go build")
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to stamp; go test . in a git clone runs it", err)
	}
	if fi, err := os.Stat(".git"); err != nil || !fi.IsDir() {
		t.Skip("a linked work tree (.git is a file): Go stamps no commit there; go test . in the main clone runs it")
	}
	commit := strings.TrimSpace(string(head))
	when, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hermes")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	out, err := exec.Command(bin, "--json", "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Version, Commit, Date, Go, Platform string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("--json version: %v: %s", err, out)
	}
	var sec int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(when)), &sec); err != nil {
		t.Fatal(err)
	}
	wantDate := time.Unix(sec, 0).UTC().Format(time.RFC3339)
	if got.Version != "devel" || got.Commit != commit || got.Date != wantDate || got.Platform == "" || got.Go == "" {
		t.Errorf("--json version = %+v; want version devel, commit %s, date %s", got, commit, wantDate)
	}

	out, err = exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "hermes devel (commit " + commit[:12]; !strings.HasPrefix(string(out), want) || !strings.Contains(string(out), wantDate) {
		t.Errorf("--version = %q; want it to start %q and name %s", out, want, wantDate)
	}
	verb, err := exec.Command(bin, "version").Output()
	if err != nil || string(verb) != string(out) {
		t.Errorf("version = %q (%v), --version = %q: one format", verb, err, out)
	}
}
