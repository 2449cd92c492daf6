package sessions

import (
	"fmt"
	"os"
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
				// SyncLogs syncs a transcript and the catalog at once.
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
				for _, f := range findings {
					if f.Problem {
						t.Errorf("%s (the step's error: %v): fsck: %s: %s", name, err, f.Path, f.What)
					}
				}
			}
		}
	}
}
