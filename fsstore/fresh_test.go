package fsstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// FreshSize sees what another descriptor appended after f was opened. On
// a local disk fstat does too; what it adds on FUSE, a size no cache can
// make stale, scripts/multihost.sh shows on a GlusterFS volume.
func TestFreshSizeSeesLaterAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	storetest.MustWrite(t, path, []byte("{\"seq\":1}\n"))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.WriteString("{\"seq\":2}\n"); err != nil {
		t.Fatal(err)
	}
	other.Close()
	size, err := fsstore.FreshSize(f)
	if err != nil {
		t.Fatal(err)
	}
	if size != 20 {
		t.Fatalf("FreshSize = %d, want 20", size)
	}
}

// A document whose reads answer ESTALE (a name another host's rename
// replaced) is read again, and read; one that keeps answering it fails.
func TestReadDocRetriesStale(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "doc.json")
	storetest.MustWrite(t, path, []byte(`{"id":"x"}`))
	stale := 2
	storetest.SetReadFile(t, func(p string) ([]byte, error) {
		if stale > 0 {
			stale--
			return nil, &os.PathError{Op: "read", Path: p, Err: syscall.ESTALE}
		}
		return os.ReadFile(p)
	})
	var doc struct{ ID string }
	if err := fsstore.ReadDoc(path, &doc); err != nil || doc.ID != "x" {
		t.Fatalf("ReadDoc after two ESTALE = %+v, %v; want x", doc, err)
	}
	stale = 3
	if err := fsstore.ReadDoc(path, &doc); !errors.Is(err, syscall.ESTALE) {
		t.Fatalf("ReadDoc of a document that stays stale = %v, want ESTALE", err)
	}
}

// What the fresh size costs beside fstat, on the disk the test runs on.
func BenchmarkFreshSize(b *testing.B) {
	path := filepath.Join(b.TempDir(), "log.jsonl")
	storetest.MustWrite(b, path, []byte("{\"seq\":1}\n"))
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.Run("statx-force-sync", func(b *testing.B) {
		for b.Loop() {
			if _, err := fsstore.FreshSize(f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fstat", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.Stat(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
