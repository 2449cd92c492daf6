package checkpoints

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/seam"
	"github.com/hermes/hermes/fsstore/internal/storetest"
	"github.com/hermes/hermes/fsstore/sessions"
)

// An object saved uncompressed (the write path) reads back, and Compress
// turns it into the gzip Put writes, still read back; an uncompressed
// object whose bytes start as gzip's do is still the bytes it holds.
func TestSaveThenCompress(t *testing.T) {
	s := Open(t.TempDir())
	data := bytes.Repeat([]byte("hermes\x00\xff"), 1000)
	h := Hash(data)
	if err := s.Save(h, data); err != nil {
		t.Fatal(err)
	}
	path := objPath(t, s, h)
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("saved object holds %d bytes, %v; want the %d bytes as they are", len(b), err, len(data))
	}
	if got, err := s.Get(h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get of a saved object = %d bytes, %v", len(got), err)
	}
	if n, err := s.Compress(); err != nil || n != 1 {
		t.Fatalf("Compress = %d, %v; want 1", n, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() >= int64(len(data)) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("compressed object: %v, %v", fi, err)
	}
	if got, err := s.Get(h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get of a compressed object = %d bytes, %v", len(got), err)
	}
	if n, err := s.Compress(); err != nil || n != 0 {
		t.Fatalf("second Compress = %d, %v; want 0", n, err)
	}

	gz := []byte("\x1f\x8b\x08 looks like gzip, is not")
	hg := Hash(gz)
	if err := s.Save(hg, gz); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(hg); err != nil || !bytes.Equal(got, gz) {
		t.Fatalf("Get of a saved object that starts as gzip = %q, %v", got, err)
	}
	if err := os.WriteFile(objPath(t, s, hg), []byte("\x1f\x8b\x08 other"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(hg); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of a garbled saved object: %v, want corrupt", err)
	}
}

// A Compress that fails at any step (the temp file's sync, its rename)
// leaves the uncompressed object whole and readable, and a later
// Compress finishes.
func TestCompressFault(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"sync", "rename"} {
		t.Run(step, func(t *testing.T) {
			s := Open(t.TempDir())
			data := bytes.Repeat([]byte("checkpoint "), 5000)
			h := Hash(data)
			if err := s.Save(h, data); err != nil {
				t.Fatal(err)
			}
			fail := errors.New("injected")
			failing := true
			switch step {
			case "sync":
				seam.Install(t, s.Dir, seam.Faults{Sync: func(f *os.File) error {
					if failing {
						return fail
					}
					return f.Sync()
				}})
			case "rename":
				seam.Install(t, s.Dir, seam.Faults{Rename: func(from, to string) error {
					if failing {
						return fail
					}
					return os.Rename(from, to)
				}})
			}
			if _, err := s.Compress(); !errors.Is(err, fail) {
				t.Fatalf("Compress with a failing %s: %v", step, err)
			}
			failing = false
			if got, err := s.Get(h); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Get after a failed Compress = %d bytes, %v", len(got), err)
			}
			entries, _ := os.ReadDir(filepath.Dir(objPath(t, s, h)))
			if len(entries) != 1 {
				t.Fatalf("%s holds %v after a failed Compress: a temp file left", filepath.Dir(objPath(t, s, h)), entries)
			}
			if n, err := s.Compress(); err != nil || n != 1 {
				t.Fatalf("Compress = %d, %v; want 1", n, err)
			}
		})
	}
}

// Remembered knows the hash of the bytes last written to a path (Wrote)
// without hashing them again, and only while they are the same bytes.
func TestRemembered(t *testing.T) {
	s := Open(t.TempDir())
	data := []byte("the agent wrote this")
	s.Wrote("/f", data, "not-a-real-hash")
	if got, ok := s.Remembered("/f", []byte("the agent wrote this")); !ok || got != "not-a-real-hash" {
		t.Fatalf("Remembered of the bytes written = %s %v, want the remembered hash", got, ok)
	}
	if got, ok := s.Remembered("/f", []byte("the user wrote this")); ok {
		t.Fatalf("Remembered of other bytes = %s", got)
	}
	if got, ok := s.Remembered("/g", data); ok {
		t.Fatalf("Remembered at another path = %s", got)
	}
	big := make([]byte, recentBytes/2+1)
	s.Wrote("/a", big, "a")
	s.Wrote("/b", big, "b")
	if _, ok := s.Remembered("/a", big); ok {
		t.Fatalf("the oldest file is still remembered past %d bytes", recentBytes)
	}
	if got, ok := s.Remembered("/b", big); !ok || got != "b" {
		t.Fatalf("the newest file is forgotten")
	}
}

