package fsstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/seam"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestEnsureDirMadeByAnotherHost: a directory another host is making is
// there for this host's mkdir (EEXIST) some milliseconds before a lookup
// here finds it, as on GlusterFS; EnsureDir waits until it can see it and
// succeeds (before: "chmod …: no such file or directory", exit 1, for a
// first command on a fresh profile from two hosts at once).
func TestEnsureDirMadeByAnotherHost(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	storetest.SetMkdir(t, func(dir string, mode os.FileMode) error {
		if dir != home {
			return os.Mkdir(dir, mode)
		}
		go func() {
			time.Sleep(30 * time.Millisecond)
			os.Mkdir(dir, mode)
		}()
		return os.ErrExist
	})
	dir := filepath.Join(home, fsstore.ProfilesDirName, "default")
	if err := fsstore.EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("%s: %v", dir, err)
	}
}

// TestEnsureDirMadeElsewhereAsALink: what another process put where the
// mkdir found something is a link, or a file: refused, never followed.
func TestEnsureDirMadeElsewhereAsALink(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	profile := filepath.Join(root, fsstore.ProfilesDirName, "p")
	for name, plant := range map[string]func(string) error{
		"link": func(dir string) error { return os.Symlink(outside, dir) },
		"file": func(dir string) error { return os.WriteFile(dir, nil, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			os.RemoveAll(profile)
			seam.Install(t, root, seam.Faults{Mkdir: func(dir string, mode os.FileMode) error {
				if dir != profile {
					return os.Mkdir(dir, mode)
				}
				if err := plant(dir); err != nil {
					t.Fatal(err)
				}
				return os.ErrExist
			}})
			err := fsstore.EnsureDir(filepath.Join(profile, "sessions"))
			if !errors.Is(err, fsstore.ErrRefused) {
				t.Fatalf("EnsureDir through a %s: %v, want refused", name, err)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("written through the link: %v", entries)
			}
		})
	}
}
