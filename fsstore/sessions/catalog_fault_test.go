package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestFailureAtEveryStepCatalogAgrees runs the writes of a one-shot chat
// (create, the user message, the reply, the end) with the nth step of the
// write recipes (a temp file, a write, a sync, a rename) failing, for
// every n until the write succeeds, both once and from then on (a full
// disk, on which a rename and a directory's sync, which need no space,
// still work). After each failure, the session is as it was and fsck finds
// nothing: the catalog never says what the document does not (issue 27
// item 7: a failed end left the catalog saying ended).
func TestFailureAtEveryStepCatalogAgrees(t *testing.T) {
	t.Parallel()
	steps := []struct {
		name string
		run  func(s *Store) error
	}{
		{"create", func(s *Store) error { _, _, err := s.Create(Session{ID: "c1", Source: "chat"}); return err }},
		{"user message", func(s *Store) error { _, err := s.Append("c1", []Message{textMsg("user", "hi")}); return err }},
		{"reply", func(s *Store) error { _, err := s.Append("c1", []Message{textMsg("assistant", "hello")}); return err }},
		{"end", func(s *Store) error { _, err := s.End("c1", "cli_exit"); return err }},
	}
	for i, step := range steps {
		for _, sticky := range []bool{false, true} {
			for n := 1; ; n++ {
				name := fmt.Sprintf("%s/fail-%d/sticky=%v", step.name, n, sticky)
				s, _, _ := newTestStore(t)
				for _, before := range steps[:i] {
					if err := before.run(s); err != nil {
						t.Fatalf("%s: %s: %v", name, before.name, err)
					}
				}
				was, werr := s.Get("c1")
				var mu sync.Mutex
				calls := 0
				// fail says whether this step fails; needsSpace is false
				// for the steps a full disk does not refuse.
				fail := func(needsSpace bool) bool {
					mu.Lock()
					defer mu.Unlock()
					calls++
					if sticky {
						return needsSpace && calls >= n
					}
					return calls == n
				}
				storetest.SetSeams(t, func(dir, pattern string) (*os.File, error) {
					if fail(true) {
						return nil, storetest.ErrInjected
					}
					return os.CreateTemp(dir, pattern)
				}, func(from, to string) error {
					if fail(false) {
						return storetest.ErrInjected
					}
					return os.Rename(from, to)
				}, func(f *os.File) error {
					fi, err := f.Stat()
					if fail(err == nil && !fi.IsDir()) {
						return storetest.ErrInjected
					}
					return f.Sync()
				})
				storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) {
					if fail(true) {
						return 0, storetest.ErrInjected
					}
					return f.Write(b)
				})
				err := step.run(s)
				storetest.SetSeams(t, os.CreateTemp, os.Rename, func(f *os.File) error { return f.Sync() })
				storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) { return f.Write(b) })
				if err == nil && calls < n {
					break
				}
				if err != nil {
					now, nerr := s.Get("c1")
					if (werr == nil) != (nerr == nil) || now.State != was.State || now.MessageCount != was.MessageCount {
						t.Errorf("%s: failed (%v), but the session went from %+v (%v) to %+v (%v)", name, err, was, werr, now, nerr)
					}
				}
				findings, cerr := s.Check(false, t.TempDir())
				if cerr != nil {
					t.Fatalf("%s: Check: %v", name, cerr)
				}
				behind := false
				for _, f := range findings {
					switch {
					case f.Problem && err == nil && strings.Contains(f.What, "activity catalog counts"):
						// A catalog line that failed after the transcript's
						// sync: the append stands (the catalog is a cache),
						// warned of, and repair levels the catalog.
						behind = true
					case f.Problem:
						t.Errorf("%s (the step's error: %v): fsck: %s: %s", name, err, f.Path, f.What)
					}
				}
				if behind {
					if _, err := s.Check(true, t.TempDir()); err != nil {
						t.Fatalf("%s: repair: %v", name, err)
					}
					findings, _ := s.Check(false, t.TempDir())
					for _, f := range findings {
						if f.Problem {
							t.Errorf("%s: after repair: %s: %s", name, f.Path, f.What)
						}
					}
				}
			}
		}
	}
}