// Prune compresses the objects stored as they are before it bounds the
// store, so that checkpoints.max_bytes counts what they take compressed;
// a dry run changes nothing.
func TestPruneCompresses(t *testing.T) {
	profile := t.TempDir()
	st := sessions.NewStore(profile, "default", time.Second, func(string) {})
	s := Open(profile)
	data := bytes.Repeat([]byte("checkpoint "), 5000)
	h := Hash(data)
	if err := s.Save(h, data); err != nil {
		t.Fatal(err)
	}
	path := objPath(t, s, h)
	if _, err := s.Prune(st, PruneOptions{Now: time.Now(), DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != int64(len(data)) {
		t.Fatalf("after a dry run: %v, %v; want the object as it was", fi, err)
	}
	if _, err := s.Prune(st, PruneOptions{Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() >= int64(len(data)) {
		t.Fatalf("after prune: %v, %v; want the object compressed", fi, err)
	}
}

// SaveHashing stores bytes whose hash it computes meanwhile, tells the
// hash before the object is durable, and leaves no temp file; bytes
// stored already are not stored again.
func TestSaveHashing(t *testing.T) {
	s := Open(t.TempDir())
	data := bytes.Repeat([]byte("first change "), 1000)
	told := ""
	h, err := s.SaveHashing(data, func(h string) { told = h })
	if err != nil || h != Hash(data) || told != h {
		t.Fatalf("SaveHashing = %s, %v; told %s; want %s", h, err, told, Hash(data))
	}
	if got, err := s.Get(h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get = %d bytes, %v", len(got), err)
	}
	if names := storetest.DirNames(t, filepath.Join(s.Dir, "objects")); len(names) != 1 || names[0] != filepath.Base(filepath.Dir(objPath(t, s, h))) {
		t.Fatalf("objects/ holds %v", names)
	}
	if h2, err := s.SaveHashing(data, func(string) {}); err != nil || h2 != h {
		t.Fatalf("SaveHashing of stored bytes = %s, %v", h2, err)
	}
	if names := storetest.DirNames(t, filepath.Join(s.Dir, "objects")); len(names) != 1 {
		t.Fatalf("objects/ holds %v after bytes stored already were saved again: a temp file left", names)
	}
}

// A SaveHashing that fails at any step (the temp file's creation, its
// sync, its rename) stores nothing, says why, still tells the hash, and
// leaves no temp file; a prune removes one a crash left, once MinAge
// old.
func TestSaveHashingFaults(t *testing.T) {
	fail := errors.New("injected")
	for _, step := range []string{"create", "sync", "rename"} {
		t.Run(step, func(t *testing.T) {
			s := Open(t.TempDir())
			data := []byte("first change of " + step)
			switch step {
			case "create":
				storetest.SetSeams(t, func(string, string) (*os.File, error) { return nil, fail }, nil, nil)
			case "sync":
				storetest.SetSeams(t, nil, nil, func(*os.File) error { return fail })
			case "rename":
				storetest.SetSeams(t, nil, func(string, string) error { return fail }, nil)
			}
			told := ""
			h, err := s.SaveHashing(data, func(h string) { told = h })
			if !errors.Is(err, fail) || told != Hash(data) {
				t.Fatalf("SaveHashing with a failing %s: %v, told %q", step, err, told)
			}
			if _, err := s.Get(h); !errors.Is(err, fsstore.ErrNotFound) {
				t.Fatalf("Get after a failed SaveHashing: %v", err)
			}
			entries, _ := os.ReadDir(filepath.Join(s.Dir, "objects"))
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), stagePrefix) {
					t.Fatalf("a temp file left: %s", e.Name())
				}
			}
		})
	}
	t.Run("crash", func(t *testing.T) {
		profile := t.TempDir()
		s := Open(profile)
		left := filepath.Join(s.Dir, "objects", stagePrefix+"1")
		os.MkdirAll(filepath.Dir(left), 0o700)
		storetest.MustWrite(t, left, []byte("half"))
		st := sessions.NewStore(profile, "default", time.Second, func(string) {})
		if _, err := s.Prune(st, PruneOptions{Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(left); err != nil {
			t.Fatalf("a young temp file was removed: %v", err)
		}
		if _, err := s.Prune(st, PruneOptions{Now: time.Now().Add(MinAge)}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(left); !os.IsNotExist(err) {
			t.Fatalf("the temp file a crash left is still there: %v", err)
		}
	})
}
