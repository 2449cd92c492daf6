package checkpoints

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/internal/seam"
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
	path := filepath.Join(s.Dir, "objects", h[:2], h[2:])
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
	if err := os.WriteFile(filepath.Join(s.Dir, "objects", hg[:2], hg[2:]), []byte("\x1f\x8b\x08 other"), 0o600); err != nil {
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
			entries, _ := os.ReadDir(filepath.Join(s.Dir, "objects", h[:2]))
			if len(entries) != 1 {
				t.Fatalf("objects/%s holds %v after a failed Compress: a temp file left", h[:2], entries)
			}
			if n, err := s.Compress(); err != nil || n != 1 {
				t.Fatalf("Compress = %d, %v; want 1", n, err)
			}
		})
	}
}

// HashOf knows the hash of the bytes last written to a path (Wrote)
// without hashing them again, and only while they are the same bytes.
func TestHashOfRemembers(t *testing.T) {
	s := Open(t.TempDir())
	data := []byte("the agent wrote this")
	s.Wrote("/f", data, "not-a-real-hash")
	if got := s.HashOf("/f", []byte("the agent wrote this")); got != "not-a-real-hash" {
		t.Fatalf("HashOf of the bytes written = %s, want the remembered hash", got)
	}
	if got := s.HashOf("/f", []byte("the user wrote this")); got != Hash([]byte("the user wrote this")) {
		t.Fatalf("HashOf of other bytes = %s, want their hash", got)
	}
	if got := s.HashOf("/g", data); got != Hash(data) {
		t.Fatalf("HashOf at another path = %s, want the hash", got)
	}
	big := make([]byte, recentBytes/2+1)
	s.Wrote("/a", big, "a")
	s.Wrote("/b", big, "b")
	if got := s.HashOf("/a", big); got != Hash(big) {
		t.Fatalf("the oldest file is still remembered past %d bytes", recentBytes)
	}
	if got := s.HashOf("/b", big); got != "b" {
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
	path := filepath.Join(s.Dir, "objects", h[:2], h[2:])
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