// TestCatalogLineLostIsLeveled: an append's catalog line is written after
// its transcript is synced and is not synced itself, so a crash (a kill
// between the two, a power cut before the line reached the disk) can
// leave the catalog behind the transcript, never ahead. The line's write
// is lost here (it reports success and writes nothing, as a power cut
// undoes it): the append is durable, Check names the session whose line
// is behind, and repair levels the catalog, after which Stats counts
// what the transcripts hold and Check finds nothing.
func TestCatalogLineLostIsLeveled(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	if _, _, err := s.Create(Session{ID: "c1", Source: "chat"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append("c1", []Message{textMsg("user", "hi")}); err != nil {
		t.Fatal(err)
	}
	catalog := s.catalogPath()
	storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) {
		if f.Name() == catalog {
			return len(b), nil
		}
		return f.Write(b)
	})
	if _, err := s.Append("c1", []Message{textMsg("assistant", "hello")}); err != nil {
		t.Fatal(err)
	}
	storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) { return f.Write(b) })
	if got, err := s.Get("c1"); err != nil || got.MessageCount != 2 {
		t.Fatalf("after the append: %+v, %v; want 2 messages", got, err)
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || !findings[0].Problem || !strings.Contains(findings[0].What, "counts 1 messages of session c1; its transcript has 2") {
		t.Fatalf("fsck: %+v, want the catalog behind session c1", findings)
	}
	findings, err = s.Check(true, t.TempDir())
	if err != nil || len(findings) != 1 || !findings[0].Repaired {
		t.Fatalf("fsck --repair: %+v, %v", findings, err)
	}
	if st, err := s.Stats(); err != nil || st.Messages != 2 {
		t.Fatalf("stats after the repair: %+v, %v; want 2 messages", st, err)
	}
	if findings, err := s.Check(false, t.TempDir()); err != nil || len(findings) != 0 {
		t.Fatalf("fsck after the repair: %+v, %v", findings, err)
	}
}

// TestCatalogNeverAheadOfTranscript: when an append's transcript is
// synced, its catalog line is not yet written, so no crash can leave a
// line that counts messages the transcript lost; and the catalog is not
// synced by an append (it is a cache).
func TestCatalogNeverAheadOfTranscript(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	if _, _, err := s.Create(Session{ID: "c1", Source: "chat"}); err != nil {
		t.Fatal(err)
	}
	catalog, transcript := s.catalogPath(), s.logPath("c1")
	var synced []string
	count := `"message_count":1`
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		synced = append(synced, filepath.Base(f.Name()))
		if f.Name() == transcript {
			if b, _ := os.ReadFile(catalog); strings.Contains(string(b), count) {
				t.Errorf("the catalog counts the message before the transcript is synced: %s", b)
			}
		}
		return f.Sync()
	})
	// The first user message writes the preview into the document, whose
	// name is committed: the document is synced, not its directory.
	if _, err := s.Append("c1", []Message{textMsg("user", "hi")}); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 || synced[0] != "c1.jsonl" || !strings.HasPrefix(synced[1], ".c1.json.tmp-") {
		t.Errorf("the first user message synced %v, want the transcript and the document", synced)
	}
	synced, count = nil, `"message_count":2`
	if _, err := s.Append("c1", []Message{textMsg("assistant", "hello")}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"c1.jsonl"}; !slices.Equal(synced, want) {
		t.Errorf("the reply synced %v, want %v", synced, want)
	}
	if b := storetest.MustRead(t, catalog); !strings.Contains(string(b), count) {
		t.Errorf("the catalog lacks the append's line: %s", b)
	}
}

// TestCatalogLineLockNamesNoHolder: an append's catalog line is written
// under a lock that holds no holder record (fsstore.LockLogUntil): the
// catalog is a log, fenced by its end, and the record's write and
// emptying were most of the line's cost. The transcript's lock, which
// guards the session's document, holds one.
func TestCatalogLineLockNamesNoHolder(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	if _, _, err := s.Create(Session{ID: "c1", Source: "chat"}); err != nil {
		t.Fatal(err)
	}
	catalog, transcript := s.catalogPath(), s.logPath("c1")
	sizes := map[string]int64{}
	storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) {
		lock := filepath.Join(s.Dir, catalogLockName)
		if f.Name() == transcript {
			lock = filepath.Join(s.Dir, "c1.lock")
		}
		if fi, err := os.Stat(lock); err == nil {
			sizes[filepath.Base(lock)] = fi.Size()
		}
		return f.Write(b)
	})
	if _, err := s.Append("c1", []Message{textMsg("user", "hi")}); err != nil {
		t.Fatal(err)
	}
	if n, ok := sizes[catalogLockName]; !ok || n != 0 {
		t.Errorf("the catalog's lock file held %d bytes (seen: %v) as the line was written, want none", n, ok)
	}
	if sizes["c1.lock"] == 0 {
		t.Errorf("the session's lock file held no record as its transcript was written")
	}
	if _, err := os.Stat(catalog); err != nil {
		t.Fatal(err)
	}
}
