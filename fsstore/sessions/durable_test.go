package sessions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestAppendDurableDespiteCatalog: the activity catalog is a cache of the
// transcripts (invariant 5). An append whose line is synced succeeds when
// the catalog's write or sync fails, or the document's preview cannot be
// written, and says so; a retry of a failed append would store its
// message twice. Only a failure of the transcript's own write or sync
// fails it, with nothing stored.
func TestAppendDurableDespiteCatalog(t *testing.T) {
	t.Parallel()
	isCatalog := func(f *os.File) bool { return filepath.Base(f.Name()) == catalogName }
	for _, c := range []struct {
		step   string
		stored bool
	}{{"catalog write", true}, {"document", true}, {"transcript write", false}, {"transcript sync", false}} {
		t.Run(c.step, func(t *testing.T) {
			s, _, w := newTestStore(t)
			id := mustCreate(t, s, "c1")
			storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) {
				if c.step == "catalog write" && isCatalog(f) || c.step == "transcript write" && f.Name() == s.logPath(id) {
					return 0, storetest.ErrInjected
				}
				return f.Write(b)
			})
			storetest.SetSeams(t, func(dir, pattern string) (*os.File, error) {
				if c.step == "document" && strings.HasPrefix(pattern, "."+id+".json.tmp-") {
					return nil, storetest.ErrInjected
				}
				return os.CreateTemp(dir, pattern)
			}, nil, func(f *os.File) error {
				if c.step == "transcript sync" && f.Name() == s.logPath(id) {
					return storetest.ErrInjected
				}
				return f.Sync()
			})
			n, err := s.Append(id, []Message{textMsg("user", "hello")})
			if !c.stored {
				if !errors.Is(err, storetest.ErrInjected) {
					t.Fatalf("Append = %d, %v; want the injected error", n, err)
				}
				if got := readMessages(t, s, id); len(got) != 0 {
					t.Fatalf("a failed append stored %q", texts(got))
				}
				return
			}
			if err != nil || n != 1 {
				t.Fatalf("Append = %d, %v; want 1, nil: the line is durable", n, err)
			}
			if got := texts(readMessages(t, s, id)); len(got) != 1 || got[0] != "hello" {
				t.Fatalf("transcript holds %q", got)
			}
			warned := strings.Join(w.List(), "\n")
			if !strings.Contains(warned, "injected") || !strings.Contains(warned, "stored, but") {
				t.Errorf("warnings %q do not tell the failed cache step", warned)
			}
		})
	}
}

// TestAppendOutcomeUnknownSaysHowToCheck: an append whose transcript
// write failed and could not be cut back (the mount died) may be stored:
// its error says the outcome is unknown and how to look.
func TestAppendOutcomeUnknownSaysHowToCheck(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "c1")
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		if f.Name() == s.logPath(id) {
			return storetest.ErrInjected
		}
		return f.Sync()
	})
	storetest.SetTruncate(t, func(*os.File, int64) error { return errors.New("transport endpoint is not connected") })
	_, err := s.Append(id, []Message{textMsg("user", "hello")})
	var unknown *fsstore.UnknownOutcomeError
	if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "outcome unknown") || !strings.Contains(err.Error(), "hermes sessions show "+id) {
		t.Fatalf("Append = %v, want an unknown outcome that names hermes sessions show %s", err, id)
	}
}
