package supervisor

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/tasks"
)

// clock is a settable clock for a store's Now, and its monotonic clock
// (the time since the test began) for what the store watches of leases.
type clock struct{ start, now time.Time }

func (c *clock) Now() time.Time { return c.now }

func (c *clock) Uptime() time.Duration { return c.now.Sub(c.start) }

// hostStore is a store on host-b whose clock the test sets.
func hostStore(t *testing.T) (*tasks.Store, *clock) {
	t.Helper()
	store := newStore(t)
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	c := &clock{start: start, now: start}
	store.Now, store.Seen.Clock, store.Host = c.Now, c.Uptime, "host-b"
	return store, c
}

// createOn writes the record of a running task on host whose supervisor
// and command have pids spid and pid; host "" writes a record as hermes
// did before hosts were recorded.
func createOn(t *testing.T, store *tasks.Store, host string, spid, pid int) tasks.Task {
	t.Helper()
	task, err := store.Create(tasks.Task{Command: []string{"x"}, Host: host})
	if err != nil {
		t.Fatal(err)
	}
	task, err = store.Update(task.ID, func(t *tasks.Task) {
		t.Host = host
		t.SupervisorPID, t.SupervisorStart, t.PID, t.PIDStart = spid, startOf(spid), pid, startOf(pid)
	})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// startOf is the start time of pid, or a made-up one for a pid that is
// gone, as its record would hold.
func startOf(pid int) string {
	if start := ProcStart(pid); start != "" {
		return start
	}
	return "12345"
}

func status(t *testing.T, store *tasks.Store, id string) tasks.Task {
	t.Helper()
	task, err := store.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// A task of another host is judged by its lease, not by pids looked up
// here: pids that do not exist here leave it running while its lease is
// fresh, a heartbeat renews the lease, and it is lost only once this host
// has watched its heartbeat stay unchanged for a whole lease.
func TestReconcileForeignHost(t *testing.T) {
	store, c := hostStore(t)
	dead := deadPID(t)
	foreign := createOn(t, store, "host-a", dead, dead)

	if n, err := Reconcile(store); err != nil || n != 0 {
		t.Fatalf("Reconcile = %d, %v; want nothing lost", n, err)
	}
	if got := status(t, store, foreign.ID); got.Status != tasks.Running {
		t.Fatalf("a task of another host with a fresh lease is %s", got.Status)
	}
	// Its supervisor (on host-a) heartbeats; the watch starts again when
	// this host sees the new heartbeat.
	c.now = c.now.Add(tasks.Lease - time.Second)
	if err := store.Heartbeat(foreign.ID); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(tasks.Lease)
	if n, err := Reconcile(store); err != nil || n != 0 || status(t, store, foreign.ID).Status != tasks.Running {
		t.Fatalf("Reconcile after a heartbeat = %d, %v; status %s", n, err, status(t, store, foreign.ID).Status)
	}
	c.now = c.now.Add(tasks.Lease)
	if n, err := Reconcile(store); err != nil || n != 0 {
		t.Fatalf("Reconcile a lease after the heartbeat was seen = %d, %v; want nothing lost", n, err)
	}
	c.now = c.now.Add(time.Millisecond)
	if n, err := Reconcile(store); err != nil || n != 1 {
		t.Fatalf("Reconcile after the lease = %d, %v; want 1 lost", n, err)
	}
	lost := status(t, store, foreign.ID)
	if lost.Status != tasks.Lost || !strings.Contains(lost.Error, "host-a") || !strings.Contains(lost.Error, "heartbeat") {
		t.Fatalf("lost record %+v", lost)
	}

	// Pids that live here say nothing of another host's task either.
	self := os.Getpid()
	live := createOn(t, store, "host-a", self, self)
	if n, err := Reconcile(store); err != nil || n != 0 {
		t.Fatalf("Reconcile of a task of another host whose pids live here = %d, %v", n, err)
	}
	c.now = c.now.Add(tasks.Lease + time.Second)
	if n, err := Reconcile(store); err != nil || n != 1 || status(t, store, live.ID).Status != tasks.Lost {
		t.Fatalf("Reconcile of a task of another host whose pids live here = %d, %v", n, err)
	}
}

// A task of this host, and one whose record names no host (written before
// hosts were recorded), are judged by their pids: gone pids make them
// lost at once, whatever their lease.
func TestReconcileLocalByPID(t *testing.T) {
	store, _ := hostStore(t)
	dead := deadPID(t)
	local := createOn(t, store, "host-b", dead, dead)
	old := createOn(t, store, "", dead, dead)
	if got := status(t, store, old.ID); got.Host != "" {
		t.Fatalf("old record names host %q", got.Host)
	}
	self := os.Getpid()
	alive := createOn(t, store, "", self, self)
	if n, err := Reconcile(store); err != nil || n != 2 {
		t.Fatalf("Reconcile = %d, %v; want 2 lost", n, err)
	}
	for id, want := range map[string]string{local.ID: tasks.Lost, old.ID: tasks.Lost, alive.ID: tasks.Running} {
		if got := status(t, store, id); got.Status != want {
			t.Errorf("%s: %s, want %s", id, got.Status, want)
		}
	}
}

// Kill does not signal a pid of another host: it may be anything here.
func TestKillForeignHost(t *testing.T) {
	store, c := hostStore(t)
	live := startSleep(t)
	pid := live.Process.Pid
	task := createOn(t, store, "host-a", pid, pid)
	_, err := Kill(store, task.ID, syscall.SIGTERM, time.Second)
	if !errors.Is(err, fsstore.ErrRefused) || !strings.Contains(err.Error(), "host-a") {
		t.Fatalf("kill of another host's task: %v, want refused naming host-a", err)
	}
	if !Alive(pid, ProcStart(pid)) {
		t.Fatal("a local process with the pid was signalled")
	}
	if got := status(t, store, task.ID); got.Status != tasks.Running {
		t.Fatalf("task %s", got.Status)
	}
	// Once its lease has expired, it is lost, and says so.
	c.now = c.now.Add(tasks.Lease + time.Second)
	_, err = Kill(store, task.ID, syscall.SIGTERM, time.Second)
	if !errors.Is(err, fsstore.ErrRefused) || !strings.Contains(err.Error(), "already finished (lost)") {
		t.Fatalf("kill of another host's task past its lease: %v", err)
	}
}

// Supervise heartbeats its task's record while the command runs.
func TestSuperviseHeartbeats(t *testing.T) {
	store, c := hostStore(t)
	task := create(t, store, "sleep", "60")
	store.LeaseHeld(task.ID)
	c.now = c.now.Add(tasks.Lease + time.Hour)
	if store.LeaseHeld(task.ID) {
		t.Fatal("lease held before any heartbeat")
	}
	started := make(chan error, 1)
	done := make(chan tasks.Task, 1)
	go func() {
		final, _ := Supervise(Spec{Store: store, ID: task.ID, HeartbeatEvery: time.Millisecond, Started: func(err error) { started <- err }})
		done <- final
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	watchdog := time.After(10 * time.Second)
	for !store.LeaseHeld(task.ID) {
		select {
		case <-watchdog:
			t.Fatal("no heartbeat")
		case <-time.After(time.Millisecond):
		}
	}
	running := status(t, store, task.ID)
	syscall.Kill(-running.PID, syscall.SIGKILL)
	if got := <-done; got.Status != tasks.Killed {
		t.Fatalf("final %+v", got)
	}
}

// On its own host, a command that outlived its supervisor keeps its task
// running, and Reconcile renews the lease in the supervisor's stead, so
// that other hosts do not take the task for lost.
func TestReconcileRenewsOrphanLease(t *testing.T) {
	store, c := hostStore(t)
	live := startSleep(t)
	orphan := createOn(t, store, "host-b", deadPID(t), live.Process.Pid)
	c.now = c.now.Add(tasks.Lease + time.Hour)
	if n, err := Reconcile(store); err != nil || n != 0 {
		t.Fatalf("Reconcile = %d, %v", n, err)
	}
	if got := status(t, store, orphan.ID); got.Status != tasks.Running || !store.LeaseHeld(orphan.ID) {
		t.Fatalf("orphan %s, lease held %v", got.Status, store.LeaseHeld(orphan.ID))
	}
}
