package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// smallBlocks cuts the finished log into blocks of about n bytes for the
// test.
func smallBlocks(s *Store, n int64) { s.indexBlock = n }

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
	for seed := range int64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewSource(seed))
			s, _, _ := newTestTaskStore(t)
			smallBlocks(s, 700)
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
			// A current index finds every task itself,
			fi, _ := os.Stat(s.finishedPath())
			s.extendIndex(fi.Size(), false)
			f, size, err := fsstore.OpenSized(s.finishedPath())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if blocks, covered, whole := s.loadIndex(size, "", ""); !whole || len(blocks) < 10 || size-covered >= finishedIndexBlock {
				t.Fatalf("index of %d blocks, whole=%v, ends at %d of %d", len(blocks), whole, covered, size)
			}
			records := scanRecords(t, s)
			// And answers for a miss without reading the log.
			for _, id := range append(ids, "20260101_000000_nosuch", ids[0][:len(ids[0])-1]+"z") {
				want := records[id]
				quoted, _ := json.Marshal(id)
				got, sure, err := s.indexedRecord(f, size, id, append(append([]byte(`{"id":`), quoted...), ','))
				if err != nil || !sure || statusOf(got) != statusOf(want) {
					t.Fatalf("indexedRecord(%s) = %s, sure=%v, %v; want %s, sure", id, statusOf(got), sure, err, statusOf(want))
				}
			}
		})
	}
}

// TestFinishExtendsIndex: Finish keeps the index current, and Get and
// Resolve of an old finished task find it; a prune drops the index and
// the next Finish writes it again, whole.
func TestFinishExtendsIndex(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	smallBlocks(s, 2000)
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
	blocks, covered, whole := s.loadIndex(fi.Size(), "", "")
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
	if blocks, _, whole := s.loadIndex(fi.Size(), "", ""); !whole || len(blocks) == 0 {
		t.Fatalf("after a prune and a Finish: index of %d blocks, whole=%v", len(blocks), whole)
	}
	for _, id := range ids[10:] {
		if got, err := s.Get(id); err != nil || got.ID != id {
			t.Fatalf("Get(%s) = %+v, %v", id, got, err)
		}
	}
}

// thirtyFinished returns a store of 30 tasks, t000 to t029, finished a
// minute apart, whose finished log is cut into blocks of 1,000 bytes.
func thirtyFinished(t *testing.T) *Store {
	t.Helper()
	s, clock, _ := newTestTaskStore(t)
	smallBlocks(s, 1000)
	for i := range 30 {
		clock.Advance(time.Minute)
		id := fmt.Sprintf("t%03d", i)
		mustCreateTask(t, s, id, "job")
		mustFinishTask(t, s, id, Succeeded, intp(0))
	}
	return s
}

// TestTornIndex: an index whose last line is torn, or that names blocks
// the log no longer has, answers nothing wrong, and the next lookup writes
// it again whole.
func TestTornIndex(t *testing.T) {
	s := thirtyFinished(t)
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
		smallBlocks(s, 200)
		for i := range 30 {
			id := fmt.Sprintf("t%03d", i)
			if got, err := s.Get(id); err != nil || got.ID != id || got.Status != Succeeded {
				t.Fatalf("%s index: Get(%s) = %+v, %v", name, id, got, err)
			}
		}
		fi, _ := os.Stat(s.finishedPath())
		if blocks, _, whole := s.loadIndex(fi.Size(), "", ""); !whole || len(blocks) < 3 {
			t.Fatalf("%s index: after lookups it has %d blocks, whole=%v", name, len(blocks), whole)
		}
		smallBlocks(s, 1000)
	}
}

// slowResolve is Resolve as it was before the finished index answered for
// prefixes and misses, kept as the oracle: the log read backwards for an
// exact id, every id (ids, which IDs returned) for a prefix.
func slowResolve(s *Store, ids []string, ref string) (string, error) {
	if err := fsstore.CheckID("task id", ref); err != nil {
		return "", err
	}
	if _, err := os.Lstat(s.docPath(ref)); err == nil {
		return ref, nil
	}
	if f, size, err := fsstore.OpenSized(s.finishedPath()); err != nil {
		return "", err
	} else if f != nil {
		defer f.Close()
		quoted, _ := json.Marshal(ref)
		prefix := append(append([]byte(`{"id":`), quoted...), ',')
		var found *Task
		if err := fsstore.EachLineBackward(f, size, func(line []byte, _ int64) bool {
			found = recordOf(line, ref, prefix)
			return found == nil
		}); err != nil {
			return "", err
		}
		if found != nil {
			return ref, nil
		}
	}
	if slices.Contains(ids, ref) {
		return ref, nil
	}
	switch matches := fsstore.WithPrefix(ids, ref); len(matches) {
	case 0:
		return "", fsstore.NotFoundf("no task with id or id prefix %q", ref)
	case 1:
		return matches[0], nil
	default:
		return "", fsstore.Ambiguous(ref, matches)
	}
}

