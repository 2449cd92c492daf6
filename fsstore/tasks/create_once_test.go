package tasks

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Racing runs with one key make one task, and only one of them is told to
// start it; a key whose task a crash cut off is made, with the recorded
// id, by the next run with the key.
func TestCreateOnce(t *testing.T) {
	s := NewStore(filepath.Join(t.TempDir(), "profiles", "default"), 10*time.Second, func(msg string) { t.Errorf("warning: %s", msg) })
	ids := make([]string, 8)
	made := make([]bool, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, m, err := s.CreateOnce("nightly", Task{Name: "backup", Command: []string{"true"}})
			if err != nil {
				t.Error(err)
			}
			ids[i], made[i] = task.ID, m
		}()
	}
	wg.Wait()
	starts := 0
	for i, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("ids %q", ids)
		}
		if made[i] {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("%d of 8 runs were told to start the task, want 1", starts)
	}

	// The crash: the key names a task whose files were never made.
	for _, path := range []string{s.docPath(ids[0]), s.runningMarker(ids[0]), s.LogPath(ids[0])} {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	task, m, err := s.CreateOnce("nightly", Task{Name: "backup", Command: []string{"true"}})
	if err != nil || !m || task.ID != ids[0] {
		t.Fatalf("after the crash: %s made %v, %v; want %s made", task.ID, m, err, ids[0])
	}
}
