package kanban

import (
	"errors"

	"github.com/hermes/hermes/fsstore"
)

// Shown is a task as every reader shows it (kanban show, the MCP
// server's kanban_show): as View sees it, with what holds it, its
// comments and its events.
type Shown struct {
	Task
	// Hold is set while a parent holds the task or it waits for one.
	Hold     *Hold     `json:"hold,omitempty"`
	Comments []Comment `json:"comments"`
	Events   []Event   `json:"events"`
}

// Show reads task id as it is shown.
func (b *Board) Show(id string) (Shown, error) {
	t, err := b.Get(id)
	if err != nil {
		return Shown{}, err
	}
	comments, err := b.Comments(id)
	if err != nil {
		return Shown{}, err
	}
	events, err := b.Events(id)
	if err != nil {
		return Shown{}, err
	}
	t, hold, err := b.View(t, nil)
	if err != nil {
		return Shown{}, err
	}
	s := Shown{Task: t, Comments: comments, Events: events}
	if s.Comments == nil {
		s.Comments = []Comment{}
	}
	if s.Events == nil {
		s.Events = []Event{} // an events log lost or torn whole: still an array
	}
	if hold.Parent != "" {
		s.Hold = &hold
	}
	return s, nil
}

// ViewAll is every task of all as readers see it (View), its parents
// looked up in all first: how every listing shows the board.
func (b *Board) ViewAll(all []Task) ([]Task, error) {
	byID := make(map[string]Task, len(all))
	for _, t := range all {
		byID[t.ID] = t
	}
	get := func(id string) (Task, error) {
		if t, ok := byID[id]; ok {
			return t, nil
		}
		return Task{}, fsstore.NotFoundf("kanban task %s not found", id)
	}
	out := make([]Task, len(all))
	for i, t := range all {
		v, _, err := b.View(t, get)
		if err != nil && !errors.Is(err, fsstore.ErrNotFound) {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
