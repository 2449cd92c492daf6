package kanban

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// A task's dependencies are its parents, the ids in its own document: no
// other document names them, so a link or an unlink is one change of the
// child, under the child's lock, like any other. A task with a parent not
// done waits: it is stored todo, and it is ready exactly when every parent
// is done (or archived after it was done). That readiness is read from
// the parents' documents (Hold), never stored by the parent's change: so
// the commit that completes a child's last parent is the one that makes
// the child ready, for every reader at once (show, list, dispatch), and
// no crash between two writes can leave a child ready whose parent is
// not done, nor a child waiting for parents that are all done. The child's
// own document turns ready in its claim, which checks the parents again
// under the child's lock.
//
// A parent blocked (given up included) or archived without being done
// holds its children until it is done: Hold names it and why.

// Hold is why a task with parents is not ready: the parent that holds it
// and what that parent is. The zero Hold: every parent is done.
type Hold struct {
	Parent string `json:"parent"`
	Reason string `json:"reason"`
}

// Done reports whether the task's work was done: done, or archived after
// it was done.
func (t Task) Done() bool {
	return t.Status == Done || (t.Status == Archived && t.CompletedAt != "")
}

// linksLockPath is held by a link, so that two links cannot each pass
// the cycle check the other would fail.
func (b *Board) linksLockPath() string { return filepath.Join(b.Dir, "links.lock") }

// Hold says which parent holds task t, if any: a parent that holds it
// (blocked, archived without being done, gone) comes before one that is
// still to be done. get reads a parent; nil is Get.
func (b *Board) Hold(t Task, get func(string) (Task, error)) (Hold, error) {
	if get == nil {
		get = b.Get
	}
	var waiting Hold
	for _, id := range t.Parents {
		p, err := get(id)
		if errors.Is(err, fsstore.ErrNotFound) {
			return Hold{Parent: id, Reason: "held by parent " + id + ": not found"}, nil
		}
		if err != nil {
			return Hold{}, err
		}
		switch {
		case p.Done():
			continue
		case p.Status == Blocked:
			return Hold{Parent: id, Reason: fmt.Sprintf("held by parent %s: blocked (%s)", id, p.BlockReason)}, nil
		case p.Status == Archived:
			return Hold{Parent: id, Reason: "held by parent " + id + ": archived before it was done"}, nil
		}
		if waiting.Parent == "" {
			waiting = Hold{Parent: id, Reason: fmt.Sprintf("waiting for parent %s (%s)", id, p.Status)}
		}
	}
	return waiting, nil
}

// View is task t as readers see it: a waiting task (todo, with parents)
// whose parents are all done is ready, and the Hold says what holds one
// that is not.
func (b *Board) View(t Task, get func(string) (Task, error)) (Task, Hold, error) {
	if t.Status != Todo || len(t.Parents) == 0 {
		return t, Hold{}, nil
	}
	h, err := b.Hold(t, get)
	if err == nil && h.Parent == "" {
		t.Status = Ready
	}
	return t, h, err
}

// checkParents checks the parents of a task to be created: each a task
// id that exists, none twice.
func (b *Board) checkParents(parents []string) error {
	for i, id := range parents {
		if err := fsstore.CheckID("parent task id", id); err != nil {
			return err
		}
		if slices.Contains(parents[:i], id) {
			return fsstore.Invalidf("parent %s given twice", id)
		}
		if _, err := b.Get(id); err != nil {
			return err
		}
	}
	return nil
}

