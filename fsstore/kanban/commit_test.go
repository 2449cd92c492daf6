package kanban

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// faults are the steps of a change that a full disk can fail: the temp
// file of the document, and the append to a log.
var faults = []struct {
	name   string
	inject func(t *testing.T)
}{
	{"document", func(t *testing.T) {
		storetest.SetSeams(t, func(string, string) (*os.File, error) { return nil, storetest.ErrInjected }, nil, nil)
	}},
	{"log append", func(t *testing.T) {
		storetest.SetWrite(t, func(*os.File, []byte) (int, error) { return 0, storetest.ErrInjected })
	}},
}

// A create that fails at any step leaves nothing: no task, no open marker,
// no events log. A create with parents is the same one commit: the
// parents are in the new task's document, and no other document names
// them.
func TestKanbanCreateFailureLeavesNothing(t *testing.T) {
	for _, fault := range faults {
		for _, parents := range [][]string{nil, {"t0"}} {
			t.Run(fmt.Sprintf("%s parents %v", fault.name, parents), func(t *testing.T) {
				b, _, _ := kbBoard(t)
				kbCreate(t, b, Task{ID: "t0", Title: "there before"})
				before := kbRead(t, b.docPath("t0"))
				fault.inject(t)
				if _, err := b.Create(Task{ID: "t1", Title: "x", Parents: parents}); !errors.Is(err, storetest.ErrInjected) {
					t.Fatalf("create: %v, want the injected fault", err)
				}
				for _, path := range []string{b.docPath("t1"), b.eventsPath("t1"), filepath.Join(b.openDir(), "t1")} {
					if kbExists(path) {
						t.Errorf("a failed create left %s", path)
					}
				}
				if ids, _ := b.OpenIDs(); len(ids) != 1 || ids[0] != "t0" {
					t.Errorf("open tasks %v, want only t0", ids)
				}
				if !bytes.Equal(kbRead(t, b.docPath("t0")), before) {
					t.Errorf("a failed create changed its parent")
				}
			})
		}
	}
}

// A change that fails at any step leaves the task and its events as they
// were.
func TestKanbanUpdateFailureLeavesNothing(t *testing.T) {
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			b, clock, _ := kbBoard(t)
			kbCreate(t, b, Task{ID: "t1", Title: "x"})
			doc, events := kbRead(t, b.docPath("t1")), kbRead(t, b.eventsPath("t1"))
			fault.inject(t)
			clock.Advance(time.Second)
			for _, change := range []func() error{
				func() error { _, err := b.Complete("t1", nil, "done"); return err },
				func() error { _, _, err := b.Block("t1", nil, "why"); return err },
				func() error { _, err := b.Archive("t1"); return err },
				func() error { _, err := b.Claim("t1", time.Minute, "default", nil); return err },
			} {
				if err := change(); !errors.Is(err, storetest.ErrInjected) {
					t.Fatalf("change: %v, want the injected fault", err)
				}
				if got := kbRead(t, b.eventsPath("t1")); !bytes.Equal(got, events) {
					t.Fatalf("a failed change left events:\n%s", got)
				}
				if got := kbRead(t, b.docPath("t1")); !bytes.Equal(got, doc) {
					t.Fatalf("a failed change rewrote the document:\n%s", got)
				}
			}
			if ids, _ := b.OpenIDs(); len(ids) != 1 {
				t.Errorf("open markers %v", ids)
			}
		})
	}
}

// A comment is one write, to the comments log; it reads back as a
// "commented" event in its place.
func TestKanbanCommentWritesOneFile(t *testing.T) {
	b, clock, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "t1", Title: "x"})
	events := kbRead(t, b.eventsPath("t1"))
	clock.Advance(time.Second)
	if _, err := b.AddComment("t1", "ann", "hello"); err != nil {
		t.Fatal(err)
	}
	if got := kbRead(t, b.eventsPath("t1")); !bytes.Equal(got, events) {
		t.Fatalf("a comment wrote to the events log:\n%s", got)
	}
	got, err := b.Events("t1")
	if err != nil || len(got) != 2 || got[1].Type != EventCommented || got[1].Detail != "ann" || got[1].TS != fsstore.TimeOf(clock.Now()) {
		t.Fatalf("events %+v, %v", got, err)
	}
}

