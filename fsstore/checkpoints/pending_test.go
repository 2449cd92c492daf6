package checkpoints

import (
	"bytes"
	"errors"
	"fmt"
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

func pendingOf(call string) Pending {
	return Pending{SessionID: "s1", CallID: call, Changes: []Change{{Path: "/w/" + call, Before: Hash([]byte(call)), After: Hash([]byte(call + "'"))}}}
}

// calls is the call ids of the records in flight, in order.
func calls(t *testing.T, s *Store) string {
	t.Helper()
	all, err := s.AllPending()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range all {
		ids = append(ids, p.CallID)
	}
	return strings.Join(ids, " ")
}

// A session's pending log: a call's last record is its record, a clear
// with other calls in flight leaves a Done line, and the last clear
// empties the log, which stays for the session's next change.
func TestPendingLog(t *testing.T) {
	s := Open(t.TempDir())
	for _, p := range []Pending{pendingOf("a"), pendingOf("b"), {SessionID: "s1", CallID: "a"}} {
		if err := s.SetPending(p); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, err := s.PendingOf("s1", "a"); err != nil || !ok || len(got.Changes) != 0 {
		t.Fatalf("PendingOf(a) = %+v %v %v, want its last record", got, ok, err)
	}
	if err := s.ClearPending("s1", "a"); err != nil {
		t.Fatal(err)
	}
	if got := calls(t, s); got != "b" {
		t.Fatalf("in flight after clearing a: %q", got)
	}
	if err := s.ClearPending("s1", "a"); err != nil {
		t.Fatalf("a second clear: %v", err)
	}
	if err := s.ClearPending("s1", "b"); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(s.Dir, "pending", "s1.jsonl")
	if fi, err := os.Stat(log); err != nil || fi.Size() != 0 {
		t.Fatalf("the log once no call is in flight: %v %v, want it empty", fi, err)
	}
	if _, _, err := s.PendingOf("../s1", "a"); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("PendingOf an invalid session id: %v", err)
	}
}

// A log that a record left stale by a crash keeps from being emptied is
// rewritten with only the records in flight once it passes compactAt.
func TestPendingLogCompacts(t *testing.T) {
	defer func(n int64) { compactAt = n }(compactAt)
	compactAt = 4 << 10
	s := Open(t.TempDir())
	if err := s.SetPending(pendingOf("stale")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(s.Dir, "pending", "s1.jsonl")
	for i := 0; ; i++ {
		call := fmt.Sprint("c", i)
		if err := s.SetPending(pendingOf(call)); err != nil {
			t.Fatal(err)
		}
		if err := s.ClearPending("s1", call); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(log); fi.Size() < int64(i*100) {
			break
		}
		if i > 1000 {
			t.Fatal("the log was never compacted")
		}
	}
	if got := calls(t, s); got != "stale" {
		t.Fatalf("in flight after compaction: %q", got)
	}
	if fi, _ := os.Stat(log); fi.Size() > 1000 {
		t.Fatalf("the log is %d bytes after compaction", fi.Size())
	}
}

// A pending record whose write or sync fails is refused (the tool then
// writes nothing), and leaves the log as it was; a clear that fails
// leaves the record in flight; a compaction that fails leaves the log
// whole.
func TestPendingLogFaults(t *testing.T) {
	s := Open(t.TempDir())
	if err := s.SetPending(pendingOf("a")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(s.Dir, "pending", "s1.jsonl")
	before := storetest.MustRead(t, log)
	fail := func(*os.File) error { return storetest.ErrInjected }
	for _, step := range []string{"write", "sync"} {
		t.Run(step, func(t *testing.T) {
			if step == "write" {
				seam.Install(t, s.Dir, seam.Faults{Write: func(*os.File, []byte) (int, error) { return 0, storetest.ErrInjected }})
			} else {
				seam.Install(t, s.Dir, seam.Faults{Sync: fail})
			}
			if err := s.SetPending(pendingOf("b")); !errors.Is(err, storetest.ErrInjected) {
				t.Fatalf("SetPending with a failing %s: %v", step, err)
			}
			if got := storetest.MustRead(t, log); !bytes.Equal(got, before) {
				t.Fatalf("the log after a failed append:\n%s\nwant\n%s", got, before)
			}
		})
	}
	if err := s.SetPending(pendingOf("b")); err != nil {
		t.Fatal(err)
	}
	t.Run("clear", func(t *testing.T) {
		seam.Install(t, s.Dir, seam.Faults{Write: func(*os.File, []byte) (int, error) { return 0, storetest.ErrInjected }})
		if err := s.ClearPending("s1", "a"); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("ClearPending with a failing write: %v", err)
		}
		if got := calls(t, s); got != "a b" {
			t.Fatalf("in flight after a failed clear: %q", got)
		}
	})
	t.Run("compaction", func(t *testing.T) {
		defer func(n int64) { compactAt = n }(compactAt)
		compactAt = 4 << 10
		var b []byte
		for i := range 100 {
			b = append(b, fmt.Sprintf(`{"session_id":"s1","call_id":"x%d","done":true}`+"\n", i)...)
		}
		f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
		f.Close()
		full := storetest.MustRead(t, log)
		seam.Install(t, s.Dir, seam.Faults{Sync: fail})
		if err := s.ClearPending("s1", "a"); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("ClearPending with a failing compaction: %v", err)
		}
		if got := storetest.MustRead(t, log); !bytes.Equal(got, full) {
			t.Fatal("the log changed after a failed compaction")
		}
		if got := calls(t, s); got != "a b" {
			t.Fatalf("in flight after a failed compaction: %q", got)
		}
	})
}

// A prune removes the pending log, and its lock, of a session that is
// gone, once no record is in flight in it; a log with one stays.
func TestPruneDropsGoneSessionsLogs(t *testing.T) {
	profile := t.TempDir()
	st := sessions.NewStore(profile, "default", time.Second, func(string) {})
	kept, _, err := st.Create(sessions.Session{})
	if err != nil {
		t.Fatal(err)
	}
	s := Open(profile)
	for _, p := range []Pending{{SessionID: kept.ID, CallID: "a"}, {SessionID: "gone", CallID: "a"}, {SessionID: "gone-busy", CallID: "a"}} {
		if err := s.SetPending(p); err != nil {
			t.Fatal(err)
		}
		if p.SessionID != "gone-busy" {
			if err := s.ClearPending(p.SessionID, "a"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Prune(st, PruneOptions{Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(storetest.DirNames(t, filepath.Join(s.Dir, "pending")), " ")
	if want := kept.ID + ".jsonl " + kept.ID + ".lock gone-busy.jsonl gone-busy.lock"; got != want {
		t.Fatalf("pending/ after prune: %s, want %s", got, want)
	}
}

// Calls of one session run at once: each one's record, appended and
// taken out under the log's lock, is never lost to another's, and the
// log is empty once they are all done.
func TestPendingLogConcurrentCalls(t *testing.T) {
	s := Open(t.TempDir())
	const calls = 8
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			call := fmt.Sprint("c", i)
			err := s.SetPending(pendingOf(call))
			if err == nil {
				var p Pending
				var ok bool
				if p, ok, err = s.PendingOf("s1", call); err == nil && (!ok || p.Changes[0].Path != "/w/"+call) {
					err = fmt.Errorf("the record of %s is %+v, %v", call, p, ok)
				}
			}
			if err == nil {
				err = s.ClearPending("s1", call)
			}
			errs <- err
		}()
	}
	for range calls {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, "pending", "s1.jsonl")); err != nil || fi.Size() != 0 {
		t.Fatalf("the log after every call is done: %v %v, want it empty", fi, err)
	}
}