func resolved(id string, err error) string {
	if err != nil {
		kind := "error"
		for _, k := range []error{fsstore.ErrNotFound, fsstore.ErrInvalid} {
			if errors.Is(err, k) {
				kind = k.Error()
			}
		}
		return kind + ": " + err.Error()
	}
	return id
}

// TestResolveProperty: on generated logs (tasks finishing out of the order
// of their ids, long tasks that widen a block's range, tasks finished
// twice, older short entries, ids that JSON escapes, record files of
// running tasks, the index missing, torn, shifted, of another log, or
// behind), Resolve of prefixes of ids (unique and ambiguous) and of ids no
// task has answers as the slow path does; and with a current index it
// answers a prefix without reading the log.
func TestResolveProperty(t *testing.T) {
	for seed := range int64(storetest.Seeds(6)) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewSource(seed))
			s, _, _ := newTestTaskStore(t)
			smallBlocks(s, 400+rng.Int63n(600))
			if err := s.ensureDirs(); err != nil {
				t.Fatal(err)
			}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var ids, pending []string
			statuses := []string{Succeeded, Failed, Lost}
			refs := func() []string {
				var refs []string
				for range 40 {
					id := ids[rng.Intn(len(ids))]
					refs = append(refs, id[:1+rng.Intn(len(id))])
				}
				for range 15 {
					id := ids[rng.Intn(len(ids))]
					refs = append(refs, id[:len(id)-1]+"z", id+"0", id[:rng.Intn(len(id))]+"9")
				}
				return append(refs, "1", "3", "2026", "20260101_0", "2026&", "\u00e9t\u00e9")
			}
			for step := range 400 {
				id := fsstore.NewID(t0.Add(time.Duration(step) * time.Minute))
				if rng.Intn(25) == 0 {
					id += []string{"&x", "<y>", `"q`, "\u2028"}[rng.Intn(4)]
				}
				pending = append(pending, id)
				if rng.Intn(10) == 0 {
					// A running task's record file.
					b, _ := json.Marshal(Task{ID: id, Status: Running})
					if err := os.WriteFile(s.docPath(id), b, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				var lines [][]byte
				for len(pending) > 0 && rng.Intn(10) < 8 {
					k := len(pending) - 1
					if rng.Intn(6) == 0 {
						k = rng.Intn(len(pending))
					}
					done := pending[k]
					pending = append(pending[:k], pending[k+1:]...)
					os.Remove(s.docPath(done))
					rec := Task{ID: done, Name: "job", Status: statuses[rng.Intn(3)], Command: []string{"true"}, FinishedAt: fsstore.TimeOf(t0.Add(time.Duration(step) * time.Minute))}
					line, _ := json.Marshal(rec)
					lines = append(lines, line)
					ids = append(ids, done)
					if rng.Intn(15) == 0 {
						rec.Status = Lost
						again, _ := json.Marshal(rec)
						lines = append(lines, again)
					}
					if rng.Intn(20) == 0 {
						// An older short entry after the record: IDs leaves the
						// task out, an exact lookup finds its record.
						old, _ := json.Marshal(map[string]string{"task_id": done, "name": "old", "status": Succeeded})
						lines = append(lines, old)
					}
				}
				if len(lines) == 0 {
					continue
				}
				size := appendLog(t, s, lines...)
				idx, _ := os.ReadFile(s.finishedIndexPath())
				switch r := rng.Intn(40); {
				case r == 0:
					os.Remove(s.finishedIndexPath())
				case r == 1 && len(idx) > 5:
					// A torn last line.
					os.WriteFile(s.finishedIndexPath(), idx[:len(idx)-5], 0o600)
				case r == 2 && len(idx) > 0:
					// The last block's end shifted off its line's end.
					i := bytes.LastIndexByte(idx[:len(idx)-1], '\n') + 1
					var f [5][]byte
					off, end, _ := parseBlock(idx[i:len(idx)-1], &f)
					blk := indexBlock{Off: off, End: end + 1, First: string(f[2]), Min: string(f[3]), Max: string(f[4])}
					os.WriteFile(s.finishedIndexPath(), blk.appendTo(append([]byte{}, idx[:i]...)), 0o600)
				case r == 3 && len(idx) > 0:
					// A prune rewrote the log, and the index of the log before
					// it came back (restored from a backup with the profile).
					gone := map[string]bool{ids[rng.Intn(len(ids))]: true, ids[rng.Intn(len(ids))]: true}
					if err := s.dropFinished(gone); err != nil {
						t.Fatal(err)
					}
					os.WriteFile(s.finishedIndexPath(), idx, 0o600)
					fi, _ := os.Stat(s.finishedPath())
					size = fi.Size()
				}
				if rng.Intn(3) > 0 {
					s.extendIndex(size, false)
				}
				if step%40 != 39 {
					continue
				}
				all, err := s.IDs()
				if err != nil {
					t.Fatal(err)
				}
				for _, ref := range refs() {
					want := resolved(slowResolve(s, all, ref))
					if got := resolved(s.Resolve(ref)); got != want {
						t.Fatalf("step %d: Resolve(%q) = %s; want %s", step, ref, got, want)
					}
				}
			}
			// An index made now, whatever the last lookups left.
			os.Remove(s.finishedIndexPath())
			fi, _ := os.Stat(s.finishedPath())
			s.extendIndex(fi.Size(), true)
			all, err := s.IDs()
			if err != nil {
				t.Fatal(err)
			}
			for _, ref := range refs() {
				want := resolved(slowResolve(s, all, ref))
				if _, ok, err := s.finishedWithPrefix(ref); !ok || err != nil {
					t.Fatalf("finishedWithPrefix(%q) with a current index: ok=%v, %v", ref, ok, err)
				}
				if got := resolved(s.Resolve(ref)); got != want {
					t.Fatalf("current index: Resolve(%q) = %s; want %s", ref, got, want)
				}
			}
		})
	}
}

