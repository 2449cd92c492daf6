package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd"
)

// TestReadOnlyProfile runs every reader on a read-only copy of a profile
// that has no *.lock files, as a backup restored for reading would be.
// Root ignores file permissions, so a chmod of the copy would prove
// nothing when the tests run as root: the copy is made read-only by a
// read-only bind mount, which binds root too (skipped where mount is not
// permitted; fsstore's TestRLockOnReadOnlyStore covers the same path
// through the lock seam everywhere). Each reader exits 0 with its data;
// a writer fails saying why, and the copy is unchanged.
func TestReadOnlyProfile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount the copy read-only: sudo go test . -run TestReadOnlyProfile")
	}
	if testing.Short() {
		t.Skip("-short: mounts a read-only bind; go test . (without -short) runs it")
	}
	src := filepath.Join(t.TempDir(), "hermes")
	run := func(home string, args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := cmd.Run(append([]string{"hermes", "--home", home}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	must := func(home string, args ...string) string {
		t.Helper()
		code, out, errs := run(home, args...)
		if code != 0 {
			t.Fatalf("hermes %v: exit %d: %s", args, code, errs)
		}
		return out
	}
	must(src, "sessions", "new", "--id", "s1", "--title", "first")
	must(src, "sessions", "append", "s1", "--role", "user", "--content", "hello read-only world")
	card := strings.TrimSpace(must(src, "kanban", "create", "a card"))
	must(src, "kanban", "comment", card, "a comment")
	must(src, "tasks", "run", "--wait", "--name", "job", "--", "echo", "done")
	// A task that runs while the copy is taken: in the copy it stays
	// running after its processes are gone, which a reader cannot record.
	out, err := exec.Command("hermes", "--home", src, "tasks", "run", "--name", "sleeper", "--", "sleep", "60").Output()
	if err != nil {
		t.Fatalf("tasks run: %v", err)
	}
	sleeper := strings.TrimSpace(string(out))

	// The copy, without its lock files.
	ro := filepath.Join(t.TempDir(), "ro")
	if out, err := exec.Command("cp", "-a", src, ro).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	locks := 0
	filepath.WalkDir(ro, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".lock") {
			locks++
			return os.Remove(path)
		}
		return err
	})
	if locks == 0 {
		t.Fatal("the profile had no lock files to remove")
	}
	must(src, "tasks", "kill", "--grace", "1s", sleeper)
	if out, err := exec.Command("mount", "--bind", ro, ro).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount (root without CAP_SYS_ADMIN, as in a container: run it on a host or a privileged container): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", ro).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", ro, err, out)
		}
	})
	if out, err := exec.Command("mount", "-o", "remount,ro,bind", ro).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only (root without CAP_SYS_ADMIN, as in a container: run it on a host or a privileged container): %v: %s", err, out)
	}
	before := snapshot(t, ro)

	for _, r := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "list"}, "s1"},
		{[]string{"sessions", "show", "s1"}, "hello read-only world"},
		{[]string{"sessions", "show", "first"}, "hello read-only world"},
		{[]string{"sessions", "export", "s1"}, "hello read-only world"},
		{[]string{"sessions", "export", "--format", "md", "s1"}, "hello read-only world"},
		{[]string{"sessions", "search", "read-only"}, "s1"},
		{[]string{"sessions", "stats"}, "sessions:"},
		{[]string{"tasks", "history"}, "job"},
		{[]string{"tasks", "list"}, "sleeper"},
		{[]string{"tasks", "show", sleeper}, "running"},
		{[]string{"kanban", "list"}, "a card"},
		{[]string{"kanban", "show", card}, "a comment"},
		{[]string{"usage", "daily"}, "Date"},
	} {
		code, out, errs := run(ro, r.args...)
		if code != 0 || !strings.Contains(out, r.want) {
			t.Errorf("hermes %s on a read-only profile: exit %d, stdout %q, stderr %q; want exit 0 and %q", strings.Join(r.args, " "), code, out, errs, r.want)
		}
	}
	code, _, errs := run(ro, "sessions", "append", "s1", "--role", "user", "--content", "more")
	if code != 1 || !strings.Contains(errs, "read-only file system") {
		t.Errorf("a write to a read-only profile: exit %d, stderr %q; want exit 1 saying read-only file system", code, errs)
	}
	diffSnapshots(t, "the readers", before, snapshot(t, ro))
}

// TestReadOnlyWriteNamesPathOnce: on a read-only mount of a profile that
// has its lock files (so the locks are taken and the write itself fails),
// a writer's error names the file once, not "open P: open P: read-only
// file system".
func TestReadOnlyWriteNamesPathOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount the profile read-only: sudo go test . -run TestReadOnlyWriteNamesPathOnce")
	}
	if testing.Short() {
		t.Skip("-short: mounts a read-only bind; go test . (without -short) runs it")
	}
	home := filepath.Join(t.TempDir(), "hermes")
	run := func(args ...string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := cmd.Run(append([]string{"hermes", "--home", home}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	for _, args := range [][]string{
		{"sessions", "new", "--id", "s1", "--title", "first"},
		{"sessions", "append", "s1", "--role", "user", "--content", "hello"},
	} {
		if code, out := run(args...); code != 0 {
			t.Fatalf("hermes %v: exit %d: %s", args, code, out)
		}
	}
	code, out := run("kanban", "create", "a card")
	if code != 0 {
		t.Fatalf("kanban create: exit %d: %s", code, out)
	}
	card := strings.TrimSpace(out)
	if code, out := run("kanban", "comment", card, "a comment"); code != 0 {
		t.Fatalf("kanban comment: exit %d: %s", code, out)
	}
	if out, err := exec.Command("mount", "--bind", home, home).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount (root without CAP_SYS_ADMIN, as in a container: run it on a host or a privileged container): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", home).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", home, err, out)
		}
	})
	if out, err := exec.Command("mount", "-o", "remount,ro,bind", home).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only (root without CAP_SYS_ADMIN, as in a container: run it on a host or a privileged container): %v: %s", err, out)
	}
	for _, args := range [][]string{
		{"sessions", "append", "s1", "--role", "user", "--content", "more"},
		{"sessions", "rename", "s1", "second"},
		{"kanban", "comment", card, "more"},
		{"kanban", "create", "another"},
	} {
		code, out := run(args...)
		if code != 1 || !strings.Contains(out, "read-only file system") || strings.Count(out, home) != 1 {
			t.Errorf("hermes %s on a read-only profile: exit %d, %q; want exit 1 saying read-only file system and naming one path once", strings.Join(args, " "), code, out)
		}
	}
}