// Link makes task parent a parent of task child: a todo or ready child
// waits (todo) until parent is done. A link that would make a cycle is
// bad input; a child that runs, is blocked or closed is refused. Linking a
// parent already linked changes nothing.
func (b *Board) Link(child, parent string) (Task, error) {
	if err := fsstore.CheckID("task id", child); err != nil {
		return Task{}, err
	}
	if err := fsstore.CheckID("parent task id", parent); err != nil {
		return Task{}, err
	}
	if child == parent {
		return Task{}, fsstore.Invalidf("task %s cannot be its own parent", child)
	}
	if err := b.ensureDirs(); err != nil {
		return Task{}, err
	}
	unlock, err := fsstore.LockUntil(b.linksLockPath(), b.LockTimeout, b.Cancel)
	if err != nil {
		return Task{}, err
	}
	defer unlock()
	p, err := b.Get(parent)
	if err != nil {
		return Task{}, err
	}
	if path, err := b.ancestorPath(parent, child); err != nil {
		return Task{}, err
	} else if path != nil {
		return Task{}, fsstore.Invalidf("linking %s under %s would make a cycle: %s already depends on %s (%s)",
			child, parent, parent, child, strings.Join(path, " → "))
	}
	return b.Update(child, func(t *Task, _ time.Time) ([]Event, error) {
		if slices.Contains(t.Parents, parent) {
			return nil, nil
		}
		if t.Status != Todo && t.Status != Ready {
			return nil, fsstore.Refusedf("task %s is %s; only a todo or ready task can gain a parent", t.ID, t.Status)
		}
		t.Parents = append(t.Parents, parent)
		if !p.Done() {
			t.Status = Todo
		}
		return []Event{{Type: EventLinked, Detail: parent}}, nil
	})
}

// ancestorPath returns the chain of parents from task from up to task
// want, or nil when want is not an ancestor of from.
func (b *Board) ancestorPath(from, want string) ([]string, error) {
	seen := map[string]bool{}
	var walk func(id string) ([]string, error)
	walk = func(id string) ([]string, error) {
		if id == want {
			return []string{id}, nil
		}
		if seen[id] {
			return nil, nil
		}
		seen[id] = true
		t, err := b.Get(id)
		if errors.Is(err, fsstore.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, p := range t.Parents {
			path, err := walk(p)
			if err != nil || path != nil {
				return append([]string{id}, path...), err
			}
		}
		return nil, nil
	}
	return walk(from)
}

// Unlink removes parent from task child's parents. A waiting child left
// with no parent is ready. A parent that was child's subtask loses its
// marker after (subtask.go), so that no block of child takes it back.
func (b *Board) Unlink(child, parent string) (Task, error) {
	if err := fsstore.CheckID("parent task id", parent); err != nil {
		return Task{}, err
	}
	t, err := b.Update(child, func(t *Task, _ time.Time) ([]Event, error) {
		i := slices.Index(t.Parents, parent)
		if i < 0 {
			return nil, fsstore.NotFoundf("task %s has no parent %s", t.ID, parent)
		}
		t.Parents = slices.Delete(t.Parents, i, i+1)
		if t.Status == Todo && len(t.Parents) == 0 {
			t.Status = Ready
		}
		return []Event{{Type: EventUnlinked, Detail: parent}}, nil
	})
	if err == nil {
		if err := os.Remove(filepath.Join(b.subtasksDir(child), parent)); err != nil && !errors.Is(err, os.ErrNotExist) {
			b.Warn(fmt.Sprintf("task %s no longer waits for %s, but its subtask marker stays (a block of %s would wait for it again): %v", child, parent, child, err))
		}
	}
	return t, err
}

// promoteWaiting makes a waiting task t ready in a change that claims
// it, when its parents are all done, and refuses it otherwise.
func (b *Board) promoteWaiting(t *Task) ([]Event, error) {
	if len(t.Parents) == 0 || (t.Status != Todo && t.Status != Ready) {
		return nil, nil
	}
	h, err := b.Hold(*t, nil)
	if err != nil {
		return nil, err
	}
	if h.Parent != "" {
		return nil, fsstore.Refusedf("task %s cannot be claimed: %s", t.ID, h.Reason)
	}
	if t.Status == Ready {
		return nil, nil
	}
	t.Status = Ready
	return []Event{{Type: EventReadied, Detail: "its parents are done"}}, nil
}
