package kanban

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// keysDir holds, for each idempotency key, a file named by the key's
// SHA-256 that holds the id of the task the key made.
func (b *Board) keysDir() string { return filepath.Join(b.Dir, "keys") }

// CreateOnce is Create for a task made at most once per key: the first
// create with key records the new task's id under the key (its commit
// point), then creates the task; a later one, racing or not, returns the
// task the key made. A crash between the two leaves the key naming a task
// not made yet, which the next create with the key makes, with that id
// (Create of an id that exists is a no-op, so a create that finds the
// task made returns it).
func (b *Board) CreateOnce(key string, t Task) (Task, error) {
	if err := fsstore.CheckKey(key); err != nil {
		return Task{}, err
	}
	if err := b.ensureDirs(); err != nil {
		return Task{}, err
	}
	if err := fsstore.EnsureDir(b.keysDir()); err != nil {
		return Task{}, err
	}
	path := filepath.Join(b.keysDir(), fsstore.KeyName(key))
	unlock, err := fsstore.LockUntil(path+".lock", b.LockTimeout, b.Cancel)
	if err != nil {
		return Task{}, err
	}
	defer unlock()
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(data))
		if err := fsstore.CheckID("task id", id); err != nil {
			return Task{}, &fsstore.CorruptError{Path: path, Err: err}
		}
		if task, err := b.Get(id); !errors.Is(err, fsstore.ErrNotFound) {
			return task, err
		}
		t.ID = id
	case errors.Is(err, os.ErrNotExist):
		if t.ID == "" {
			t.ID = fsstore.NewID(b.Now())
		}
		if err := fsstore.WriteFileAtomic(path, []byte(t.ID+"\n")); err != nil {
			return Task{}, err
		}
		defer fsstore.SweepKeys(b.keysDir())
	default:
		return Task{}, err
	}
	t.IdempotencyKey = key
	return b.Create(t)
}

// ParseAt reads the time of --at: RFC 3339, or a duration from now.
func ParseAt(s string, now time.Time, parseDuration func(string) (time.Duration, error)) (fsstore.Time, error) {
	if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return fsstore.TimeOf(at), nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return "", fsstore.Invalidf("--at %q: not an RFC 3339 time (2026-11-25T18:00:00Z) nor a duration from now (90m)", s)
	}
	return fsstore.TimeOf(now.Add(d)), nil
}
