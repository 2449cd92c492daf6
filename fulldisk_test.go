package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd"
)

// TestFullDisk runs hermes on a real full disk: a 512 KiB tmpfs mounted as
// the hermes root (root only; skipped otherwise). A session is filled until
// an append fails; the failing command exits 1 saying "disk full", and the
// profile is byte-identical to a copy taken just before: documents,
// transcripts, catalog, no stray temp file. Then, with the disk filled to
// the last byte, `sessions new`, `kanban create` and `tasks run --wait`
// fail the same way and leave nothing behind.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	home := filepath.Join(mnt, "hermes")
	profile := filepath.Join(home, "profiles", "default")

	run := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := cmd.Run(append([]string{"hermes", "--home", home}, args...), strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errs := run(stdin, args...)
		if code != 0 {
			t.Fatalf("hermes %v: exit %d: %s", args, code, errs)
		}
		return out
	}
	wantDiskFull := func(what string, code int, stderr string) {
		t.Helper()
		if code != 1 {
			t.Errorf("%s on a full disk: exit %d, want 1 (stderr %q)", what, code, stderr)
		}
		if !strings.Contains(stderr, "disk full") && !strings.Contains(stderr, "no space left") {
			t.Errorf("%s on a full disk: stderr %q does not say the disk is full", what, stderr)
		}
	}

	must("", "sessions", "new", "--id", "keep", "--title", "kept session")
	must("", "sessions", "append", "keep", "--role", "user", "--content", "hello")
	must("", "sessions", "new", "--id", "fill")
	must("", "kanban", "create", "a card")
	// Space to give back at the end, as a user would free some.
	if err := os.WriteFile(filepath.Join(mnt, "reserve"), make([]byte, 128<<10), 0o600); err != nil {
		t.Fatal(err)
	}

	// Fill the session until an append fails. Each try is compared with a
	// snapshot of the whole root taken just before it.
	chunk := strings.Repeat("x", 6000)
	failed := false
	for i := 0; i < 200 && !failed; i++ {
		before := snapshot(t, home)
		code, _, stderr := run("", "sessions", "append", "fill", "--role", "user", "--content", chunk)
		if code == 0 {
			continue
		}
		failed = true
		t.Logf("append %d failed: exit %d: %s", i+1, code, strings.TrimSpace(stderr))
		wantDiskFull("sessions append", code, stderr)
		diffSnapshots(t, "failed append", before, snapshot(t, home), home)
	}
	if !failed {
		t.Fatal("the disk never filled")
	}

	// Fill what is left to the last byte, outside the profile.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{64 << 10, 4 << 10, 512, 64, 1} {
		for {
			if _, err := filler.Write(make([]byte, n)); err != nil {
				break
			}
		}
	}
	filler.Close()

	// Appends that need a new page, a new session, a save, a card, a
	// task: exit 1, nothing changed.
	page := strings.Repeat("p", 8<<10)
	for _, try := range []struct {
		what  string
		stdin string
		args  []string
	}{
		{"page-sized append", "", []string{"sessions", "append", "fill", "--role", "user", "--content", page}},
		{"page-sized append to the kept session", "", []string{"sessions", "append", "keep", "--role", "user", "--content", page}},
		{"sessions new", "", []string{"sessions", "new", "--id", "fresh"}},
		{"sessions new without id", "", []string{"sessions", "new"}},
		{"sessions rename", "", []string{"sessions", "rename", "keep", "renamed"}},
		{"page-sized sessions save", `{"role":"user","content":"hello"}` + "\n" + `{"role":"user","content":"` + page + `"}` + "\n", []string{"sessions", "save", "keep"}},
		{"kanban create", "", []string{"kanban", "create", "another card"}},
		{"tasks run --wait", "", []string{"tasks", "run", "--wait", "--", "echo", "hi"}},
	} {
		before := snapshot(t, home)
		code, _, stderr := run(try.stdin, try.args...)
		t.Logf("%s: exit %d: %s", try.what, code, strings.TrimSpace(stderr))
		wantDiskFull(try.what, code, stderr)
		diffSnapshots(t, try.what, before, snapshot(t, home), home)
	}

	// A small append needs no new block when the transcript's and the
	// catalog's last pages have room (an append does not rewrite the
	// session document): it either fails as above or is stored whole.
	for _, session := range []string{"fill", "keep"} {
		before := snapshot(t, home)
		code, _, stderr := run("", "sessions", "append", session, "--role", "user", "--content", "small")
		t.Logf("small append to %s: exit %d: %s", session, code, strings.TrimSpace(stderr))
		if code != 0 {
			wantDiskFull("small append to "+session, code, stderr)
			diffSnapshots(t, "small append to "+session, before, snapshot(t, home), home)
			continue
		}
		if out := must("", "sessions", "export", session, "--format", "jsonl"); !strings.Contains(out, `"content":"small"}]`) {
			t.Errorf("small append to %s acknowledged but not the last message:\n%.300s", session, out)
		}
	}

	// Once there is room again, everything works and reads back whole.
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mnt, "reserve")); err != nil {
		t.Fatal(err)
	}
	must("", "sessions", "append", "keep", "--role", "user", "--content", "after")
	if out := must("", "sessions", "show", "keep"); !strings.Contains(out, "after") || !strings.Contains(out, "hello") {
		t.Errorf("show after the disk had room again:\n%s", out)
	}
	must("", "tasks", "run", "--wait", "--", "true")
	if code, out, errs := run("", "fsck"); code != 0 {
		t.Errorf("fsck after a full disk: exit %d\n%s%s", code, out, errs)
	}
	_ = profile
}

// snapshot maps every path under root to its type and content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffSnapshots fails the test if after differs from before, but for what
// a failed write may leave by design (documented in the README of the
// store, fsstore/doc.go): an empty lock sidecar (it holds no data and is
// taken before anything is known); an empty store directory (or one with only lock sidecars); and whole
// lines added to the sessions' activity catalog, a cache whose stray
// entries only bump a session's last-activity time (a line for a session
// without a document is skipped by readers).
func diffSnapshots(t *testing.T, what string, before, after map[string]string, root string) {
	t.Helper()
	if reflect.DeepEqual(before, after) {
		return
	}
	var diffs []string
	for k, v := range after {
		old, ok := before[k]
		switch {
		case !ok && v == "" && strings.HasSuffix(k, ".lock"):
			continue // an empty lock sidecar
		case !ok && v == "dir" && isEmptyDir(filepath.Join(root, k)):
			continue // an empty store directory
		case ok && filepath.Base(k) == ".catalog.jsonl" && strings.HasPrefix(v, old) && strings.HasSuffix(v, "\n") &&
			strings.Count(v[len(old):], "\n") == 1 && strings.HasPrefix(v[len(old):], `{"session_id":`):
			continue // one more activity line in the catalog cache
		case !ok && strings.HasSuffix(k, "/.running") && v == "dir":
			continue
		case !ok:
			diffs = append(diffs, "new: "+k+" ("+short(v)+")")
		case old != v:
			diffs = append(diffs, "changed: "+k+" ("+short(old)+" -> "+short(v)+")")
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diffs = append(diffs, "gone: "+k)
		}
	}
	if len(diffs) == 0 {
		return
	}
	sort.Strings(diffs)
	t.Errorf("%s changed the profile:\n  %s", what, strings.Join(diffs, "\n  "))
}

func isEmptyDir(dir string) bool {
	var files int
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(path, ".lock") {
			files++
		}
		return nil
	})
	return files == 0
}

func short(s string) string {
	if len(s) > 60 {
		return s[:30] + "…" + s[len(s)-30:]
	}
	return s
}
