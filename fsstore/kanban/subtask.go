package kanban

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// A worker's subtask is a task its own task waits for: a parent of its
// task (deps.go). It is made in one commit, its document, which names the
// task that waits for it (subtask_of); the waiting task's parents gain it
// after, and are mended from the subtasks' documents where a crash came
// between:
//
//  1. An empty marker subtasks/<task>/<subtask> is written, so the
//     subtasks of a task are found without reading every task.
//  2. The subtask is created with subtask_of naming the task: the commit
//     point. A failure before it removes the marker; a crash leaves a
//     marker whose task does not exist, which readers skip and fsck
//     --repair removes.
//  3. The task gains the subtask as a parent (event "linked"), for its
//     worker's run, so that kanban show lists it while the worker runs.
//     A failure or crash here leaves a subtask its task does not list.
//
// A worker waits only through its block (Block), which first adds to its
// task's parents every subtask that names the task and is not one of
// them: so a task never waits without a subtask it made, whenever a crash
// came. fsck reports an open task not running that lacks a subtask of
// its (its worker ended without a block), and --repair links it. A person
// who unlinks a subtask removes its marker too, so a later block does not
// take it back.

// subtasksDir holds the markers of task id's subtasks.
func (b *Board) subtasksDir(id string) string { return filepath.Join(b.Dir, "subtasks", id) }

// CreateSubtask makes task sub for worker w's own task, which waits for
// it: see above. The subtask has no parents of its own. A failure after
// the commit point (step 3) is reported by Warn, not returned: the
// subtask is made, and the task will wait for it.
func (b *Board) CreateSubtask(w Worker, sub Task) (Task, error) {
	if err := fsstore.CheckID("task id", w.Task); err != nil {
		return Task{}, err
	}
	if len(sub.Parents) > 0 {
		return Task{}, fsstore.Invalidf("a subtask has no parents of its own")
	}
	sub.SubtaskOf = w.Task
	if err := b.checkNew(&sub, b.Now()); err != nil {
		return Task{}, err
	}
	owner, err := b.Get(w.Task)
	if err != nil {
		return Task{}, err
	}
	if err := owner.holds(&w); err != nil {
		return Task{}, err
	}
	if err := b.ensureDirs(); err != nil {
		return Task{}, err
	}
	dir := b.subtasksDir(w.Task)
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := fsstore.EnsureDir(d); err != nil {
			return Task{}, err
		}
	}
	marker := filepath.Join(dir, sub.ID)
	if err := fsstore.WriteFileAtomic(marker, nil); err != nil {
		return Task{}, err
	}
	made, err := b.Create(sub)
	if err != nil {
		os.Remove(marker)
		return Task{}, err
	}
	if _, err := b.linkSubtask(w, made.ID); err != nil {
		b.Warn(fmt.Sprintf("subtask %s was made; task %s will wait for it when its worker blocks, but linking it now failed: %v", made.ID, w.Task, err))
	}
	return made, nil
}

// linkSubtask makes task sub, made by worker w for its own task, a
// parent of that task (step 3): the task waits for it once the worker
// blocks (Block). sub is new, so no cycle can form.
func (b *Board) linkSubtask(w Worker, sub string) (Task, error) {
	return b.Update(w.Task, func(t *Task, _ time.Time) ([]Event, error) {
		if err := t.holds(&w); err != nil {
			return nil, err
		}
		if slices.Contains(t.Parents, sub) {
			return nil, nil
		}
		t.Parents = append(t.Parents, sub)
		return []Event{{Type: EventLinked, RunID: w.Run, Detail: sub}}, nil
	})
}

// unlinkedSubtasks lists the subtasks of task t (by their markers and
// documents) that are not among its parents.
func (b *Board) unlinkedSubtasks(t Task) ([]Task, error) {
	entries, err := os.ReadDir(b.subtasksDir(t.ID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, e := range entries {
		id := e.Name()
		if fsstore.CheckID("task id", id) != nil || slices.Contains(t.Parents, id) {
			continue
		}
		sub, err := b.Get(id)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue // a create that did not reach its commit point
		}
		if err != nil {
			return nil, err
		}
		if sub.SubtaskOf == t.ID {
			out = append(out, sub)
		}
	}
	return out, nil
}

// adoptSubtasks adds to task t's parents the subtasks it does not list,
// with their "linked" events.
func (b *Board) adoptSubtasks(t *Task) ([]Event, error) {
	subs, err := b.unlinkedSubtasks(*t)
	if err != nil {
		return nil, err
	}
	var events []Event
	for _, sub := range subs {
		t.Parents = append(t.Parents, sub.ID)
		events = append(events, Event{Type: EventLinked, Detail: sub.ID})
	}
	return events, nil
}

// checkSubtasks reports the subtask markers whose subtask was never made
// (repair removes them), and each open task not running that does not
// list a subtask of its among its parents (repair links it: the task
// waits for it).
func (b *Board) checkSubtasks(repair bool) ([]fsstore.Finding, error) {
	root := filepath.Join(b.Dir, "subtasks")
	owners, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []fsstore.Finding
	for _, o := range owners {
		if fsstore.CheckID("task id", o.Name()) != nil {
			continue
		}
		markers, err := os.ReadDir(filepath.Join(root, o.Name()))
		if err != nil {
			return out, err
		}
		for _, m := range markers {
			path := filepath.Join(root, o.Name(), m.Name())
			if _, err := b.Get(m.Name()); errors.Is(err, fsstore.ErrNotFound) {
				f := fsstore.Finding{Path: path, Problem: true, What: "marker of a subtask whose create did not finish"}
				if repair {
					if err := os.Remove(path); err == nil {
						f.Repaired, f.What = true, f.What+": removed"
					}
				}
				out = append(out, f)
			}
		}
		t, err := b.Get(o.Name())
		if errors.Is(err, fsstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		if !t.Open() || t.Status == Running {
			continue
		}
		subs, err := b.unlinkedSubtasks(t)
		if err != nil {
			return out, err
		}
		for _, sub := range subs {
			f := fsstore.Finding{Path: b.docPath(t.ID), Problem: true, What: fmt.Sprintf(
				"kanban task %s does not wait for its subtask %s (a crash between the subtask's create and its link)", t.ID, sub.ID)}
			if repair {
				if _, err := b.adoptSubtask(t.ID, sub.ID); err != nil {
					f.What += ": " + err.Error()
				} else {
					f.Repaired, f.What = true, f.What+": linked"
				}
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// adoptSubtask makes subtask sub a parent of task id, as fsck --repair
// does: a ready task waits (todo) while sub is not done.
func (b *Board) adoptSubtask(id, sub string) (Task, error) {
	s, err := b.Get(sub)
	if err != nil {
		return Task{}, err
	}
	return b.Update(id, func(t *Task, _ time.Time) ([]Event, error) {
		if slices.Contains(t.Parents, sub) || !t.Open() || t.Status == Running {
			return nil, nil
		}
		t.Parents = append(t.Parents, sub)
		if t.Status == Ready && !s.Done() {
			t.Status = Todo
		}
		return []Event{{Type: EventLinked, Detail: sub}}, nil
	})
}
