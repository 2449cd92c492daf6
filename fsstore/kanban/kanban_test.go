package kanban

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// newTestBoard returns a board in a fresh profile directory, with a
// settable clock and its warnings collected.
func kbBoard(t testing.TB) (*Board, *storetest.Clock, *storetest.Warnings) {
	t.Helper()
	w := &storetest.Warnings{}
	clock := storetest.NewClock()
	b := NewBoard(filepath.Join(t.TempDir(), "profiles", "default"), 10*time.Second, w.Add)
	b.Now, b.Sleep, b.Seen.Clock = clock.Now, clock.Sleep, clock.Uptime
	// Retries wait for the clock only in the tests of retries.
	b.RetryBackoff = 0
	return b, clock, w
}

func kbCreate(t *testing.T, b *Board, task Task) Task {
	t.Helper()
	got, err := b.Create(task)
	if err != nil {
		t.Fatalf("create %q: %v", task.ID, err)
	}
	return got
}

func kbRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func kbExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func kbSetStatus(status Status) func(t *Task, now time.Time) ([]Event, error) {
	return func(t *Task, now time.Time) ([]Event, error) {
		t.Status = status
		return []Event{{Type: EventType(status)}}, nil
	}
}

// Creating a task that exists is a no-op that returns the stored task: no
// error, no second "created" event, the document untouched.
func TestKanbanCreateIdempotent(t *testing.T) {
	b, clock, _ := kbBoard(t)
	first := kbCreate(t, b, Task{ID: "t1", Title: "first", Body: "keep me", Priority: 3})
	if first.Status != Ready || first.CreatedAt != fsstore.TimeOf(storetest.Epoch) || first.Runs == nil {
		t.Fatalf("created %+v", first)
	}
	doc := kbRead(t, b.docPath("t1"))
	events := kbRead(t, b.eventsPath("t1"))

	clock.Advance(time.Minute)
	again, err := b.Create(Task{ID: "t1", Title: "second", Status: Todo})
	if err != nil {
		t.Fatalf("second create: %v", err)
	}
	if again.Title != "first" || again.Body != "keep me" || again.Status != Ready || again.CreatedAt != first.CreatedAt {
		t.Fatalf("second create returned %+v, want the stored task", again)
	}
	if got := kbRead(t, b.docPath("t1")); !bytes.Equal(got, doc) {
		t.Fatalf("document rewritten:\n%s\nwant\n%s", got, doc)
	}
	if got := kbRead(t, b.eventsPath("t1")); !bytes.Equal(got, events) {
		t.Fatalf("events changed:\n%s", got)
	}
	// Later writes still work.
	if _, err := b.Update("t1", kbSetStatus(Blocked)); err != nil {
		t.Fatal(err)
	}
	// A new id is time-ordered and readable; a task without a title or
	// with a bad id is refused before anything is written.
	auto := kbCreate(t, b, Task{Title: "auto"})
	if !strings.HasPrefix(auto.ID, clock.Now().Format("20060102_150405")+"_") || len(auto.ID) != 22 {
		t.Fatalf("new id %q", auto.ID)
	}
	for _, bad := range []Task{{ID: "../x", Title: "x"}, {ID: "a/b", Title: "x"}, {ID: ".h", Title: "x"}, {ID: "ok", Title: "  "}} {
		if _, err := b.Create(bad); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("create %+v: %v, want fsstore.ErrInvalid", bad, err)
		}
	}
	if kbExists(b.docPath("ok")) || kbExists(filepath.Join(b.openDir(), "ok")) {
		t.Error("a refused create wrote its task")
	}
}

