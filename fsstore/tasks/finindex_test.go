package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// smallBlocks cuts the finished log into blocks of about n bytes for the
// test.
func smallBlocks(t *testing.T, n int64) {
	was := finishedIndexBlock
	finishedIndexBlock = n
	t.Cleanup(func() { finishedIndexBlock = was })
}

// scanRecords is the slow path: the last whole record of each task in
// the log, read from its start.
func scanRecords(t *testing.T, s *Store) map[string]*Task {
	t.Helper()
	f, size, err := fsstore.OpenSized(s.finishedPath())
	if f == nil || err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := map[string]*Task{}
	if _, err := fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		if e, ok := parseFinished(line); ok && e.Record != nil {
			found[e.TaskID] = e.Record
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

func appendLog(t *testing.T, s *Store, lines ...[]byte) int64 {
	t.Helper()
	f, err := os.OpenFile(s.finishedPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.Write(append(l, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func statusOf(r *Task) string {
	if r == nil {
		return "none"
	}
	return r.ID + "/" + r.Status
}

// TestFinishedIndexProperty: on generated finished logs (tasks finishing
// out of the order of their ids, long tasks among them, tasks with two
// lines, older short entries, torn and missing indexes, logs rewritten),
// every lookup equals the slow path's, and a task of the log is found
// through a current index without reading the log backwards.
func TestFinishedIndexProperty(t *testing.T) {
	smallBlocks(t, 700)
	for seed := range int64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			s, _, _ := newTestTaskStore(t)
			if err := s.ensureDirs(); err != nil {
				t.Fatal(err)
			}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var ids []string
			var pending []string // started, not finished yet
			statuses := []string{Succeeded, Failed, Lost}
			for step := range 300 {
				id := fsstore.NewID(t0.Add(time.Duration(step) * time.Minute))
				pending = append(pending, id)
				var lines [][]byte
				// Most tasks finish at once; some run long.
				for len(pending) > 0 && rng.Intn(10) < 8 {
					k := len(pending) - 1
					if rng.Intn(6) == 0 {
						k = rng.Intn(len(pending))
					}
					done := pending[k]
					pending = append(pending[:k], pending[k+1:]...)
					rec := Task{ID: done, Name: "job", Status: statuses[rng.Intn(3)], Command: []string{"true"}, FinishedAt: fsstore.TimeOf(t0.Add(time.Duration(step) * time.Minute))}
					line, _ := json.Marshal(rec)
					lines = append(lines, line)
					ids = append(ids, done)
					if rng.Intn(15) == 0 {
						// Finished again after a crash: the later line is the record.
						rec.Status = Lost
						again, _ := json.Marshal(rec)
						lines = append(lines, again)
					}
					if rng.Intn(20) == 0 {
						old, _ := json.Marshal(map[string]string{"task_id": done, "name": "old", "status": Succeeded})
						lines = append(lines, old)
					}
				}
				size := appendLog(t, s, lines...)
				switch r := rng.Intn(40); {
				case r == 0:
					os.Remove(s.finishedIndexPath())
				case r == 1:
					// A torn last line of the index.
					if fi, err := os.Stat(s.finishedIndexPath()); err == nil && fi.Size() > 5 {
						os.Truncate(s.finishedIndexPath(), fi.Size()-5)
					}
				case r == 2:
					// A prune rewrote the log.
					gone := map[string]bool{ids[rng.Intn(len(ids))]: true, ids[rng.Intn(len(ids))]: true}
					if err := s.dropFinished(gone); err != nil {
						t.Fatal(err)
					}
					fi, _ := os.Stat(s.finishedPath())
					size = fi.Size()
				}
				if rng.Intn(3) > 0 {
					s.extendIndex(size, false)
				}
				if step%50 != 49 {
					continue
				}
				probe := append(ids, "20260101_000000_nosuch")
				if len(pending) > 0 {
					probe = append(probe, pending[0])
				}
				records := scanRecords(t, s)
				for _, id := range probe {
					want := records[id]
					got, err := s.finishedRecord(id)
					if err != nil || statusOf(got) != statusOf(want) {
						t.Fatalf("step %d: finishedRecord(%s) = %s, %v; want %s", step, id, statusOf(got), err, statusOf(want))
					}
				}
			}
			// A current index finds every task itself.
			fi, _ := os.Stat(s.finishedPath())
			s.extendIndex(fi.Size(), false)
			f, size, err := fsstore.OpenSized(s.finishedPath())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if blocks, covered, whole := s.loadIndex(size, ""); !whole || len(blocks) < 10 || size-covered >= finishedIndexBlock {
				t.Fatalf("index of %d blocks, whole=%v, ends at %d of %d", len(blocks), whole, covered, size)
			}
			records := scanRecords(t, s)
			for _, id := range ids {
				want := records[id]
				quoted, _ := json.Marshal(id)
				got, err := s.indexedRecord(f, size, id, append(append([]byte(`{"id":`), quoted...), ','))
				if err != nil || statusOf(got) != statusOf(want) {
					t.Fatalf("indexedRecord(%s) = %s, %v; want %s", id, statusOf(got), err, statusOf(want))
				}
			}
		})
	}
}

// TestFinishExtendsIndex: Finish keeps the index current, and Get and
// Resolve of an old finished task find it; a prune drops the index and
// the next Finish writes it again, whole.
func TestFinishExtendsIndex(t *testing.T) {
	smallBlocks(t, 2000)
	s, clock, _ := newTestTaskStore(t)
	var ids []string
	for i := range 40 {
		clock.Advance(time.Minute)
		id := fmt.Sprintf("t%03d", i)
		mustCreateTask(t, s, id, "job")
		mustFinishTask(t, s, id, Succeeded, intp(0))
		ids = append(ids, id)
	}
	fi, err := os.Stat(s.finishedPath())
	if err != nil {
		t.Fatal(err)
	}
	blocks, covered, whole := s.loadIndex(fi.Size(), "")
	if !whole || len(blocks) < 3 || fi.Size()-covered >= finishedIndexBlock {
		t.Fatalf("after 40 tasks: index of %d blocks, whole=%v, ends at %d of %d", len(blocks), whole, covered, fi.Size())
	}
	if got, err := s.Resolve(ids[0]); err != nil || got != ids[0] {
		t.Fatalf("Resolve(%s) = %s, %v", ids[0], got, err)
	}
	if got, err := s.Get(ids[0]); err != nil || got.Status != Succeeded {
		t.Fatalf("Get(%s) = %+v, %v", ids[0], got, err)
	}
	clock.Advance(48 * time.Hour)
	if _, err := s.Prune(PruneOptions{Before: clock.Now().Add(-time.Hour), KeepLast: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.finishedIndexPath()); !os.IsNotExist(err) {
		t.Fatalf("index after a prune: %v, want removed", err)
	}
	if _, err := s.Get(ids[0]); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("Get(%s) after its prune: %v, want not found", ids[0], err)
	}
	mustCreateTask(t, s, "t999", "job")
	mustFinishTask(t, s, "t999", Succeeded, intp(0))
	fi, _ = os.Stat(s.finishedPath())
	if blocks, _, whole := s.loadIndex(fi.Size(), ""); !whole || len(blocks) == 0 {
		t.Fatalf("after a prune and a Finish: index of %d blocks, whole=%v", len(blocks), whole)
	}
	for _, id := range ids[10:] {
		if got, err := s.Get(id); err != nil || got.ID != id {
			t.Fatalf("Get(%s) = %+v, %v", id, got, err)
		}
	}
}

// TestTornIndex: an index whose last line is torn, or that names blocks
// the log no longer has, answers nothing wrong, and the next lookup writes
// it again whole.
func TestTornIndex(t *testing.T) {
	smallBlocks(t, 1000)
	s, clock, _ := newTestTaskStore(t)
	for i := range 30 {
		clock.Advance(time.Minute)
		id := fmt.Sprintf("t%03d", i)
		mustCreateTask(t, s, id, "job")
		mustFinishTask(t, s, id, Succeeded, intp(0))
	}
	idx, err := os.ReadFile(s.finishedIndexPath())
	if err != nil {
		t.Fatal(err)
	}
	for name, damaged := range map[string][]byte{
		"torn":    idx[:len(idx)-7],
		"garbage": append(append([]byte{}, idx...), "1\t2"...),
		"shifted": []byte("0\t900\tt001\tt000\tt999\n"),
		// Its last line whole, an earlier one gone (removed by a lookup
		// while a Finish appended to it).
		"headless": idx[bytes.IndexByte(idx, '\n')+1:],
	} {
		if err := os.WriteFile(s.finishedIndexPath(), damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		// Behind by more than a few blocks, so the lookup rewrites it.
		smallBlocks(t, 200)
		for i := range 30 {
			id := fmt.Sprintf("t%03d", i)
			if got, err := s.Get(id); err != nil || got.ID != id || got.Status != Succeeded {
				t.Fatalf("%s index: Get(%s) = %+v, %v", name, id, got, err)
			}
		}
		fi, _ := os.Stat(s.finishedPath())
		if blocks, _, whole := s.loadIndex(fi.Size(), ""); !whole || len(blocks) < 3 {
			t.Fatalf("%s index: after lookups it has %d blocks, whole=%v", name, len(blocks), whole)
		}
		smallBlocks(t, 1000)
	}
}
