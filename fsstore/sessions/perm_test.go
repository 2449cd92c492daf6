package sessions

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestPrivateModesUnderUmask000 checks invariant 8 with the widest umask
// (and with one that would narrow modes below what the store needs):
// every directory the store makes is 0700 and every file 0600, through
// create, append, a forced save, a quarantine and a torn-tail copy. The
// umask is process-wide, so this test must not run in parallel.
func TestPrivateModesUnderUmask000(t *testing.T) {
	for _, umask := range []int{0, 0o277} {
		t.Run(fmt.Sprintf("umask=%03o", umask), func(t *testing.T) { checkModesUnderUmask(t, umask) })
	}
}

func checkModesUnderUmask(t *testing.T, umask int) {
	root := t.TempDir()
	old := syscall.Umask(umask)
	defer syscall.Umask(old)

	s, clock, _ := newTestStoreIn(t, filepath.Join(root, "profiles", "default"))
	a := mustCreate(t, s, "a")
	mustAppend(t, s, a, textMsg("user", "one"), textMsg("assistant", "two"))
	clock.Advance(1e9)
	if _, err := s.Save(a, []Message{textMsg("user", "other")}, true); err != nil {
		t.Fatal(err)
	}
	b := mustCreate(t, s, "b")
	storetest.MustWrite(t, s.docPath(b), []byte("{not json"))
	if _, err := s.Get(b); err == nil {
		t.Fatal("Get of a corrupt document succeeded")
	}
	c := mustCreate(t, s, "c")
	mustAppend(t, s, c, textMsg("user", "one"))
	log := storetest.MustRead(t, s.logPath(c))
	storetest.MustWrite(t, s.logPath(c), append(log, `{"seq":2,"ts":"x","ro`...))
	mustAppend(t, s, c, textMsg("user", "two"))
	if _, err := s.OpenTranscript(b); err != nil { // a reader's lock file
		t.Fatal(err)
	}
	// The test's own writes above (the damage) rewrite files the store
	// made, which keeps their modes; it makes no file of its own.

	kinds := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "profiles"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = fs.ModeDir | 0o700
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
		for _, k := range []string{".torn-", ".corrupt-", ".replaced-", ".lock", ".catalog.jsonl", ".jsonl", ".json"} {
			if strings.Contains(d.Name(), k) {
				kinds[k] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{".torn-", ".corrupt-", ".replaced-", ".lock", ".catalog.jsonl", ".jsonl", ".json"} {
		if !kinds[k] {
			t.Errorf("no %s file was made; the test does not cover it", k)
		}
	}
}
