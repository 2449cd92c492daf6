package kanban

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

func kbView(t *testing.T, b *Board, id string) (Task, Hold) {
	t.Helper()
	task, err := b.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	v, h, err := b.View(task, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v, h
}

func kbDone(t *testing.T, b *Board, id string) {
	t.Helper()
	if _, err := b.Complete(id, nil, "result of "+id); err != nil {
		t.Fatal(err)
	}
}

// A diamond: B and C wait for A, D for B and C. Each child is ready from
// the commit that completes its last parent on, with its own document
// untouched by that commit; a claim stores it ready.
func TestDependenciesDiamond(t *testing.T) {
	b, clock, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "a", Title: "a"})
	kbCreate(t, b, Task{ID: "b", Title: "b", Parents: []string{"a"}, Status: Todo})
	kbCreate(t, b, Task{ID: "c", Title: "c", Parents: []string{"a"}, Status: Todo})
	kbCreate(t, b, Task{ID: "d", Title: "d", Parents: []string{"b", "c"}, Status: Todo})
	if v, h := kbView(t, b, "d"); v.Status != Todo || h.Parent != "b" || h.Reason != "waiting for parent b (todo)" {
		t.Fatalf("d: %s, %+v", v.Status, h)
	}
	if _, err := b.Claim("b", time.Minute, "p", nil); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("claim of a waiting child: %v, want refused", err)
	}
	doc := kbRead(t, b.docPath("b"))
	clock.Advance(time.Second)
	kbDone(t, b, "a")
	if !bytes.Equal(kbRead(t, b.docPath("b")), doc) {
		t.Fatal("completing the parent wrote the child")
	}
	for _, id := range []string{"b", "c"} {
		if v, h := kbView(t, b, id); v.Status != Ready || h.Parent != "" {
			t.Fatalf("%s after its parent is done: %s, %+v", id, v.Status, h)
		}
	}
	task, err := b.Claim("b", time.Minute, "p", nil)
	if err != nil || task.Status != Running {
		t.Fatalf("claim of a child whose parent is done: %v %+v", err, task)
	}
	if events, _ := b.Events("b"); events[len(events)-2].Type != EventReadied || events[len(events)-1].Type != EventClaimed {
		t.Fatalf("events %+v, want readied then claimed", events)
	}
	clock.Advance(time.Second)
	kbDone(t, b, "b")
	if v, h := kbView(t, b, "d"); v.Status != Todo || h.Parent != "c" {
		t.Fatalf("d with c not done: %s, %+v", v.Status, h)
	}
	clock.Advance(time.Second)
	kbDone(t, b, "c")
	if v, _ := kbView(t, b, "d"); v.Status != Ready {
		t.Fatalf("d with both parents done: %s", v.Status)
	}
}

// A link that would close a cycle is bad input, and changes nothing.
func TestDependenciesCycle(t *testing.T) {
	b, _, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "a", Title: "a"})
	kbCreate(t, b, Task{ID: "b", Title: "b", Parents: []string{"a"}, Status: Todo})
	kbCreate(t, b, Task{ID: "c", Title: "c", Parents: []string{"b"}, Status: Todo})
	doc := kbRead(t, b.docPath("a"))
	_, err := b.Link("a", "c")
	if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), "c → b → a") {
		t.Fatalf("link a under c: %v, want a cycle refused", err)
	}
	if _, err := b.Link("a", "a"); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("link a under a: %v", err)
	}
	if !bytes.Equal(kbRead(t, b.docPath("a")), doc) {
		t.Fatal("a refused link wrote the task")
	}
	if _, err := b.Link("a", "nosuch"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("link under a missing parent: %v", err)
	}
}

