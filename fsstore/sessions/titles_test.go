package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// countDocReads counts, for the rest of the test, the session documents
// of s read whole, by id.
func countDocReads(t *testing.T, s *Store) func() map[string]int {
	t.Helper()
	var mu sync.Mutex
	reads := map[string]int{}
	storetest.SetReadFile(t, func(path string) ([]byte, error) {
		if filepath.Dir(path) == s.Dir && strings.HasSuffix(path, ".json") {
			mu.Lock()
			reads[strings.TrimSuffix(filepath.Base(path), ".json")]++
			mu.Unlock()
		}
		return os.ReadFile(path)
	})
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range reads {
			out[k] = v
		}
		return out
	}
}

func mustCreateTitled(t *testing.T, s *Store, id, title string) {
	t.Helper()
	if _, _, err := s.Create(Session{ID: id, Title: title}); err != nil {
		t.Fatalf("Create(%s, %q): %v", id, title, err)
	}
}

// A title lookup opens the one document it returns, and no other, however
// many sessions the profile holds; so does the check of a new title.
func TestTitleLookupReadsOneDocument(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	for i := range 60 {
		mustCreateTitled(t, s, fmt.Sprintf("s%02d", i), fmt.Sprintf("title %d", i))
	}
	reads := countDocReads(t, s)
	for _, ref := range []string{"title 7", "title 42"} {
		id, err := s.Resolve(ref)
		if err != nil {
			t.Fatal(err)
		}
		want := "s" + strings.TrimPrefix(ref, "title ")
		if len(want) == 2 {
			want = "s0" + want[1:]
		}
		if id != want {
			t.Fatalf("Resolve(%q) = %s, want %s", ref, id, want)
		}
	}
	if id, err := s.ByTitle("title 59"); err != nil || id != "s59" {
		t.Fatalf("ByTitle = %s, %v", id, err)
	}
	if got := reads(); len(got) != 3 || got["s07"] != 1 || got["s42"] != 1 || got["s59"] != 1 {
		t.Fatalf("lookups read the documents %v, want s07, s42 and s59 once each", got)
	}
	// A free title: the check reads no document; a taken one, its holder.
	if _, err := s.Rename("s01", "a new title"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rename("s02", "title 30"); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("Rename to a taken title: %v", err)
	}
	got := reads()
	for id := range got {
		if id != "s07" && id != "s42" && id != "s59" && id != "s01" && id != "s02" && id != "s30" {
			t.Errorf("rename read the document of %s (all reads: %v)", id, got)
		}
	}
}

