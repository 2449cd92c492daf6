package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// benchStore writes a finished log of n tasks, a minute apart, as Finish
// writes it, one whole record a line, without a sync per line, and makes
// its index with a first lookup. With logs, each task has its (empty)
// output log beside, as a finished task has, which a listing of the
// directory reads. It returns the id of the oldest task.
func benchStore(b *testing.B, n int, logs bool) (*Store, string) {
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
		if logs {
			if err := os.WriteFile(s.LogPath(task.ID), nil, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(s.finishedPath(), buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Get(first); err != nil {
		b.Fatal(err)
	}
	return s, first
}

// BenchmarkShowOld resolves and reads the oldest of n finished tasks, as
// `tasks show ID` does: n=100000 costs at most 1.2x n=1000 (the finished
// index reads the log's last lines and one block, not the log).
func BenchmarkShowOld(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			s, first := benchStore(b, n, false)
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

// BenchmarkResolvePrefix resolves a unique prefix of the oldest of n
// finished tasks (its id without the random part), as `tasks show PREFIX`
// does; each task has its log, so that the listing of the record files
// costs what it does in a profile.
func BenchmarkResolvePrefix(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			s, first := benchStore(b, n, true)
			prefix := first[:len(first)-len("_a1b2c3")]
			for b.Loop() {
				if id, err := s.Resolve(prefix); err != nil || id != first {
					b.Fatalf("Resolve(%s) = %s, %v", prefix, id, err)
				}
			}
		})
	}
}

// BenchmarkResolveMiss resolves an id that no task has, the oldest task's
// id with another random part (a typo), as `tasks show` of it does.
func BenchmarkResolveMiss(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			s, first := benchStore(b, n, true)
			miss := first[:len(first)-len("a1b2c3")] + "zzzzzz"
			for b.Loop() {
				if _, err := s.Resolve(miss); !errors.Is(err, fsstore.ErrNotFound) {
					b.Fatalf("Resolve(%s): %v, want not found", miss, err)
				}
			}
		})
	}
}