// A blocked, given up or archived parent holds its children, and says so;
// a parent archived after it was done does not.
func TestDependenciesHeld(t *testing.T) {
	b, clock, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "p", Title: "p"})
	kbCreate(t, b, Task{ID: "c", Title: "c", Parents: []string{"p"}, Status: Todo})
	if _, _, err := b.Block("p", nil, "no credentials"); err != nil {
		t.Fatal(err)
	}
	if v, h := kbView(t, b, "c"); v.Status != Todo || h.Reason != "held by parent p: blocked (no credentials)" {
		t.Fatalf("c under a blocked parent: %s, %+v", v.Status, h)
	}
	if _, err := b.Ready("c"); !errors.Is(err, fsstore.ErrRefused) || !strings.Contains(err.Error(), "held by parent p") {
		t.Fatalf("ready of a held child: %v", err)
	}
	clock.Advance(time.Second)
	if _, err := b.Archive("p"); err != nil {
		t.Fatal(err)
	}
	if _, h := kbView(t, b, "c"); h.Reason != "held by parent p: archived before it was done" {
		t.Fatalf("c under an archived parent: %+v", h)
	}

	kbCreate(t, b, Task{ID: "q", Title: "q"})
	kbCreate(t, b, Task{ID: "d", Title: "d", Parents: []string{"q"}, Status: Todo})
	b.FailureLimit = 1
	task, err := b.Claim("q", time.Minute, "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.FailRun("q", task.CurrentRunID, OutcomeCrashed, "exit 1", nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, h := kbView(t, b, "d"); !strings.HasPrefix(h.Reason, "held by parent q: blocked (gave_up: 1 failed run in a row") {
		t.Fatalf("d under a given up parent: %+v", h)
	}

	kbCreate(t, b, Task{ID: "r", Title: "r"})
	kbCreate(t, b, Task{ID: "e", Title: "e", Parents: []string{"r"}, Status: Todo})
	kbDone(t, b, "r")
	clock.Advance(time.Second)
	if _, err := b.Archive("r"); err != nil {
		t.Fatal(err)
	}
	if v, _ := kbView(t, b, "e"); v.Status != Ready {
		t.Fatalf("e under a parent archived once done: %s", v.Status)
	}
}

// Link makes a ready child wait; unlinking its last parent makes it
// ready. A running child cannot gain a parent.
func TestDependenciesLinkUnlink(t *testing.T) {
	b, _, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "p", Title: "p"})
	kbCreate(t, b, Task{ID: "c", Title: "c"})
	task, err := b.Link("c", "p")
	if err != nil || task.Status != Todo || len(task.Parents) != 1 {
		t.Fatalf("link: %v %+v", err, task)
	}
	if again, err := b.Link("c", "p"); err != nil || len(again.Parents) != 1 {
		t.Fatalf("link twice: %v %+v", err, again)
	}
	if _, err := b.Unlink("c", "q"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("unlink of no parent: %v", err)
	}
	task, err = b.Unlink("c", "p")
	if err != nil || task.Status != Ready || len(task.Parents) != 0 {
		t.Fatalf("unlink: %v %+v", err, task)
	}
	if _, err := b.Claim("c", time.Minute, "x", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Link("c", "p"); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("link of a running child: %v", err)
	}
}

// A worker that blocks while a subtask it made is not done waits (todo),
// and is ready once the subtask is done; a stale worker cannot add one.
func TestSubtaskWait(t *testing.T) {
	b, clock, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "o", Title: "orchestrate"})
	task, err := b.Claim("o", time.Minute, "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	w := Worker{Task: "o", Run: task.CurrentRunID, Claim: task.ClaimLock}
	kbCreate(t, b, Task{ID: "s", Title: "part"})
	if _, err := b.linkSubtask(w, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.linkSubtask(Worker{Task: "o", Run: "stale", Claim: "x"}, "s"); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("a stale worker's subtask: %v", err)
	}
	clock.Advance(time.Second)
	blocked, _, err := b.Block("o", &w, "waiting for the part")
	if err != nil || blocked.Status != Todo || blocked.Runs[0].Outcome != OutcomeBlocked {
		t.Fatalf("block with a subtask pending: %v %+v", err, blocked)
	}
	if _, h := kbView(t, b, "o"); h.Parent != "s" {
		t.Fatalf("hold %+v", h)
	}
	kbDone(t, b, "s")
	if v, _ := kbView(t, b, "o"); v.Status != Ready {
		t.Fatalf("after the subtask: %s", v.Status)
	}
	// A person's block blocks, subtasks or not.
	if task, _, err := b.Block("o", nil, "hold on"); err != nil || task.Status != Blocked {
		t.Fatalf("a person's block: %v %+v", err, task)
	}
}
