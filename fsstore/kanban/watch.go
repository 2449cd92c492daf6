package kanban

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// TaskEvent is an event of a task of the board, as Watcher reports it.
type TaskEvent struct {
	TaskID string `json:"task_id"`
	Event
}

// Watcher follows the committed events of a board, or of one task, by
// polling the sizes of their logs: no notification, which a network
// filesystem would not deliver from another host, and the logs are
// appended in place, so another host's appends are seen. Each Poll reads
// what each log gained since the last, and reports the events committed
// (their ts not later than the document's updated_at: see commit) whose
// ts is later than since, oldest first; an event not committed yet is
// read again at the next Poll. Comments come from the comments logs as
// "commented" events.
type Watcher struct {
	b     *Board
	id    string
	since fsstore.Time
	// offsets: how far each log has been reported; floors: the latest ts
	// reported from it, so that a log cut shorter (a crash's events moved
	// aside) is read again from its start without repeats.
	offsets map[string]int64
	floors  map[string]fsstore.Time
}

// Watch returns a Watcher of task id's events (all tasks' for ""), later
// than since.
func (b *Board) Watch(id string, since fsstore.Time) (*Watcher, error) {
	if id != "" {
		if _, err := b.Get(id); err != nil {
			return nil, err
		}
	}
	return &Watcher{b: b, id: id, since: since, offsets: map[string]int64{}, floors: map[string]fsstore.Time{}}, nil
}

// Poll returns the events committed since the last Poll.
func (w *Watcher) Poll() ([]TaskEvent, error) {
	names, err := w.logs()
	if err != nil {
		return nil, err
	}
	var out []TaskEvent
	for _, name := range names {
		evs, err := w.read(name)
		if err != nil {
			return out, err
		}
		out = append(out, evs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TS < out[j].TS })
	return out, nil
}

// logs lists the events and comments logs watched.
func (w *Watcher) logs() ([]string, error) {
	if w.id != "" {
		return []string{w.id + ".events.jsonl", w.id + ".comments.jsonl"}, nil
	}
	entries, err := os.ReadDir(w.b.tasksDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".events.jsonl") || strings.HasSuffix(e.Name(), ".comments.jsonl") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// read reports what log name gained since its offset.
func (w *Watcher) read(name string) ([]TaskEvent, error) {
	path := filepath.Join(w.b.tasksDir(), name)
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	off := w.offsets[name]
	if fi.Size() == off {
		return nil, nil
	}
	reread := fi.Size() < off
	if reread {
		off = 0
	}
	id, comments := strings.CutSuffix(name, ".comments.jsonl")
	if !comments {
		id = strings.TrimSuffix(name, ".events.jsonl")
	}
	var committed fsstore.Time
	if !comments {
		var t Task
		if err := fsstore.ReadDoc(w.b.docPath(id), &t); err != nil {
			// No document yet (a create not committed), or one being
			// quarantined: its events wait.
			return nil, nil
		}
		committed = t.UpdatedAt
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return nil, err
	}
	var out []TaskEvent
	floor := w.floors[name]
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // a line still being written, or a torn tail
		}
		line := data[:i]
		var ev Event
		if comments {
			var c Comment
			if json.Unmarshal(line, &c) == nil {
				ev = Event{TS: c.TS, Type: EventCommented, Detail: c.Author}
			}
		} else if json.Unmarshal(line, &ev) == nil {
			if committed.Before(ev.TS) {
				break // not committed yet: read again next time
			}
			if ev.Type == EventCommented {
				ev = Event{} // an older board's copy of a comment
			}
		}
		data, off = data[i+1:], off+int64(i)+1
		if ev.Type == "" || !w.since.Before(ev.TS) || (reread && !floor.Before(ev.TS)) {
			continue
		}
		out = append(out, TaskEvent{TaskID: id, Event: ev})
		if floor.Before(ev.TS) {
			w.floors[name] = ev.TS
		}
	}
	w.offsets[name] = off
	return out, nil
}