// kbPhantomEvent appends to task id's events log, a second on, the event
// of a change a crash cut off before its document, and returns its line.
func kbPhantomEvent(t *testing.T, b *Board, clock *storetest.Clock, id string) string {
	t.Helper()
	clock.Advance(time.Second)
	phantom := `{"ts":"` + string(fsstore.TimeOf(clock.Now())) + `","type":"completed","detail":"never happened"}` + "\n"
	f, err := os.OpenFile(b.eventsPath(id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(phantom); err != nil {
		t.Fatal(err)
	}
	return phantom
}

// A crash between a change's events and its document leaves events later
// than the document: readers skip them, and the next change, once the
// document has stayed as read through the stale-view window (re-read every
// poll), moves them aside before it appends its own. A create that crashed
// before its document leaves an events log that the next create of that
// id moves aside.
func TestKanbanUncommittedEvents(t *testing.T) {
	t.Parallel()
	b, clock, w := kbBoard(t)
	b.Shared = func() bool { return true }
	var slept time.Duration
	b.Sleep = func(d time.Duration) { slept += d; clock.Sleep(d) }
	docReads := 0
	storetest.SetReadFile(t, func(path string) ([]byte, error) {
		if path == b.docPath("t1") {
			docReads++
		}
		return os.ReadFile(path)
	})
	kbCreate(t, b, Task{ID: "t1", Title: "x"})
	phantom := kbPhantomEvent(t, b, clock, "t1")
	if got, _ := b.Events("t1"); len(got) != 1 || got[0].Type != EventCreated {
		t.Fatalf("events with an uncommitted one: %+v", got)
	}
	aside := b.eventsPath("t1") + fmt.Sprintf(".uncommitted-%d", clock.Advance(time.Second).Unix())
	docReads = 0
	if _, err := b.Update("t1", func(*Task, time.Time) ([]Event, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if slept != staleWindow || docReads != 1+int(staleWindow/stalePoll) {
		t.Fatalf("before the move: slept %v and read the document %d times, want %v and %d", slept, docReads, staleWindow, 1+staleWindow/stalePoll)
	}
	if got := string(kbRead(t, aside)); got != phantom {
		t.Fatalf("moved aside %q, want %q", got, phantom)
	}
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], aside) {
		t.Fatalf("warnings %v", ws)
	}
	if got, _ := b.Events("t1"); len(got) != 1 {
		t.Fatalf("events after the move: %+v", got)
	}

	// An events log without a document: a create that crashed.
	orphan := `{"ts":"2026-01-01T00:00:00.000000Z","type":"created","detail":"ready"}` + "\n"
	if err := os.WriteFile(b.eventsPath("t2"), []byte(orphan), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Events("t2"); err != nil || len(got) != 0 {
		t.Fatalf("events of a task never made: %+v, %v", got, err)
	}
	created := clock.Advance(time.Second)
	kbCreate(t, b, Task{ID: "t2", Title: "y"})
	if got, _ := b.Events("t2"); len(got) != 1 || got[0].TS != fsstore.TimeOf(created) {
		t.Fatalf("events of the new task: %+v", got)
	}
	if got := string(kbRead(t, b.eventsPath("t2")+fmt.Sprintf(".uncommitted-%d", created.Unix()))); got != orphan {
		t.Fatalf("the orphan moved aside: %q", got)
	}
}

// Two hosts share a board on a filesystem whose client caches can show a
// document as it was before another host replaced it, even under the
// task's lock. Host 1 claims a task; host 2's claim reads the document as
// it was before that claim (ready), and goes on reading it so for a while.
// The claim is refused, and nothing is written: the document still holds
// run 1, the events log still holds run 1's claimed event and nothing of
// run 2.
func TestKanbanClaimOnStaleRead(t *testing.T) {
	t.Parallel()
	for _, staleReads := range []int{1, int(staleWindow / stalePoll)} {
		t.Run(fmt.Sprintf("%d stale reads", staleReads), func(t *testing.T) {
			host1, clock, _ := kbBoard(t)
			host1.Host = "host1"
			host1.Shared = func() bool { return true }
			kbCreate(t, host1, Task{ID: "t1", Title: "x"})
			before := kbRead(t, host1.docPath("t1"))
			clock.Advance(time.Second)
			p, err := host1.ClaimPending("t1", time.Minute, "default", nil)
			if err != nil {
				t.Fatal(err)
			}
			p.Keep()
			run1 := p.Task.CurrentRunID
			doc, events := kbRead(t, host1.docPath("t1")), kbRead(t, host1.eventsPath("t1"))

			host2 := *host1
			host2.Host = "host2"
			reads := 0
			storetest.SetReadFile(t, func(path string) ([]byte, error) {
				if path == host2.docPath("t1") && reads < staleReads {
					reads++
					return before, nil
				}
				return os.ReadFile(path)
			})
			clock.Advance(time.Second)
			if _, err := host2.ClaimPending("t1", time.Minute, "default", nil); !errors.Is(err, fsstore.ErrRefused) || !strings.Contains(err.Error(), "is running and cannot be claimed") {
				t.Fatalf("claim on a stale read: %v, want refused: the task is running", err)
			}
			if got := kbRead(t, host1.docPath("t1")); !bytes.Equal(got, doc) {
				t.Fatalf("the refused claim rewrote the document:\n%s\nwant\n%s", got, doc)
			}
			if got := kbRead(t, host1.eventsPath("t1")); !bytes.Equal(got, events) {
				t.Fatalf("the refused claim changed the events log:\n%s\nwant\n%s", got, events)
			}
			if names := storetest.DirNames(t, host1.tasksDir()); len(names) != 4 {
				t.Fatalf("files beside the task: %v", names)
			}
			got, err := host1.Get("t1")
			if err != nil || got.Status != Running || len(got.Runs) != 1 || got.CurrentRunID != run1 || got.Runs[0].Host != "host1" {
				t.Fatalf("after the refused claim: %+v, %v", got, err)
			}
			if evs, _ := host1.Events("t1"); len(evs) != 2 || evs[1].Type != EventClaimed || evs[1].RunID != run1 {
				t.Fatalf("events after the refused claim: %+v", evs)
			}
		})
	}
}

// On a local filesystem a read is never a stale view: the events a crash
// left later than the document are moved aside at once, with no window.
func TestKanbanUncommittedEventsLocal(t *testing.T) {
	b, clock, _ := kbBoard(t)
	if _, shared := fsstore.NetworkFS(b.Dir); shared {
		t.Skip("the test directory is on a network filesystem: TMPDIR=/tmp (a local disk) go test ./fsstore/kanban/ runs it")
	}
	var slept time.Duration
	b.Sleep = func(d time.Duration) { slept += d }
	kbCreate(t, b, Task{ID: "t1", Title: "x"})
	phantom := kbPhantomEvent(t, b, clock, "t1")
	aside := b.eventsPath("t1") + fmt.Sprintf(".uncommitted-%d", clock.Advance(time.Second).Unix())
	if _, err := b.Update("t1", func(*Task, time.Time) ([]Event, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if slept != 0 {
		t.Fatalf("waited %v on a local filesystem", slept)
	}
	if got := string(kbRead(t, aside)); got != phantom {
		t.Fatalf("moved aside %q, want %q", got, phantom)
	}
}

// A change other than a claim whose read under the lock was a stale view
// is decided again on the document the window then saw: another host made
// the task ready, and an archive from here archives the ready task, both
// changes in its events, none moved aside.
func TestKanbanChangeOnStaleReadAppliesToFresh(t *testing.T) {
	t.Parallel()
	host1, clock, _ := kbBoard(t)
	host1.Shared = func() bool { return true }
	kbCreate(t, host1, Task{ID: "t1", Title: "x", Status: Todo})
	before := kbRead(t, host1.docPath("t1"))
	clock.Advance(time.Second)
	if _, err := host1.Ready("t1"); err != nil {
		t.Fatal(err)
	}
	host2 := *host1
	stale := true
	storetest.SetReadFile(t, func(path string) ([]byte, error) {
		if path == host2.docPath("t1") && stale {
			stale = false
			return before, nil
		}
		return os.ReadFile(path)
	})
	clock.Advance(time.Second)
	got, err := host2.Archive("t1")
	if err != nil || got.Status != Archived {
		t.Fatalf("archive on a stale read: %+v, %v", got, err)
	}
	evs, err := host1.Events("t1")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, string(ev.Type))
	}
	if strings.Join(types, " ") != "created readied archived" {
		t.Fatalf("events %v, want created readied archived", types)
	}
	for _, name := range storetest.DirNames(t, host1.tasksDir()) {
		if strings.Contains(name, ".uncommitted-") {
			t.Fatalf("events moved aside: %s", name)
		}
	}
}

// A create whose read under the lock does not yet see the task another
// host created finds it made: the stored task, unchanged, and its events.
func TestKanbanCreateOnStaleRead(t *testing.T) {
	t.Parallel()
	host1, clock, _ := kbBoard(t)
	host1.Shared = func() bool { return true }
	kbCreate(t, host1, Task{ID: "t1", Title: "first"})
	doc, events := kbRead(t, host1.docPath("t1")), kbRead(t, host1.eventsPath("t1"))
	host2 := *host1
	stale := true
	storetest.SetReadFile(t, func(path string) ([]byte, error) {
		if path == host2.docPath("t1") && stale {
			stale = false
			return nil, os.ErrNotExist
		}
		return os.ReadFile(path)
	})
	clock.Advance(time.Second)
	got, err := host2.Create(Task{ID: "t1", Title: "second"})
	if err != nil || got.Title != "first" {
		t.Fatalf("create on a stale read: %+v, %v", got, err)
	}
	if got := kbRead(t, host1.docPath("t1")); !bytes.Equal(got, doc) {
		t.Fatalf("the create rewrote the document:\n%s", got)
	}
	if got := kbRead(t, host1.eventsPath("t1")); !bytes.Equal(got, events) {
		t.Fatalf("the create changed the events log:\n%s", got)
	}
	if ids, _ := host1.OpenIDs(); len(ids) != 1 || ids[0] != "t1" {
		t.Fatalf("open tasks %v", ids)
	}
}

// A pending claim that is undone leaves the task as it was before, byte
// for byte, even when no document can be written any more (a full disk):
// the previous document comes back by a rename. Kept, the claim stands.
// Undone after the task changed, the claim stands and Undo says so.
func TestKanbanClaimPending(t *testing.T) {
	t.Parallel()
	b, clock, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "t1", Title: "x"})
	doc, events := kbRead(t, b.docPath("t1")), kbRead(t, b.eventsPath("t1"))
	clock.Advance(time.Second)
	p, err := b.ClaimPending("t1", time.Minute, "default", nil)
	if err != nil || p.Task.Status != Running || p.Task.CurrentRun() == nil {
		t.Fatalf("claim: %+v, %v", p, err)
	}
	faults[0].inject(t)
	if err := b.FailRun("t1", p.Task.CurrentRunID, OutcomeSpawnFailed, "no worker", nil, ""); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("the failed start could be stored: %v", err)
	}
	if err := p.Undo(); err != nil {
		t.Fatal(err)
	}
	if got := kbRead(t, b.docPath("t1")); !bytes.Equal(got, doc) {
		t.Fatalf("after the undo the document is\n%s\nwant\n%s", got, doc)
	}
	if got := kbRead(t, b.eventsPath("t1")); !bytes.Equal(got, events) {
		t.Fatalf("after the undo the events are\n%s\nwant\n%s", got, events)
	}
	if names := strings.Join(storetest.DirNames(t, b.tasksDir()), " "); strings.Contains(names, "undo") {
		t.Fatalf("the kept document stays: %s", names)
	}

	storetest.SetSeams(t, os.CreateTemp, nil, nil)
	clock.Advance(time.Second)
	p, err = b.ClaimPending("t1", time.Minute, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Keep()
	if got, _ := b.Get("t1"); got.Status != Running || len(got.Runs) != 1 {
		t.Fatalf("a kept claim: %+v", got)
	}
	if names := strings.Join(storetest.DirNames(t, b.tasksDir()), " "); strings.Contains(names, "undo") {
		t.Fatalf("the kept document stays: %s", names)
	}

	kbCreate(t, b, Task{ID: "t2", Title: "y"})
	p, err = b.ClaimPending("t2", time.Minute, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if _, err := b.Complete("t2", nil, "done by hand"); err != nil {
		t.Fatal(err)
	}
	if err := p.Undo(); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("undo after a change: %v, want ErrRefused", err)
	}
	if got, _ := b.Get("t2"); got.Status != Done {
		t.Fatalf("the undo of a changed task changed it: %+v", got)
	}
}

// fsck names the events log of a create that crashed before its document
// and, with repair, moves it to lost+found. The logs of a task whose
// document was quarantined stay, beside the copy kept aside.
func TestKanbanCheckOrphanLog(t *testing.T) {
	b, _, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "t1", Title: "x"})
	kbCreate(t, b, Task{ID: "t2", Title: "y"})
	if err := os.Rename(b.docPath("t2"), b.docPath("t2")+".corrupt-1"); err != nil {
		t.Fatal(err)
	}
	orphan := b.eventsPath("t3")
	if err := os.WriteFile(orphan, []byte(`{"ts":"2026-01-01T00:00:00.000000Z","type":"created"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lostFound := filepath.Join(t.TempDir(), "lost+found")
	findings, err := b.Check(false, lostFound)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, f := range findings {
		if f.Problem {
			problems = append(problems, f.Path+": "+f.What)
		}
	}
	if len(problems) != 1 || !strings.Contains(problems[0], orphan+": log of a task that has no document") {
		t.Fatalf("problems %q", problems)
	}
	findings, err = b.Check(true, lostFound)
	if err != nil || len(findings) != 2 || !findings[1].Repaired {
		t.Fatalf("repair: %+v, %v", findings, err)
	}
	if !kbExists(filepath.Join(lostFound, "t3.events.jsonl")) || kbExists(orphan) || !kbExists(b.eventsPath("t2")) {
		t.Fatal("the orphan log was not moved to lost+found, or another was")
	}
}

// A task claimed twice, the second claim's document written over the one
// that held the first run (two hosts that each saw it ready through a
// stale cache): its events log records two committed claims and its
// document one run. fsck reports it, and repair leaves it reported. A
// task claimed, reclaimed, claimed again and completed has one claim a
// run; a claim later than the document (a change never committed) is
// not counted.
func TestKanbanCheckDoubleClaim(t *testing.T) {
	b, clock, _ := kbBoard(t)
	appendEvent := func(id string, ev Event) {
		t.Helper()
		line, _ := json.Marshal(ev)
		f, err := os.OpenFile(b.eventsPath(id), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(id string) Task {
		t.Helper()
		clock.Advance(time.Second)
		task, err := b.Claim(id, time.Minute, "default", nil)
		if err != nil {
			t.Fatal(err)
		}
		return task
	}

	kbCreate(t, b, Task{ID: "twice", Title: "x"})
	first := claim("twice")
	appendEvent("twice", Event{TS: first.UpdatedAt, Type: EventClaimed, RunID: "20260101_000000_lost01"})

	kbCreate(t, b, Task{ID: "clean", Title: "y"})
	run := claim("clean").CurrentRunID
	clock.Advance(time.Second)
	if err := b.Reclaim("clean", run, nil, ""); err != nil {
		t.Fatal(err)
	}
	again := claim("clean")
	w := Worker{Task: "clean", Run: again.CurrentRunID, Claim: again.ClaimLock}
	clock.Advance(time.Second)
	if _, err := b.Complete("clean", &w, "done"); err != nil {
		t.Fatal(err)
	}

	kbCreate(t, b, Task{ID: "uncommitted", Title: "z"})
	claimed := claim("uncommitted")
	later := fsstore.TimeOf(clock.Now().Add(time.Second))
	appendEvent("uncommitted", Event{TS: later, Type: EventClaimed, RunID: "20260101_000000_never1"})
	if !claimed.UpdatedAt.Before(later) {
		t.Fatal("the hand-written claim is not later than the document")
	}

	lostFound := filepath.Join(t.TempDir(), "lost+found")
	for _, repair := range []bool{false, true} {
		findings, err := b.Check(repair, lostFound)
		if err != nil {
			t.Fatal(err)
		}
		var problems []string
		for _, f := range findings {
			if f.Problem && !f.Repaired {
				problems = append(problems, f.Path+": "+f.What)
			}
		}
		want := b.docPath("twice") + ": kanban task twice: its events log records 2 claims, its document holds 1 run"
		if len(problems) != 1 || !strings.HasPrefix(problems[0], want) || !strings.Contains(problems[0], "the events log is the record of what happened") {
			t.Fatalf("repair %v: problems %q, want one starting %q", repair, problems, want)
		}
	}
}
