package kanban

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// Racing creates with one key make one task; a key whose task a crash
// cut off is made with the recorded id by the next create with the key.
func TestCreateOnce(t *testing.T) {
	b, _, _ := kbBoard(t)
	b.Now = time.Now
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, err := b.CreateOnce("k1", Task{Title: "nightly"})
			if err != nil {
				t.Error(err)
			}
			ids[i] = task.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("ids %q", ids)
		}
	}
	all, _ := b.All()
	if len(all) != 1 || all[0].IdempotencyKey != "k1" {
		t.Fatalf("tasks %+v", all)
	}

	// The crash: the key's file names a task whose create never ran.
	b.Now = storetest.NewClock().Now
	task, err := b.CreateOnce("k2", Task{Title: "cut off"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{b.docPath(task.ID), b.eventsPath(task.ID), filepath.Join(b.openDir(), task.ID)} {
		os.Remove(f)
	}
	again, err := b.CreateOnce("k2", Task{Title: "cut off"})
	if err != nil || again.ID != task.ID {
		t.Fatalf("after the crash: %v, id %s, want %s", err, again.ID, task.ID)
	}
}