// TestResolveShiftedIndex: an index whose last block ends a byte into a
// line (made of another log) answers no miss for the task of that line,
// exact or by prefix, and a Finish then writes it again whole rather than
// extending it from there.
func TestResolveShiftedIndex(t *testing.T) {
	s := thirtyFinished(t)
	// A line after the last block.
	smallBlocks(s, 1<<20)
	mustCreateTask(t, s, "t100", "job")
	mustFinishTask(t, s, "t100", Succeeded, intp(0))
	idx, err := os.ReadFile(s.finishedIndexPath())
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(idx[:len(idx)-1], '\n') + 1
	var f [5][]byte
	off, end, ok := parseBlock(idx[i:len(idx)-1], &f)
	if !ok {
		t.Fatalf("index line %q", idx[i:])
	}
	log, err := os.ReadFile(s.finishedPath())
	if err != nil {
		t.Fatal(err)
	}
	cut, _ := lineTaskID(log[end:])
	id := string(cut)
	shifted := indexBlock{Off: off, End: end + 1, First: string(f[2]), Min: string(f[3]), Max: string(f[4])}
	for _, ref := range []string{id, id[:len(id)-1]} {
		if err := os.WriteFile(s.finishedIndexPath(), shifted.appendTo(append([]byte{}, idx[:i]...)), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Resolve(ref); err != nil || got != id {
			t.Fatalf("Resolve(%s) through a shifted index = %s, %v; want %s", ref, got, err, id)
		}
	}
	if err := os.WriteFile(s.finishedIndexPath(), shifted.appendTo(append([]byte{}, idx[:i]...)), 0o600); err != nil {
		t.Fatal(err)
	}
	smallBlocks(s, 200)
	mustCreateTask(t, s, "t999", "job")
	mustFinishTask(t, s, "t999", Succeeded, intp(0))
	fi, _ := os.Stat(s.finishedPath())
	blocks, covered, whole := s.loadIndex(fi.Size(), id, id+"\x00")
	if !whole || covered == 0 || len(blocks) == 0 {
		t.Fatalf("after a Finish: index whole=%v, ends at %d, %d blocks hold %s; want it made again", whole, covered, len(blocks), id)
	}
}

// TestIndexOfRewrittenLog: a lookup that opened the finished log before a
// prune renamed another over it, and then loads the new log's index, does
// not take a miss through it for an answer, even where the index's blocks
// check out in the old file: here every line has one length and the block
// it reads starts with a task finished twice, so the old file's lines,
// one line later than the new log's, pass the checks, and the task it is
// after lies just past the block.
func TestIndexOfRewrittenLog(t *testing.T) {
	s, _, _ := newTestTaskStore(t)
	if err := s.ensureDirs(); err != nil {
		t.Fatal(err)
	}
	line := func(id string) []byte {
		b, _ := json.Marshal(Task{ID: id, Name: "job", Status: Succeeded})
		return b
	}
	// Old log: t00 t01 t02 t03 | t04 t04 t05 t06 | t07 t08 t09 t10 | t11;
	// without t00, blocks of four lines put t07 last in the second.
	var lines [][]byte
	for _, id := range []string{"t00", "t01", "t02", "t03", "t04", "t04", "t05", "t06", "t07", "t08", "t09", "t10", "t11"} {
		lines = append(lines, line(id))
	}
	smallBlocks(s, 4*int64(len(lines[0])+1))
	appendLog(t, s, lines...)
	f, size, err := fsstore.OpenSized(s.finishedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.dropFinished(map[string]bool{"t00": true}); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(s.finishedPath())
	s.extendIndex(fi.Size(), false)
	if blocks, covered, whole := s.loadIndex(fi.Size(), "t07", "t07\x00"); !whole || covered != fi.Size() || len(blocks) != 1 || blocks[0].First != "t04" {
		t.Fatalf("index of the new log: %+v, ends at %d of %d, whole=%v", blocks, covered, fi.Size(), whole)
	}
	got, sure, err := s.indexedRecord(f, size, "t07", []byte(`{"id":"t07",`))
	if err != nil || got != nil || sure {
		t.Fatalf("indexedRecord(t07) in the old log = %s, sure=%v, %v; want none, not sure", statusOf(got), sure, err)
	}
}