// Claim is a compare-and-swap: goroutines racing to claim one ready task
// all read it under its lock, and exactly one sees it ready. Each
// contender reports ready before the start signal, so all of them race.
func TestKanbanClaimRaceGoroutines(t *testing.T) {
	b, _, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "t1", Title: "contested"})
	const n = 16
	var ready, done sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			_, errs[i] = b.Claim("t1", time.Minute, fmt.Sprint(i), nil)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if won >= 0 {
				t.Fatalf("claims %d and %d both won", won, i)
			}
			won = i
		case !errors.Is(err, fsstore.ErrRefused):
			t.Fatalf("claim %d: %v, want fsstore.ErrRefused", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no claim won")
	}
	got, err := b.Get("t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 1 || got.Runs[0].Profile != fmt.Sprint(won) || got.ClaimLock == "" || got.Status != Running {
		t.Fatalf("after the race: %+v", got)
	}
	evs, err := b.Events("t1")
	if err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for _, e := range evs {
		if e.Type == EventClaimed {
			claimed++
		}
	}
	if claimed != 1 {
		t.Fatalf("%d claimed events, want 1", claimed)
	}
}

// TestHelperKanbanClaimer is not a test: it is the helper process of
// TestKanbanClaimRaceProcesses. It makes the file $FSSTORE_TEST_LOCK.ready-
// $FSSTORE_TEST_TAG, waits for $FSSTORE_TEST_LOCK to exist, claims task
// $FSSTORE_TEST_ID and prints won or refused.
func TestHelperKanbanClaimer(t *testing.T) {
	if os.Getenv(storetest.HelperRoleEnv) != "kanban-claimer" {
		t.Skip("helper process of TestKanbanClaimRaceProcesses, which runs it")
	}
	b := NewBoard(os.Getenv(storetest.HelperDirEnv), time.Minute, func(msg string) { fmt.Fprintln(os.Stderr, "warning:", msg) })
	if err := os.WriteFile(os.Getenv(storetest.HelperLockEnv)+".ready-"+os.Getenv(storetest.HelperTagEnv), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !kbExists(os.Getenv(storetest.HelperLockEnv)); {
		if time.Now().After(deadline) {
			t.Fatal("no go")
		}
		time.Sleep(time.Millisecond)
	}
	_, err := b.Claim(os.Getenv(storetest.HelperIDEnv), time.Minute, os.Getenv(storetest.HelperTagEnv), nil)
	switch {
	case err == nil:
		fmt.Println("won")
	case errors.Is(err, fsstore.ErrRefused):
		fmt.Println("refused")
	default:
		t.Fatal(err)
	}
}

// The same race between processes: the lock is a flock, so it holds
// across them. The start signal is given once every contender has said it
// is ready.
func TestKanbanClaimRaceProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts processes; go test ./fsstore/kanban/ (without -short) runs it")
	}
	profileDir := filepath.Join(t.TempDir(), "profiles", "default")
	b := NewBoard(profileDir, 10*time.Second, func(string) {})
	kbCreate(t, b, Task{ID: "t1", Title: "contested"})
	goFile := filepath.Join(t.TempDir(), "go")
	const n = 4
	var outs [n]bytes.Buffer
	var cmds []*exec.Cmd
	for i := range n {
		cmd := storetest.HelperCommand(t, "TestHelperKanbanClaimer", storetest.HelperRoleEnv+"=kanban-claimer", storetest.HelperDirEnv+"="+profileDir,
			storetest.HelperIDEnv+"=t1", storetest.HelperTagEnv+"="+fmt.Sprint(i), storetest.HelperLockEnv+"="+goFile)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i := range n {
		for deadline := time.Now().Add(60 * time.Second); !kbExists(goFile + ".ready-" + fmt.Sprint(i)); {
			if time.Now().After(deadline) {
				t.Fatalf("claimer %d never said it was ready: %s", i, outs[i].String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	won, refused := 0, 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("claimer %d: %v\n%s", i, err, outs[i].String())
		}
		out := outs[i].String()
		switch {
		case strings.HasPrefix(out, "won"):
			won++
		case strings.HasPrefix(out, "refused"):
			refused++
		default:
			t.Fatalf("claimer %d said %q", i, out)
		}
	}
	if won != 1 || refused != n-1 {
		t.Fatalf("won %d, refused %d; want 1 and %d", won, refused, n-1)
	}
	got, err := b.Get("t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 1 || got.Status != Running {
		t.Fatalf("after the race: %+v", got)
	}
}

// A change that refuses writes nothing: the document, its events and its
// marker are as they were.
func TestKanbanUpdateRefusedWritesNothing(t *testing.T) {
	b, clock, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "t1", Title: "x"})
	doc, events := kbRead(t, b.docPath("t1")), kbRead(t, b.eventsPath("t1"))
	clock.Advance(time.Second)
	_, err := b.Update("t1", func(*Task, time.Time) ([]Event, error) { return nil, fsstore.Refusedf("no") })
	if !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("update: %v", err)
	}
	if !bytes.Equal(kbRead(t, b.docPath("t1")), doc) || !bytes.Equal(kbRead(t, b.eventsPath("t1")), events) {
		t.Fatal("a refused update wrote")
	}
	// An unknown task is not found, and leaves no lock file behind.
	if _, err := b.Update("nope", kbSetStatus(Done)); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("update of an unknown task: %v", err)
	}
	if kbExists(b.lockPath("nope")) {
		t.Error("update of an unknown task left a lock file")
	}
	// On a board never made, too.
	empty, _, _ := kbBoard(t)
	if _, err := empty.Update("nope", kbSetStatus(Done)); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("update on an empty board: %v", err)
	}
	if kbExists(empty.Dir) {
		t.Error("update on an empty board made it")
	}
}

