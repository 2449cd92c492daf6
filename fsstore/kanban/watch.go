package kanban

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// TaskEvent is an event of a task of the board, as Watcher reports it,
// with the cursor that resumes a watch after it.
type TaskEvent struct {
	TaskID string `json:"task_id"`
	Event
	Cursor Cursor `json:"cursor"`
}

// A Cursor is the exact position of an event in a board's events: its
// ts, its task, its log (events or comments) and the byte offset of the
// end of its line in that log. Positions are ordered by ts, then task,
// log and offset, the order in which a Watcher reports the events of one
// Poll; so the several events of one change, which share its ts, and
// events of the same microsecond are each after one cursor and before
// the next. Its text (String) is ts/task/log/offset.
type Cursor struct {
	TS     fsstore.Time
	TaskID string
	Log    string
	Offset int64
}

// The logs a cursor names, by the suffix of their file.
const (
	logEvents   = "events"
	logComments = "comments"
)

func (c Cursor) String() string {
	return fmt.Sprintf("%s/%s/%s/%d", c.TS, c.TaskID, c.Log, c.Offset)
}

// MarshalText writes the cursor as its String.
func (c Cursor) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// ParseCursor reads a cursor's text; what is not one is ErrInvalid.
func ParseCursor(s string) (Cursor, error) {
	bad := fsstore.Invalidf("cursor %q is not one a watch printed (ts/task/log/offset)", s)
	parts := strings.Split(s, "/")
	if len(parts) != 4 || (parts[2] != logEvents && parts[2] != logComments) {
		return Cursor{}, bad
	}
	ts, err := fsstore.Time(parts[0]).Canonical()
	if err != nil || ts == "" {
		return Cursor{}, bad
	}
	off, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || off <= 0 {
		return Cursor{}, bad
	}
	if err := fsstore.CheckID("task id", parts[1]); err != nil {
		return Cursor{}, bad
	}
	return Cursor{TS: ts, TaskID: parts[1], Log: parts[2], Offset: off}, nil
}

// less orders positions (see Cursor).
func (c Cursor) less(d Cursor) bool {
	if c.TS != d.TS {
		return c.TS.Before(d.TS)
	}
	if c.TaskID != d.TaskID {
		return c.TaskID < d.TaskID
	}
	if c.Log != d.Log {
		return c.Log < d.Log
	}
	return c.Offset < d.Offset
}

// Watcher follows the committed events of a board, or of one task, by
// polling the sizes of their logs: no notification, which a network
// filesystem would not deliver from another host, and the logs are
// appended in place, so another host's appends are seen. Each Poll reads
// what each log gained since the last, and reports the events committed
// (their ts not later than the document's updated_at: see commit) in
// the order of their cursors; the first Poll only those later than since
// (Watch) or after a cursor (WatchAfter), and each later Poll every event
// committed since, whatever its ts, so a change committed after another
// with a later ts is not lost. An event not committed yet is read again
// at the next Poll. Comments come from the comments logs as "commented"
// events.
type Watcher struct {
	b     *Board
	id    string
	since fsstore.Time
	// after, when set, replaces since: the events after this position.
	// Both apply to the first Poll, which reads the logs as they were
	// when the watch began; what a log gains after it is new.
	after  *Cursor
	polled bool
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

// WatchAfter returns a Watcher of task id's events (all tasks' for "")
// after cursor c, which a watch printed. A cursor that does not end an
// event's line of its log (a log cut shorter than it, or another log's
// cursor), or that names another task than id, is ErrInvalid.
func (b *Board) WatchAfter(id string, c Cursor) (*Watcher, error) {
	if id != "" && id != c.TaskID {
		return nil, fsstore.Invalidf("cursor %s is of task %s, not of the watched task %s", c, c.TaskID, id)
	}
	w, err := b.Watch(id, "")
	if err != nil {
		return nil, err
	}
	if err := b.checkCursor(c); err != nil {
		return nil, err
	}
	w.after = &c
	w.offsets[c.TaskID+"."+c.Log+".jsonl"] = c.Offset
	return w, nil
}

// checkCursor reads the line that cursor c says ends at its offset.
func (b *Board) checkCursor(c Cursor) error {
	data, err := os.ReadFile(filepath.Join(b.tasksDir(), c.TaskID+"."+c.Log+".jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if c.Offset <= 0 || int64(len(data)) < c.Offset {
		return fsstore.Invalidf("cursor %s is past the end of task %s's %s log (%d bytes): not this board's, or the log was cut", c, c.TaskID, c.Log, len(data))
	}
	line := data[:c.Offset]
	if line[len(line)-1] != '\n' {
		return fsstore.Invalidf("cursor %s does not end a line of task %s's %s log", c, c.TaskID, c.Log)
	}
	line = line[bytes.LastIndexByte(line[:len(line)-1], '\n')+1:]
	var rec struct {
		TS fsstore.Time `json:"ts"`
	}
	if json.Unmarshal(line, &rec) != nil || rec.TS.Before(c.TS) || c.TS.Before(rec.TS) {
		return fsstore.Invalidf("cursor %s does not name the event at that offset of task %s's %s log", c, c.TaskID, c.Log)
	}
	return nil
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
	w.polled = true
	sort.Slice(out, func(i, j int) bool { return out[i].Cursor.less(out[j].Cursor) })
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
	log := logComments
	if !comments {
		id, log = strings.TrimSuffix(name, ".events.jsonl"), logEvents
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
		if ev.Type == "" || (reread && !floor.Before(ev.TS)) {
			continue
		}
		ts, _ := ev.TS.Canonical()
		at := Cursor{TS: ts, TaskID: id, Log: log, Offset: off}
		if !w.polled && ((w.after != nil && !w.after.less(at)) || (w.after == nil && !w.since.Before(ev.TS))) {
			continue
		}
		out = append(out, TaskEvent{TaskID: id, Event: ev, Cursor: at})
		if floor.Before(ev.TS) {
			w.floors[name] = ev.TS
		}
	}
	w.offsets[name] = off
	return out, nil
}
