// Command gentasks writes a profile's finished background tasks for
// benchmarks, in the task store's exact formats, much faster than the
// store would (no lock, no fsync, no rename: each file written once):
//
//	go run ./scripts/gentasks -home DIR -tasks N [-age 48h]
//
// Each task is an empty log DIR/profiles/<profile>/tasks/<id>.log and its
// record, as tasks.Store.Finish leaves it, as a line of .finished.jsonl, in
// the order the tasks finished (a finished task has no <id>.json); the
// .running directory exists and is empty. Tasks start a minute apart, each runs for
// a second, and the last one finished -age ago; one in ten failed.
// main_test.go proves the bytes are the store's; `hermes --home DIR fsck`
// passes on the result. The tasks directory must not hold tasks yet.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/tasks"
	"github.com/hermes/hermes/scripts/fixture"
)

// Interval is the time between the starts of two successive tasks, and
// Duration how long each runs.
const (
	Interval = time.Minute
	Duration = time.Second
)

func main() {
	home := flag.String("home", "", "hermes home (root) directory; required")
	profile := flag.String("profile", "default", "profile name")
	n := flag.Int("tasks", 1000, "number of finished tasks")
	age := flag.Duration("age", 48*time.Hour, "how long ago the last task finished")
	flag.Parse()
	if *home == "" || flag.NArg() > 0 || *n < 0 || *age < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := fsstore.CheckID("profile", *profile); err != nil {
		fmt.Fprintln(os.Stderr, "gentasks:", err)
		os.Exit(2)
	}
	dir := filepath.Join(*home, "profiles", *profile, "tasks")
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		fmt.Fprintf(os.Stderr, "gentasks: %s is not empty\n", dir)
		os.Exit(1)
	}
	t0 := time.Now()
	lastStart := t0.Add(-*age - Duration)
	start := lastStart.Add(-time.Duration(max(*n-1, 0)) * Interval)
	if err := Write(dir, Tasks(start, *n)); err != nil {
		fmt.Fprintln(os.Stderr, "gentasks:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "gentasks: %d finished tasks in %s (%.1fs)\n", *n, dir, time.Since(t0).Seconds())
}

// Spec is what a generated task ran and how it ended.
type Spec struct {
	ID       string
	Name     string
	Command  []string
	Cwd      string
	Started  time.Time
	Finished time.Time
	Status   string
	Exit     int
	// The host, pids and start times the supervisor would have recorded.
	Host                      string
	PID, SupervisorPID        int
	PIDStart, SupervisorStart string
}

// Tasks returns n task specs starting at start, Interval apart. Ids are
// time-ordered like fsstore.NewID, with the index in place of the random
// part, so they are unique and sort by creation.
func Tasks(start time.Time, n int) []Spec {
	specs := make([]Spec, n)
	for i := range specs {
		s := start.Add(time.Duration(i) * Interval)
		sp := Spec{
			ID:       s.UTC().Format("20060102_150405") + fmt.Sprintf("_%06x", i),
			Name:     fmt.Sprintf("job-%d", i%10),
			Command:  []string{"sh", "-c", fmt.Sprintf("echo task %d", i)},
			Cwd:      "/srv/work",
			Started:  s,
			Finished: s.Add(Duration),
			Status:   tasks.Succeeded,
			Host:     fsstore.ThisHost(),
			PID:      10000 + 2*(i%20000) + 1, SupervisorPID: 10000 + 2*(i%20000),
			PIDStart: fmt.Sprint(1000000 + i), SupervisorStart: fmt.Sprint(1000000 + i),
		}
		if i%10 == 9 {
			sp.Status, sp.Exit = tasks.Failed, 1
		}
		specs[i] = sp
	}
	return specs
}

// Record is the record tasks.Store leaves for a task that ran as
// spec says and whose log is empty.
func Record(sp Spec) tasks.Task {
	code := sp.Exit
	return tasks.Task{
		ID: sp.ID, Name: sp.Name, Command: sp.Command, Cwd: sp.Cwd, Host: sp.Host,
		PID: sp.PID, PIDStart: sp.PIDStart, SupervisorPID: sp.SupervisorPID, SupervisorStart: sp.SupervisorStart,
		StartedAt:  fsstore.TimeOf(sp.Started),
		FinishedAt: fsstore.TimeOf(sp.Finished),
		DurationMS: sp.Finished.Sub(sp.Started).Milliseconds(),
		Status:     sp.Status,
		ExitCode:   &code,
	}
}

// FinishedLine is the line of .finished.jsonl for a finished record (the
// record itself), with its newline.
func FinishedLine(t tasks.Task) ([]byte, error) {
	line, err := json.Marshal(t)
	return append(line, '\n'), err
}

// Write writes the tasks of specs, finished in their order, into dir, a
// store's tasks directory (<profile dir>/tasks).
func Write(dir string, specs []Spec) error {
	if err := fsstore.EnsureDir(filepath.Join(dir, ".running")); err != nil {
		return err
	}
	// File creation is the cost: spread it over the cores.
	if err := fixture.Each(len(specs), func(i int) error { return writeTask(dir, specs[i]) }); err != nil {
		return err
	}
	var b bytes.Buffer
	for _, sp := range specs {
		line, err := FinishedLine(Record(sp))
		if err != nil {
			return err
		}
		b.Write(line)
	}
	if err := os.WriteFile(filepath.Join(dir, ".finished.jsonl"), b.Bytes(), 0o600); err != nil {
		return err
	}
	return fsstore.SyncDir(dir)
}

func writeTask(dir string, sp Spec) error {
	return os.WriteFile(filepath.Join(dir, sp.ID+".log"), nil, 0o600)
}
