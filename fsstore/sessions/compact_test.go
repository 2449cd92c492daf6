package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// hotCatalog makes a store of 20 sessions, two of them removed, and
// appends n messages to one, without syncs (the subject is the catalog's
// content, not durability). It returns the store and the hot session.
func hotCatalog(t *testing.T, n int, compactMin int64) (*Store, string) {
	t.Helper()
	s, _, _ := newTestStore(t)
	s.compactMin = compactMin
	storetest.SetSeams(t, nil, nil, func(*os.File) error { return nil })
	for i := range 20 {
		id := fmt.Sprintf("s%02d", i)
		mustCreate(t, s, id)
		mustAppend(t, s, id, textMsg("user", "hello"))
		if i%10 == 3 {
			if _, err := s.End(id, "test"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Delete(id, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range n {
		if _, err := s.Append("s05", []Message{textMsg("user", "again")}); err != nil {
			t.Fatal(err)
		}
	}
	return s, "s05"
}

// live is the last catalog line of each session that has a document.
func live(t *testing.T, s *Store) map[string]catalogEntry {
	t.Helper()
	latest, err := s.catalogLatest()
	if err != nil {
		t.Fatal(err)
	}
	for id := range latest {
		if _, err := os.Stat(s.docPath(id)); err != nil {
			delete(latest, id)
		}
	}
	return latest
}

// TestCatalogCompactsByRatio: appends to one session keep the catalog
// within catalogCompactRatio times its compacted size plus twice the least
// size of a compaction (it is looked at each time the catalog passes a
// multiple of that; before, it grew to 64 MB), and what its lines say of
// each session is unchanged by the compactions. The least size is a
// thirty-second of catalogCompactMin, so that three compactions take a few
// thousand appends.
func TestCatalogCompactsByRatio(t *testing.T) {
	t.Parallel()
	s, hot := hotCatalog(t, 0, catalogCompactMin/32)
	compactions, base := 0, s.catalogBase()
	for i := 0; compactions < 3; i++ {
		if i == 10000 {
			t.Fatalf("%d compactions in %d appends", compactions, i)
		}
		if _, err := s.Append(hot, []Message{textMsg("user", "again")}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(s.catalogPath())
		if err != nil {
			t.Fatal(err)
		}
		if b := s.catalogBase(); b != base {
			compactions, base = compactions+1, b
		}
		if limit := catalogCompactRatio*base + 2*s.compactAt(); fi.Size() > limit {
			t.Fatalf("catalog is %d bytes after %d appends; base %d, limit %d", fi.Size(), i+1, base, limit)
		}
	}
	before := live(t, s)
	if err := s.compactCatalog(); err != nil {
		t.Fatal(err)
	}
	if after := live(t, s); !reflect.DeepEqual(after, before) {
		t.Fatalf("the compaction changed the sessions' lines:\n%v\n%v", before, after)
	}
	if latest, _ := s.catalogLatest(); len(latest) != 18 {
		t.Fatalf("the compacted catalog names %d sessions, want the 18 not removed", len(latest))
	}
	assertFsckClean(t, s)
}

func assertFsckClean(t *testing.T, s *Store) {
	t.Helper()
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Problem {
			t.Errorf("fsck: %s: %s", f.Path, f.What)
		}
	}
}

// TestCatalogCompactionKeepsConcurrentWrites: an append made while a
// compaction writes its file (at its first sync, before it takes the
// catalog lock) is in the compacted catalog; a line taken back meanwhile
// (a failed write's retract) makes the compaction give up, and leaves the
// catalog as the retract left it.
func TestCatalogCompactionKeepsConcurrentWrites(t *testing.T) {
	t.Parallel()
	s, _ := hotCatalog(t, 50, 0)
	hooked := false
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		if !hooked && filepath.Dir(f.Name()) == s.Dir && f.Name() != s.catalogPath() {
			hooked = true
			if _, err := s.Append("s07", []Message{textMsg("user", "meanwhile")}); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	if err := s.compactCatalog(); err != nil {
		t.Fatal(err)
	}
	if !hooked {
		t.Fatal("the compaction made no temp file")
	}
	if e := live(t, s)["s07"]; e.MessageCount != 2 {
		t.Fatalf("the append made during the compaction is lost: s07's line %+v", e)
	}
	assertFsckClean(t, s)

	mustAppend(t, s, "s05", textMsg("user", "more"))
	e := s.entryOf(&Session{ID: "s08", State: StateActive, Source: "test", MessageCount: 9}, s.Now(), s.Now())
	if err := s.syncCatalog(e); err != nil {
		t.Fatal(err)
	}
	hooked = false
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		if !hooked && filepath.Dir(f.Name()) == s.Dir && f.Name() != s.catalogPath() {
			hooked = true
			s.retract(e)
		}
		return nil
	})
	want, err := os.ReadFile(s.catalogPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.compactCatalog(); !errors.Is(err, errCatalogMoved) {
		t.Fatalf("compaction over a retract: %v, want errCatalogMoved", err)
	}
	got, _ := os.ReadFile(s.catalogPath())
	if len(got) >= len(want) || string(got) != string(want[:len(got)]) {
		t.Fatalf("the catalog is not as the retract left it")
	}
	assertFsckClean(t, s)
}

// TestCatalogCompactionFaults fails each step of a compaction in turn
// (the temp file, its syncs, the rename, the directory's sync), once:
// after each, the catalog says what it said of every session (the old
// file, or the whole new one), and fsck finds nothing.
func TestCatalogCompactionFaults(t *testing.T) {
	t.Parallel()
	for n := 1; ; n++ {
		s, _ := hotCatalog(t, 100, 0)
		before := live(t, s)
		step := 0
		fail := func() error {
			step++
			if step == n {
				return storetest.ErrInjected
			}
			return nil
		}
		storetest.SetSeams(t,
			func(dir, pattern string) (*os.File, error) {
				if err := fail(); err != nil {
					return nil, err
				}
				return os.CreateTemp(dir, pattern)
			},
			func(from, to string) error {
				if err := fail(); err != nil {
					return err
				}
				return os.Rename(from, to)
			},
			func(*os.File) error { return fail() })
		err := s.compactCatalog()
		storetest.SetSeams(t, os.CreateTemp, os.Rename, func(*os.File) error { return nil })
		if after := live(t, s); !reflect.DeepEqual(after, before) {
			t.Fatalf("step %d failed (%v): the sessions' lines changed", n, err)
		}
		assertFsckClean(t, s)
		if err == nil {
			if n < 4 {
				t.Fatalf("a compaction of %d steps; want at least the temp file, two syncs and the rename", n-1)
			}
			return
		}
	}
}

// TestCatalogCompactsAfterSave: a Save whose line takes the catalog past
// 1 MB compacts it, as an append does (an import extends sessions with
// Save).
func TestCatalogCompactsAfterSave(t *testing.T) {
	t.Parallel()
	s, hot := hotCatalog(t, 0, 0)
	msgs, err := s.Messages(hot)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.catalogPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf(`{"session_id":%q,"at":"2026-01-01T00:00:00.000000Z","state":"active","source":"test","message_count":1,"bytes":77}`+"\n", hot)
	fi, _ := f.Stat()
	for size := fi.Size(); size+int64(len(line)) < catalogCompactMin-20; size += int64(len(line)) {
		f.WriteString(line)
	}
	f.Close()
	if _, err := s.Save(hot, append(msgs, textMsg("user", "saved")), false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.catalogPath()); err != nil || fi.Size() > 64<<10 || s.catalogBase() != fi.Size() {
		t.Fatalf("after the Save that took it past 1 MB the catalog is %v bytes (base %d), %v", fi.Size(), s.catalogBase(), err)
	}
	if e := live(t, s)[hot]; e.MessageCount != 2 {
		t.Fatalf("the saved session's line is %+v", e)
	}
}