// The open markers follow the status: created with the task, kept while it
// is todo, ready, running or blocked, removed when it is done or archived.
// OpenTasks removes a stale marker (a task closed, or never written).
func TestKanbanOpenMarkers(t *testing.T) {
	b, clock, w := kbBoard(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		kbCreate(t, b, Task{ID: id, Title: id})
		clock.Advance(time.Millisecond)
	}
	marker := func(id string) string { return filepath.Join(b.openDir(), id) }
	ids, err := b.OpenIDs()
	if err != nil || strings.Join(ids, ",") != "a,b,c,d" {
		t.Fatalf("open ids %v, %v", ids, err)
	}
	for _, s := range []Status{Todo, Running, Blocked, Ready} {
		if _, err := b.Update("a", kbSetStatus(s)); err != nil {
			t.Fatal(err)
		}
		if !kbExists(marker("a")) {
			t.Fatalf("a %s task has no marker", s)
		}
	}
	if _, err := b.Update("b", kbSetStatus(Done)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update("c", kbSetStatus(Archived)); err != nil {
		t.Fatal(err)
	}
	if kbExists(marker("b")) || kbExists(marker("c")) {
		t.Fatal("a done or archived task kept its marker")
	}
	// Stale markers: one of a task closed behind the marker's back (a crash
	// between the document and the marker's removal), one of a task whose
	// document was never written (a crash inside Create).
	if err := os.WriteFile(marker("b"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker("ghost"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	open, err := b.OpenTasks()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range open {
		got = append(got, task.ID+":"+string(task.Status))
	}
	if strings.Join(got, ",") != "a:ready,d:ready" {
		t.Fatalf("open tasks %v", got)
	}
	if kbExists(marker("b")) || kbExists(marker("ghost")) {
		t.Fatal("stale markers kept")
	}
	if !kbExists(marker("a")) || !kbExists(marker("d")) {
		t.Fatal("live markers removed")
	}
	if len(w.List()) != 0 {
		t.Fatalf("warnings: %v", w.List())
	}
	// All still reads every task, oldest first, closed ones included.
	all, err := b.All()
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, task := range all {
		got = append(got, task.ID)
	}
	if strings.Join(got, ",") != "a,b,c,d" {
		t.Fatalf("all %v", got)
	}
}

// All lists oldest first by created_at: ids sort by creation only to the
// second.
func TestKanbanAllOldestFirst(t *testing.T) {
	b, clock, _ := kbBoard(t)
	for _, id := range []string{"20261121_020734_ffffff", "20261121_020734_000000", "20261121_020734_888888"} {
		kbCreate(t, b, Task{ID: id, Title: id})
		clock.Advance(time.Millisecond)
	}
	all, err := b.All()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range all {
		got = append(got, task.ID[16:])
	}
	if strings.Join(got, ",") != "ffffff,000000,888888" {
		t.Fatalf("order %v, want creation order", got)
	}
}

// A task document that does not parse is moved aside and reported, never
// replaced by an empty task; its marker goes once the task is gone.
func TestKanbanCorruptQuarantined(t *testing.T) {
	b, clock, w := kbBoard(t)
	kbCreate(t, b, Task{ID: "bad", Title: "bad"})
	kbCreate(t, b, Task{ID: "good", Title: "good"})
	garbage := []byte(`{"id": "bad", "title": "tru`)
	if err := os.WriteFile(b.docPath("bad"), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	aside := b.docPath("bad") + fmt.Sprintf(".corrupt-%d", clock.Now().Unix())

	called := false
	_, err := b.Update("bad", func(*Task, time.Time) ([]Event, error) { called = true; return nil, nil })
	if err == nil || errors.Is(err, fsstore.ErrNotFound) || called {
		t.Fatalf("update of a corrupt task: %v (change called: %v)", err, called)
	}
	if !strings.Contains(err.Error(), "moved aside to "+aside) {
		t.Fatalf("error %q does not name %s", err, aside)
	}
	if !bytes.Equal(kbRead(t, aside), garbage) {
		t.Fatal("the quarantined copy differs from the corrupt document")
	}
	if kbExists(b.docPath("bad")) {
		t.Fatal("something took the corrupt document's place")
	}
	if _, err := b.Get("bad"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("get after quarantine: %v", err)
	}
	// The other task is unharmed; the marker of the quarantined one goes.
	open, err := b.OpenTasks()
	if err != nil || len(open) != 1 || open[0].ID != "good" {
		t.Fatalf("open tasks %+v, %v", open, err)
	}
	if kbExists(filepath.Join(b.openDir(), "bad")) {
		t.Fatal("marker of a task that is gone kept")
	}

	// A document whose id is not its name is corrupt too; Get through a
	// listing reports it and moves it aside.
	kbCreate(t, b, Task{ID: "other", Title: "other"})
	doc := kbRead(t, b.docPath("good"))
	if err := os.WriteFile(b.docPath("other"), doc, 0o600); err != nil {
		t.Fatal(err)
	}
	w.Reset()
	all, err := b.All()
	if err != nil || len(all) != 1 || all[0].ID != "good" {
		t.Fatalf("all %+v, %v", all, err)
	}
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], `document has id "good", not "other"`) || !strings.Contains(ws[0], "moved aside") {
		t.Fatalf("warnings %v", ws)
	}
	if !bytes.Equal(kbRead(t, b.docPath("other")+fmt.Sprintf(".corrupt-%d", clock.Now().Unix())), doc) {
		t.Fatal("mismatched document not kept aside")
	}
}

// Comments and events round-trip; a torn tail of a log (a crash in the
// middle of an append) is skipped and reported by readers, and moved aside
// by the next writer.
func TestKanbanLogs(t *testing.T) {
	b, clock, w := kbBoard(t)
	kbCreate(t, b, Task{ID: "t1", Title: "x"})
	texts := []string{"first", "with \"quotes\" and\nnewlines", "ünïcode ✓"}
	for i, text := range texts {
		clock.Advance(time.Second)
		if _, err := b.AddComment("t1", fmt.Sprint("author", i), text); err != nil {
			t.Fatal(err)
		}
	}
	comments, err := b.Comments("t1")
	if err != nil || len(comments) != len(texts) {
		t.Fatalf("comments %+v, %v", comments, err)
	}
	for i, c := range comments {
		if c.Text != texts[i] || c.Author != fmt.Sprint("author", i) || c.TS != fsstore.TimeOf(storetest.Epoch.Add(time.Duration(i+1)*time.Second)) || c.ID == "" {
			t.Errorf("comment %d: %+v", i, c)
		}
	}
	if _, err := b.AddComment("t1", "a", " \n"); !errors.Is(err, fsstore.ErrInvalid) {
		t.Errorf("empty comment: %v", err)
	}
	if _, err := b.AddComment("nope", "a", "hi"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Errorf("comment on an unknown task: %v", err)
	}
	if _, err := b.Update("t1", func(t *Task, _ time.Time) ([]Event, error) {
		t.Status = Blocked
		return []Event{{Type: "blocked", RunID: "r1", Detail: "why"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	events, err := b.Events("t1")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range events {
		types = append(types, string(e.Type))
	}
	if strings.Join(types, ",") != "created,commented,commented,commented,blocked" {
		t.Fatalf("events %v", types)
	}
	if last := events[len(events)-1]; last.RunID != "r1" || last.Detail != "why" || last.TS != fsstore.TimeOf(clock.Now()) {
		t.Fatalf("last event %+v", last)
	}
	if len(w.List()) != 0 {
		t.Fatalf("warnings: %v", w.List())
	}

	// A torn tail: readers skip it and say so.
	torn := []byte(`{"ts":"2026-11-21T02:08:00.000000Z","type":"compl`)
	f, err := os.OpenFile(b.eventsPath("t1"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(torn)
	f.Close()
	again, err := b.Events("t1")
	if err != nil || len(again) != len(events) {
		t.Fatalf("events with a torn tail: %d, %v", len(again), err)
	}
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], fmt.Sprintf("torn tail of %d bytes", len(torn))) || !strings.Contains(ws[0], b.eventsPath("t1")) {
		t.Fatalf("torn tail not reported: %v", ws)
	}
	// The next append moves it aside and reports where; the log reads
	// clean and whole.
	w.Reset()
	clock.Advance(time.Second)
	if _, err := b.Update("t1", kbSetStatus(Ready)); err != nil {
		t.Fatal(err)
	}
	moved := b.eventsPath("t1") + fmt.Sprintf(".torn-%d", clock.Now().Unix())
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], moved) {
		t.Fatalf("warnings %v, want the torn tail moved to %s", ws, moved)
	}
	if got := kbRead(t, moved); !bytes.Contains(got, torn) {
		t.Fatalf("moved aside: %q", got)
	}
	w.Reset()
	final, err := b.Events("t1")
	if err != nil || len(final) != len(events)+1 || final[len(final)-1].Type != EventType(Ready) {
		t.Fatalf("events after repair: %+v, %v", final, err)
	}
	if len(w.List()) != 0 {
		t.Fatalf("warnings after repair: %v", w.List())
	}

	// The same for comments.
	f, err = os.OpenFile(b.commentsPath("t1"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(`{"id":"x","text":"half`))
	f.Close()
	if got, err := b.Comments("t1"); err != nil || len(got) != len(texts) {
		t.Fatalf("comments with a torn tail: %d, %v", len(got), err)
	}
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], "torn tail") {
		t.Fatalf("torn comment tail not reported: %v", ws)
	}
	if _, err := b.AddComment("t1", "z", "after the tear"); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Comments("t1"); len(got) != len(texts)+1 || got[len(got)-1].Text != "after the tear" {
		t.Fatalf("comments after repair: %+v", got)
	}
}

// A task whose logs do not exist yet reads as having none.
func TestKanbanLogsMissing(t *testing.T) {
	b, _, w := kbBoard(t)
	kbCreate(t, b, Task{ID: "t1", Title: "x"})
	if c, err := b.Comments("t1"); err != nil || len(c) != 0 {
		t.Fatalf("comments %v, %v", c, err)
	}
	if err := os.Remove(b.eventsPath("t1")); err != nil {
		t.Fatal(err)
	}
	if e, err := b.Events("t1"); err != nil || len(e) != 0 {
		t.Fatalf("events %v, %v", e, err)
	}
	if len(w.List()) != 0 {
		t.Fatalf("warnings %v", w.List())
	}
}