// entriesOf returns the index entries of title's bucket.
func entriesOf(t *testing.T, s *Store, title string) []titleEntry {
	t.Helper()
	entries, err := s.readBucket(bucketOf(title))
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func addEntry(t *testing.T, s *Store, title, id string) {
	t.Helper()
	if err := s.writeBucket(bucketOf(title), append(entriesOf(t, s, title), titleEntry{Title: title, SessionID: id})); err != nil {
		t.Fatal(err)
	}
}

func hasEntry(entries []titleEntry, title, id string) bool {
	for _, e := range entries {
		if e == (titleEntry{Title: title, SessionID: id}) {
			return true
		}
	}
	return false
}

// A stale entry (its session renamed, deleted, or never written: a crash
// between the entry and the document) is never trusted, and the lookup
// that meets it drops it.
func TestTitleIndexStaleEntryNotTrusted(t *testing.T) {
	s, _, w := newTestStore(t)
	mustCreateTitled(t, s, "renamed", "other")
	mustCreateTitled(t, s, "gone", "old")
	addEntry(t, s, "shared", "renamed") // as if a rename to "shared" crashed before the document
	addEntry(t, s, "shared", "never")   // as if a create crashed before the document
	for _, p := range []string{s.docPath("gone"), s.logPath("gone")} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := s.Resolve("shared"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("Resolve through stale entries: %v, want not found", err)
	}
	if e := entriesOf(t, s, "shared"); len(e) != 0 {
		t.Fatalf("stale entries left after the lookup: %v", e)
	}
	if _, err := s.ByTitle("old"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("ByTitle of a removed session's title: %v", err)
	}
	// The titles are free: the stale entries do not hold them.
	mustCreateTitled(t, s, "new", "old")
	if _, err := s.Rename("renamed", "shared"); err != nil {
		t.Fatal(err)
	}
	if id, err := s.Resolve("old"); err != nil || id != "new" {
		t.Fatalf("Resolve(old) = %s, %v", id, err)
	}
	if e := entriesOf(t, s, "old"); len(e) != 1 || !hasEntry(e, "old", "new") {
		t.Fatalf("entries of old: %v", e)
	}
	// The rename dropped the entry of the title it replaced.
	if e := entriesOf(t, s, "other"); hasEntry(e, "other", "renamed") {
		t.Fatalf("entries of other after the rename: %v", e)
	}
	if len(w.List()) != 0 {
		t.Fatalf("warnings: %v", w.List())
	}
}

// A missing or partial index (no "complete" marker, or a bucket that does
// not parse) is never taken to mean "no such title": a lookup reads the
// documents and writes nothing; the next title write rebuilds the index
// and refuses a taken title.
func TestTitleIndexMissingNotTrusted(t *testing.T) {
	for _, damage := range []string{"removed", "partial", "corrupt"} {
		t.Run(damage, func(t *testing.T) {
			s, _, _ := newTestStore(t)
			mustCreateTitled(t, s, "a", "alpha")
			mustCreateTitled(t, s, "b", "beta")
			mustCreate(t, s, "c")
			switch damage {
			case "removed": // a profile from before the index
				if err := os.RemoveAll(s.titlesDir()); err != nil {
					t.Fatal(err)
				}
			case "partial": // a rebuild that crashed: no marker, a bucket missing
				os.Remove(s.titlesCompletePath())
				os.Remove(filepath.Join(s.titlesDir(), bucketOf("alpha")))
			case "corrupt":
				storetest.MustWrite(t, filepath.Join(s.titlesDir(), bucketOf("alpha")), []byte("[{"))
			}
			before := storetest.DirNames(t, s.Dir)
			if id, err := s.Resolve("alpha"); err != nil || id != "a" {
				t.Fatalf("Resolve(alpha) = %s, %v", id, err)
			}
			if after := storetest.DirNames(t, s.Dir); strings.Join(after, " ") != strings.Join(before, " ") {
				t.Fatalf("a lookup wrote: %v -> %v", before, after)
			}
			if _, err := s.Rename("c", "alpha"); !errors.Is(err, fsstore.ErrRefused) {
				t.Fatalf("Rename to a title the damaged index lost: %v", err)
			}
			if _, _, err := s.Create(Session{ID: "d", Title: "alpha"}); !errors.Is(err, fsstore.ErrRefused) {
				t.Fatalf("Create with a title the damaged index lost: %v", err)
			}
			if _, err := os.Stat(s.titlesCompletePath()); err != nil {
				t.Fatalf("index not rebuilt: %v", err)
			}
			if e := entriesOf(t, s, "alpha"); len(e) != 1 || !hasEntry(e, "alpha", "a") {
				t.Fatalf("rebuilt entries of alpha: %v", e)
			}
			findings, err := s.Check(false, t.TempDir())
			if err != nil || len(findings) != 0 {
				t.Fatalf("fsck after the rebuild: %+v, %v", findings, err)
			}
		})
	}
}

// fsck reports a titled document whose entry is missing (written by hand,
// or by an older hermes after the index was built), and --repair rebuilds
// the index.
func TestCheckTitleIndex(t *testing.T) {
	s, _, _ := newTestStore(t)
	mustCreateTitled(t, s, "a", "alpha")
	if err := s.writeBucket(bucketOf("alpha"), nil); err != nil {
		t.Fatal(err)
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil || len(findings) != 1 || !findings[0].Problem || !strings.Contains(findings[0].What, `title index lacks "alpha" of session a`) {
		t.Fatalf("findings %+v, %v", findings, err)
	}
	if findings, err = s.Check(true, t.TempDir()); err != nil || len(findings) != 1 || !findings[0].Repaired {
		t.Fatalf("repair: %+v, %v", findings, err)
	}
	if e := entriesOf(t, s, "alpha"); !hasEntry(e, "alpha", "a") {
		t.Fatalf("entries after the repair: %v", e)
	}
	if findings, err = s.Check(false, t.TempDir()); err != nil || len(findings) != 0 {
		t.Fatalf("after the repair: %+v, %v", findings, err)
	}
}
