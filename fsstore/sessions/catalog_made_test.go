package sessions

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCatalogMadeOnceWhileSessionCreated: two processes on a profile with
// no catalog (a fresh profile, or one whose catalog was removed). One
// lists, finds no catalog and goes to make it from the documents; the
// other creates a session, whose catalog line is written, making the
// catalog, before its document. A catalog made from the documents after
// that, over the one the line made, would drop the new session's line
// (its document not yet there to read), and fsck would find the catalog
// lacking it (seen on GlusterFS, two hosts' first commands at once). The
// catalog is made once: by the first of them to hold its lock, and
// complete (the sessions whose documents are there, and the line).
func TestCatalogMadeOnceWhileSessionCreated(t *testing.T) {
	t.Parallel()
	profile := filepath.Join(t.TempDir(), "profiles", "default")
	s, _, _ := newTestStoreIn(t, profile)
	other, _, _ := newTestStoreIn(t, profile)
	mustCreate(t, s, "old")
	if err := os.Remove(s.catalogPath()); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	sess := Session{ID: "new", Source: "test", State: StateActive}
	err := s.addCatalogThen(&sess, now, now, func() error {
		// The lister, which found no catalog before the line made one.
		if err := other.makeCatalog(); err != nil {
			return err
		}
		return s.writeDoc(&sess, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	findings, err := s.Check(false, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		// The id index is Create's to write, after this commit.
		if f.Problem && filepath.Base(f.Path) == catalogName {
			t.Errorf("fsck: %s: %s", f.Path, f.What)
		}
	}
	list, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("List = %d sessions, want old and new", len(list))
	}
}

// TestCatalogMadeByAppend: a session created where the catalog is missing
// but documents are there (the catalog removed, as a cache may be) starts
// a catalog that lists every session, not only its own line.
func TestCatalogMadeByAppend(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	mustCreate(t, s, "old")
	if err := os.Remove(s.catalogPath()); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "new")
	list, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("List = %d sessions, want old and new", len(list))
	}
}
