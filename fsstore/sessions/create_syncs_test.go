package sessions

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestCreateSyncs: a create syncs its document and their directory, and
// nothing else: its id index entry and its catalog line are caches,
// written before the document and not synced (issue 47: a gateway
// conversation's first turn in at most 5 syncs).
func TestCreateSyncs(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	mustCreate(t, s, "warm") // the index and the catalog exist
	var synced []string
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		synced = append(synced, filepath.Base(f.Name()))
		return f.Sync()
	})
	mustCreate(t, s, "c1")
	if len(synced) != 2 || !strings.HasPrefix(synced[0], ".c1.json.tmp-") || synced[1] != filepath.Base(s.Dir) {
		t.Errorf("a create synced %v, want the document and its directory", synced)
	}
}

// TestCreateCachesLostAreLeveled: a power cut after a create may lose its
// unsynced id index entry and catalog line (their writes are dropped
// here: cut off), never the document: the session is read by its id, fsck reports
// both caches behind it, and --repair levels them, after which a prefix
// finds it and the list shows it.
func TestCreateCachesLostAreLeveled(t *testing.T) {
	s, _, _ := newTestStore(t)
	mustCreate(t, s, "warm")
	// The unsynced lines lost: each file cut back to its size before.
	sizes := map[string]int64{}
	for _, path := range []string{s.idsRecentPath(), s.catalogPath()} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		sizes[path] = fi.Size()
	}
	mustCreate(t, s, "lost1")
	for path, size := range sizes {
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Get("lost1"); err != nil {
		t.Fatalf("the session by its id: %v", err)
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var what []string
	for _, f := range findings {
		what = append(what, f.What)
	}
	all := strings.Join(what, "|")
	if !strings.Contains(all, "id index lacks session lost1") || !strings.Contains(all, "activity catalog lacks session lost1") {
		t.Fatalf("fsck: %s, want the id index and the catalog behind session lost1", all)
	}
	if _, err := s.Check(true, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if findings, err := s.Check(false, t.TempDir()); err != nil || len(findings) != 0 {
		t.Fatalf("fsck after the repair: %+v, %v", findings, err)
	}
	if id, err := s.Resolve("lost"); err != nil || id != "lost1" {
		t.Fatalf("Resolve(lost) = %q, %v", id, err)
	}
	list, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list, func(sess Session) bool { return sess.ID == "lost1" }) {
		t.Fatalf("the list lacks session lost1: %+v", list)
	}
}
