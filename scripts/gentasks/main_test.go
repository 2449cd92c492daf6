package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/tasks"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// The generated files are byte for byte what tasks.Store writes for
// the same tasks, and the store reads them back.
func TestWriteMatchesTheStore(t *testing.T) {
	specs := Tasks(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), 12)
	root := t.TempDir()

	// The store, driven as the supervisor drives it.
	c := &clock{}
	store := tasks.NewStore(filepath.Join(root, "store"), 10*time.Second, func(msg string) { t.Error(msg) })
	store.Now = c.Now
	for _, sp := range specs {
		c.set(sp.Started)
		if _, err := store.Create(tasks.Task{ID: sp.ID, Name: sp.Name, Command: sp.Command, Cwd: sp.Cwd, SupervisorPID: sp.SupervisorPID, SupervisorStart: sp.SupervisorStart}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Update(sp.ID, func(t *tasks.Task) { t.PID, t.PIDStart = sp.PID, sp.PIDStart }); err != nil {
			t.Fatal(err)
		}
		c.set(sp.Finished)
		code := sp.Exit
		if _, _, err := store.Finish(sp.ID, func(t *tasks.Task) { t.Status, t.ExitCode = sp.Status, &code }); err != nil {
			t.Fatal(err)
		}
	}

	genDir := filepath.Join(root, "gen", "tasks")
	if err := Write(genDir, specs); err != nil {
		t.Fatal(err)
	}
	names := []string{".finished.jsonl"}
	for _, sp := range specs {
		names = append(names, sp.ID+".log")
		if _, err := os.Lstat(filepath.Join(genDir, sp.ID+".json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s.json: %v, want none (a finished record is its line)", sp.ID, err)
		}
	}
	for _, name := range names {
		want, err := os.ReadFile(filepath.Join(store.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(genDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs:\n--- gentasks\n%s\n--- store\n%s", name, got, want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(genDir, ".running")); len(entries) != 0 {
		t.Errorf("running markers: %v", entries)
	}

	// The store reads the generated tasks: history, newest first; Check
	// finds nothing.
	gen := tasks.NewStore(filepath.Join(root, "gen"), 10*time.Second, func(msg string) { t.Error(msg) })
	h, err := gen.History(tasks.HistoryOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range h {
		ids = append(ids, task.ID)
	}
	if want := []string{specs[11].ID, specs[10].ID, specs[9].ID}; !slices.Equal(ids, want) {
		t.Fatalf("history %v, want %v", ids, want)
	}
	if h[2].Status != tasks.Failed || *h[2].ExitCode != 1 {
		t.Fatalf("task 9: %+v", h[2])
	}
	findings, err := gen.Check(false, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Problem {
			t.Errorf("fsck: %+v", f)
		}
	}
}
