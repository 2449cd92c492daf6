package tasks

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// keysDir holds, for each idempotency key of tasks run --key, a file named
// by the key's SHA-256 that holds the id of the task the key made.
func (s *Store) keysDir() string { return filepath.Join(s.Dir, ".keys") }

// CreateOnce is Create for a task made at most once per key, as the
// board's CreateOnce: the first call with key records the new task's id
// under the key, synced (its commit point), then creates the task; a later
// one, racing or not, returns the task the key made and made=false, and
// its caller starts nothing; the key with another command is ErrInvalid.
// A crash between the two leaves the key naming a task not made yet,
// which the next call with the key makes, with that id. A task the key
// made is never made again: one whose supervisor never started is found
// lost by its readers, not run a second time.
func (s *Store) CreateOnce(key string, t Task) (task Task, made bool, err error) {
	if err := fsstore.CheckKey(key); err != nil {
		return Task{}, false, err
	}
	if err := s.ensureDirs(); err != nil {
		return Task{}, false, err
	}
	if err := fsstore.EnsureDir(s.keysDir()); err != nil {
		return Task{}, false, err
	}
	path := filepath.Join(s.keysDir(), fsstore.KeyName(key))
	unlock, err := fsstore.LockUntil(path+".lock", s.LockTimeout, s.Cancel)
	if err != nil {
		return Task{}, false, err
	}
	defer unlock()
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(data))
		if err := fsstore.CheckID("task id", id); err != nil {
			return Task{}, false, &fsstore.CorruptError{Path: path, Err: err}
		}
		task, err := s.Get(id)
		switch {
		case err == nil && !slices.Equal(task.Command, t.Command):
			return Task{}, false, fsstore.Invalidf("key %q was used before for another command (task %s)", key, id)
		case !errors.Is(err, fsstore.ErrNotFound):
			return task, false, err
		}
		t.ID = id
	case errors.Is(err, os.ErrNotExist):
		t.ID = fsstore.NewID(s.Now())
		if err := fsstore.WriteFileAtomic(path, []byte(t.ID+"\n")); err != nil {
			return Task{}, false, err
		}
		defer fsstore.SweepKeys(s.keysDir())
	default:
		return Task{}, false, err
	}
	task, err = s.Create(t)
	return task, err == nil, err
}
