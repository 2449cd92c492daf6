package cron

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/seam"
)

// clock is the test's time: every store of a test reads it.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newTestStore(t *testing.T, dir string, c *clock, host string) *Store {
	s := NewStore(dir, 5*time.Second, func(msg string) { t.Log("warn: " + msg) })
	s.Now, s.Host = c.Now, host
	return s
}

// tick is one tick as `hermes cron tick` makes it: claim what is due and
// run it at once with the outcome fate gives (nil: claim and never
// start, as a ticker killed after its claim).
func tick(t *testing.T, s *Store, fate func(Job) *Outcome) {
	t.Helper()
	ids, err := s.Due(s.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		for {
			c, ok, err := s.Claim(id)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			out := fate(c.Job)
			if out == nil {
				break
			}
			task := fsstore.NewID(s.Now())
			if _, err := s.Start(id, c.Occurrence, task, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Finish(id, c.Occurrence, *out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.RefreshIndex(ids); err != nil {
		t.Fatal(err)
	}
}

func succeed(Job) *Outcome { zero := 0; return &Outcome{Status: Succeeded, ExitCode: &zero} }

func add(t *testing.T, s *Store, name, schedule, catchUp string) Job {
	t.Helper()
	j, err := s.Add(Job{Name: name, Schedule: schedule, TZ: "UTC", Command: []string{"true"}, CatchUp: catchUp})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// events returns the runs log's events of job id, by kind.
func events(t *testing.T, s *Store, id string) map[string][]Event {
	t.Helper()
	m := map[string][]Event{}
	if err := s.Events(func(ev Event) {
		if ev.JobID == id {
			m[ev.Event] = append(m[ev.Event], ev)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// claimedOnce checks that no occurrence of job id was claimed twice, and
// returns the occurrences claimed.
func claimedOnce(t *testing.T, s *Store, id string) []fsstore.Time {
	t.Helper()
	seen := map[fsstore.Time]bool{}
	var occ []fsstore.Time
	for _, ev := range events(t, s, id)[Claimed] {
		if seen[ev.Occurrence] {
			t.Errorf("job %s: occurrence %s claimed twice", id, ev.Occurrence)
		}
		seen[ev.Occurrence] = true
		occ = append(occ, ev.Occurrence)
	}
	return occ
}

// TestSimulatedWeek drives two tickers on one profile through a week of
// ticks, three minutes apart, taking turns and sometimes ticking together: each
// occurrence of each job is claimed once, and none is missed.
func TestSimulatedWeek(t *testing.T) {
	t.Parallel()
	// The week tests which occurrences are claimed, not durability: its
	// thousands of syncs would only make it slow.
	dir := t.TempDir()
	seam.Install(t, dir, seam.Faults{Sync: func(*os.File) error { return nil }})
	c := &clock{time.Date(2026, 3, 23, 0, 0, 30, 0, time.UTC)}
	a, b := newTestStore(t, dir, c, "host-a"), newTestStore(t, dir, c, "host-b")
	hourly := add(t, a, "hourly", "0 * * * *", CatchUpOnce)
	weekday := add(t, b, "weekdays", "30 9 * * mon-fri", CatchUpOnce)
	often := add(t, a, "often", "every 47m", CatchUpOnce)
	end := c.now.Add(7 * 24 * time.Hour)
	for i := 0; c.now.Before(end); i++ {
		c.now = c.now.Add(3 * time.Minute)
		switch i % 3 {
		case 0:
			tick(t, a, succeed)
		case 1:
			tick(t, b, succeed)
		default:
			tick(t, b, succeed)
			tick(t, a, succeed)
		}
	}
	for _, tc := range []struct {
		job  Job
		want int
	}{{hourly, 7 * 24}, {weekday, 5}, {often, 7 * 24 * 60 / 47}} {
		occ := claimedOnce(t, a, tc.job.ID)
		if len(occ) != tc.want {
			t.Errorf("%s: %d occurrences claimed, want %d", tc.job.Name, len(occ), tc.want)
		}
		if n := len(events(t, a, tc.job.ID)["finished"]); n != len(occ) {
			t.Errorf("%s: %d finished, %d claimed", tc.job.Name, n, len(occ))
		}
	}
}

// TestCatchUp stops ticking for five hours and a half: an hourly job
// caught up once runs one occurrence standing for the five; none skips
// them (recorded) and runs nothing late; all runs each.
func TestCatchUp(t *testing.T) {
	for _, tc := range []struct {
		mode             string
		claimed, skipped int
		missed           int
	}{
		{CatchUpOnce, 2, 0, 4},
		{CatchUpNone, 1, 5, 0},
		{CatchUpAll, 6, 0, 0},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			c := &clock{time.Date(2026, 6, 1, 9, 59, 0, 0, time.UTC)}
			s := newTestStore(t, t.TempDir(), c, "h")
			j := add(t, s, "j", "0 * * * *", tc.mode)
			c.now = c.now.Add(90 * time.Second) // 10:00:30
			tick(t, s, succeed)
			c.now = c.now.Add(5*time.Hour + 30*time.Minute) // 15:30:30: 11:00 to 15:00 missed
			tick(t, s, succeed)
			ev := events(t, s, j.ID)
			if got := len(claimedOnce(t, s, j.ID)); got != tc.claimed {
				t.Errorf("claimed %d, want %d", got, tc.claimed)
			}
			skipped := 0
			for _, e := range ev[Skipped] {
				skipped += e.Missed
			}
			if skipped != tc.skipped {
				t.Errorf("skipped %d, want %d: %+v", skipped, tc.skipped, ev[Skipped])
			}
			if last := ev[Claimed][len(ev[Claimed])-1]; last.Missed != tc.missed {
				t.Errorf("last claim stands for %d missed, want %d", last.Missed, tc.missed)
			}
			j, err := s.Get(j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if j.NextDue != fsstore.TimeOf(time.Date(2026, 6, 1, 16, 0, 0, 0, time.UTC)) {
				t.Errorf("next due %s, want 16:00", j.NextDue)
			}
		})
	}
}

// TestFailurePause: three failed runs in a row pause the job, saying why;
// a paused job is not claimed; a success between failures resets the
// streak.
func TestFailurePause(t *testing.T) {
	c := &clock{time.Date(2026, 6, 1, 0, 0, 30, 0, time.UTC)}
	s := newTestStore(t, t.TempDir(), c, "h")
	j := add(t, s, "flaky", "every 1m", CatchUpOnce)
	codes := []int{1, 0, 2, 3, 4, 0, 0}
	n := 0
	fate := func(Job) *Outcome {
		code := codes[n]
		n++
		status := Succeeded
		if code != 0 {
			status = Failed
		}
		return &Outcome{Status: status, ExitCode: &code}
	}
	for i := 0; i < 6; i++ {
		c.now = c.now.Add(time.Minute)
		tick(t, s, fate)
	}
	if n != 5 {
		t.Errorf("%d runs, want 5 (paused after the third failure in a row)", n)
	}
	j, err := s.Get(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !j.Paused || j.FailureStreak != 3 || !strings.Contains(j.PausedReason, "3 failed runs in a row") || !strings.Contains(j.PausedReason, "exit code 4") {
		t.Errorf("paused %v, streak %d, reason %q", j.Paused, j.FailureStreak, j.PausedReason)
	}
	if ids, _ := s.Due(c.now.Add(time.Hour)); len(ids) != 0 {
		t.Errorf("a paused job is in the due index: %v", ids)
	}
}

// TestLostClaim: a ticker killed between its claim and the start leaves
// the occurrence claimed; a tick within the lease leaves it be; a tick
// after it records it lost, and it is never run; the next occurrence runs.
func TestLostClaim(t *testing.T) {
	c := &clock{time.Date(2026, 6, 1, 9, 59, 30, 0, time.UTC)}
	s := newTestStore(t, t.TempDir(), c, "h")
	j := add(t, s, "j", "0 * * * *", CatchUpOnce)
	c.now = c.now.Add(time.Minute)
	tick(t, s, func(Job) *Outcome { return nil })
	c.now = c.now.Add(30 * time.Second)
	tick(t, s, succeed)
	if ev := events(t, s, j.ID); len(ev[Lost]) != 0 || len(ev[Started]) != 0 {
		t.Fatalf("within the lease: %+v", ev)
	}
	// The due index brings a tick to the job when the lease ends, long
	// before its next occurrence.
	c.now = c.now.Add(ClaimLease)
	if ids, _ := s.Due(c.now); len(ids) != 1 {
		t.Fatalf("due after the lease: %v", ids)
	}
	tick(t, s, succeed)
	ev := events(t, s, j.ID)
	if len(ev[Lost]) != 1 || ev[Lost][0].Occurrence != fsstore.TimeOf(time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("lost: %+v", ev[Lost])
	}
	if len(ev[Started]) != 0 {
		t.Fatalf("the lost occurrence ran: %+v", ev[Started])
	}
	// Its ticker, back, may not start it.
	if _, err := s.Start(j.ID, ev[Lost][0].Occurrence, "t", ""); !errors.Is(err, fsstore.ErrRefused) {
		t.Errorf("start after lost: %v", err)
	}
	c.now = time.Date(2026, 6, 1, 11, 0, 5, 0, time.UTC)
	tick(t, s, succeed)
	if got := claimedOnce(t, s, j.ID); len(got) != 2 {
		t.Errorf("claimed %v", got)
	}
	if n := len(events(t, s, j.ID)["finished"]); n != 1 {
		t.Errorf("finished %d, want 1", n)
	}
}

// TestStartedTaskEnded: a started run whose task ended without recording
// it (its ticker died) is recorded with the task's outcome by the next
// tick that looks at the job.
func TestStartedTaskEnded(t *testing.T) {
	c := &clock{time.Date(2026, 6, 1, 9, 59, 30, 0, time.UTC)}
	s := newTestStore(t, t.TempDir(), c, "h")
	j := add(t, s, "j", "0 * * * *", CatchUpOnce)
	c.now = c.now.Add(time.Minute)
	cl, ok, err := s.Claim(j.ID)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := s.Start(j.ID, cl.Occurrence, "task1", ""); err != nil {
		t.Fatal(err)
	}
	running := true
	s.TaskOutcome = func(id string) (Outcome, bool, error) {
		if id != "task1" {
			return Outcome{}, false, fsstore.NotFoundf("task %s not found", id)
		}
		return Outcome{Status: Killed}, !running, nil
	}
	c.now = c.now.Add(time.Hour)
	tick(t, s, succeed)
	if ev := events(t, s, j.ID); len(ev[Claimed]) != 1 {
		t.Fatalf("a job whose run still runs was claimed again: %+v", ev[Claimed])
	}
	running = false
	tick(t, s, succeed)
	ev := events(t, s, j.ID)
	if len(ev["finished"]) != 2 || ev["finished"][0].Status != Killed {
		t.Fatalf("finished: %+v", ev["finished"])
	}
	if j, _ := s.Get(j.ID); j.FailureStreak != 0 || j.LastRun.Status != Succeeded {
		t.Errorf("job after: %+v", j)
	}
}

// TestDueIndex: the index names only due jobs, is repaired from the
// documents by fsck, and rebuilt by a tick that finds it unreadable.
func TestDueIndex(t *testing.T) {
	dir := t.TempDir()
	c := &clock{time.Date(2026, 6, 1, 9, 0, 30, 0, time.UTC)}
	s := newTestStore(t, dir, c, "h")
	early := add(t, s, "early", "10 9 * * *", CatchUpOnce)
	add(t, s, "late", "0 18 * * *", CatchUpOnce)
	c.now = c.now.Add(10 * time.Minute)
	if ids, err := s.Due(c.now); err != nil || fmt.Sprint(ids) != fmt.Sprint([]string{early.ID}) {
		t.Fatalf("due %v %v", ids, err)
	}
	if err := s.writeIndex(map[string]fsstore.Time{}); err != nil {
		t.Fatal(err)
	}
	f, err := s.Check(false, t.TempDir())
	if err != nil || len(f) != 1 || !f[0].Problem {
		t.Fatalf("check of an emptied index: %+v %v", f, err)
	}
	if f, err := s.Check(true, t.TempDir()); err != nil || len(f) != 1 || !f[0].Repaired {
		t.Fatalf("repair: %+v %v", f, err)
	}
	if f, err := s.Check(false, t.TempDir()); err != nil || len(f) != 0 {
		t.Fatalf("after repair: %+v %v", f, err)
	}
	if err := fsstore.WriteFileAtomic(s.duePath(), []byte("{\"due\": [ {")); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.Due(c.now); err != nil || len(ids) != 1 {
		t.Fatalf("due from a torn index: %v %v", ids, err)
	}
}

func TestAddInvalid(t *testing.T) {
	c := &clock{time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
	s := newTestStore(t, t.TempDir(), c, "h")
	add(t, s, "taken", "@daily", "")
	for _, j := range []Job{
		{Name: "", Schedule: "@daily", Command: []string{"true"}},
		{Name: "x", Schedule: "@often", Command: []string{"true"}},
		{Name: "x", Schedule: "@daily"},
		{Name: "x", Schedule: "@daily", Command: []string{"true"}, Prompt: "hi"},
		{Name: "x", Schedule: "@daily", Command: []string{"true"}, CatchUp: "some"},
		{Name: "x", Schedule: "@daily", Command: []string{"true"}, Session: "continue"},
		{Name: "x", Schedule: "@daily", Command: []string{"true"}, TZ: "Mars/Olympus"},
		{Name: "x", Schedule: "at 2026-01-01 10:00", Command: []string{"true"}},
	} {
		if _, err := s.Add(j); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("Add(%+v) = %v, want ErrInvalid", j, err)
		}
	}
	if _, err := s.Add(Job{Name: "taken", Schedule: "@daily", Command: []string{"true"}}); !errors.Is(err, fsstore.ErrRefused) {
		t.Errorf("a second job named taken: %v", err)
	}
	if jobs, _ := s.List(); len(jobs) != 1 {
		t.Errorf("%d jobs after refused adds", len(jobs))
	}
}

// TestStartedNeverMade: a ticker killed after recording the start, before
// making the task, leaves a run whose task does not exist; even with the
// job paused meanwhile, the due index brings a tick to it when the lease
// ends, and the tick records it lost.
func TestStartedNeverMade(t *testing.T) {
	c := &clock{time.Date(2026, 6, 1, 9, 59, 30, 0, time.UTC)}
	s := newTestStore(t, t.TempDir(), c, "h")
	s.TaskOutcome = func(id string) (Outcome, bool, error) {
		return Outcome{}, false, fsstore.NotFoundf("task %s not found", id)
	}
	j := add(t, s, "j", "@daily", CatchUpOnce)
	cl, err := s.ClaimNow(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(j.ID, cl.Occurrence, "never", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(j.ID, func(j *Job) error { j.Paused = true; return nil }); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(ClaimLease / 2)
	tick(t, s, succeed)
	if ev := events(t, s, j.ID); len(ev[Lost]) != 0 {
		t.Fatalf("lost within the lease: %+v", ev[Lost])
	}
	c.now = c.now.Add(ClaimLease)
	if ids, _ := s.Due(c.now); len(ids) != 1 {
		t.Fatalf("due after the lease: %v", ids)
	}
	tick(t, s, succeed)
	ev := events(t, s, j.ID)
	if len(ev[Lost]) != 1 || !strings.Contains(ev[Lost][0].Error, "never made") {
		t.Fatalf("lost: %+v", ev[Lost])
	}
	if ids, _ := s.Due(c.now.Add(48 * time.Hour)); len(ids) != 0 {
		t.Errorf("a paused job with no run left is due: %v", ids)
	}
}

// TestRunsFoldsUncommittedClaim: a ticker killed between its claimed line
// and the document leaves a line that the next claim repeats; cron runs
// shows the occurrence once, as the committed claim left it.
func TestRunsFoldsUncommittedClaim(t *testing.T) {
	c := &clock{time.Date(2026, 6, 1, 9, 59, 30, 0, time.UTC)}
	s := newTestStore(t, t.TempDir(), c, "h")
	j := add(t, s, "j", "0 * * * *", CatchUpOnce)
	c.now = c.now.Add(time.Minute)
	occ := fsstore.TimeOf(time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC))
	cut := Event{Event: Claimed, JobID: j.ID, Occurrence: occ, At: fsstore.TimeOf(c.now), Host: "killed", PID: 1}
	if err := s.appendEvents([]Event{cut}, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	tick(t, s, succeed)
	runs, err := s.Runs(j.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Status != Succeeded || runs[0].Host != "h" {
		t.Fatalf("runs: %+v", runs)
	}
}

// TestStartNotWrittenIsLost: a start that cannot be written (a full disk)
// records the claim lost at once, under the same lock, rather than
// leaving it to ClaimLease; the next occurrence runs. When the disk stays
// full the claim is left to the lease, as a ticker killed there.
func TestStartNotWrittenIsLost(t *testing.T) {
	t.Parallel()
	full := &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
	for _, tc := range []struct {
		name  string
		fails int // writes that fail, from the start's first
		lost  bool
	}{
		{"one write fails", 1, true},
		{"the disk stays full", 1 << 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{time.Date(2026, 6, 1, 9, 59, 30, 0, time.UTC)}
			s := newTestStore(t, t.TempDir(), c, "h")
			j := add(t, s, "j", "0 * * * *", CatchUpOnce)
			c.now = c.now.Add(time.Minute)
			cl, ok, err := s.Claim(j.ID)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			fails := tc.fails
			seam.Install(t, s.Dir, seam.Faults{Write: func(f *os.File, b []byte) (int, error) {
				if fails > 0 {
					fails--
					return 0, full
				}
				return f.Write(b)
			}})
			_, err = s.Start(j.ID, cl.Occurrence, "task1", "")
			fails = 0
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("start: %v", err)
			}
			got, err := s.Get(j.ID)
			if err != nil {
				t.Fatal(err)
			}
			ev := events(t, s, j.ID)
			if len(ev[Started]) != 0 {
				t.Fatalf("started: %+v", ev[Started])
			}
			if !tc.lost {
				if got.Run == nil || len(ev[Lost]) != 0 {
					t.Fatalf("claim not left to the lease: run %+v, lost %+v", got.Run, ev[Lost])
				}
				return
			}
			if got.Run != nil || got.LastRun == nil || got.LastRun.Status != Lost {
				t.Fatalf("job after: run %+v, last run %+v", got.Run, got.LastRun)
			}
			if len(ev[Lost]) != 1 || ev[Lost][0].Occurrence != cl.Occurrence || ev[Lost][0].TaskID != "" ||
				!strings.Contains(ev[Lost][0].Error, "no space left") {
				t.Fatalf("lost: %+v", ev[Lost])
			}
			c.now = time.Date(2026, 6, 1, 11, 0, 5, 0, time.UTC)
			tick(t, s, succeed)
			if got := claimedOnce(t, s, j.ID); len(got) != 2 {
				t.Errorf("claimed %v", got)
			}
		})
	}
}
