package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// BenchmarkShowOld resolves and reads the oldest of n finished tasks, as
// `tasks show ID` does: n=100000 costs at most 1.2x n=1000 (the finished
// index reads the log's last lines and one block, not the log). The log is
// written as Finish writes it, one whole record a line, without a sync
// per line; the first lookup, before the timing, writes the index.
func BenchmarkShowOld(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			s := NewStore(filepath.Join(b.TempDir(), "profiles", "default"), 10*time.Second, func(msg string) { b.Errorf("warning: %s", msg) })
			if err := s.ensureDirs(); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now().Add(-time.Duration(n) * time.Minute)
			var buf bytes.Buffer
			var first string
			for i := range n {
				at := t0.Add(time.Duration(i) * time.Minute)
				task := Task{ID: fsstore.NewID(at), Name: fmt.Sprintf("job-%d", i), Command: []string{"sh", "-c", fmt.Sprintf("echo task %d", i)}, Cwd: "/srv/work",
					Status: Succeeded, ExitCode: new(int), StartedAt: fsstore.TimeOf(at), FinishedAt: fsstore.TimeOf(at.Add(time.Second)), DurationMS: 1000,
					OutputPreview: fmt.Sprintf("task %d\n", i)}
				if i == 0 {
					first = task.ID
				}
				line, _ := json.Marshal(task)
				buf.Write(line)
				buf.WriteByte('\n')
			}
			if err := os.WriteFile(s.finishedPath(), buf.Bytes(), 0o600); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Get(first); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				id, err := s.Resolve(first)
				if err != nil {
					b.Fatal(err)
				}
				if task, err := s.Get(id); err != nil || task.ID != first {
					b.Fatalf("Get(%s) = %s, %v", first, task.ID, err)
				}
			}
		})
	}
}
