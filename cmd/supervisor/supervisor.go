package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/tasks"
)

// Spec is a task to supervise: its record exists (tasks.Store.Create)
// and says what to run.
type Spec struct {
	Store *tasks.Store
	ID    string
	// Env is the command's environment; HERMES_TASK_ID is added.
	Env []string
	// Output, when set, receives the log as it grows (run --wait).
	Output io.Writer
	// HeartbeatEvery is how often the task's lease is renewed while its
	// command runs; 0 is tasks.HeartbeatEvery.
	HeartbeatEvery time.Duration
	// Started is called once the command runs (err nil) or could not be
	// started (err names the task and what became of its record); the
	// background supervisor uses it to release its caller.
	Started func(err error)
}

// Supervise runs the task's command, records its pid, waits for it and
// records how it ended. It returns the task's final record. Signals that
// would end the supervisor (INT, TERM, HUP) are passed to the command's
// process group instead, so the command decides and the end is recorded.
func Supervise(spec Spec) (tasks.Task, error) {
	store := spec.Store
	started := spec.Started
	if started == nil {
		started = func(error) {}
	}
	self := os.Getpid()
	// When the command cannot start, the caller hears of it only once the
	// record says so (or, when not even that can be written, is gone):
	// whoever it tells reads a finished task, or none.
	cannotStart := func(err error) (tasks.Task, error) {
		final, ferr := fail(store, spec.ID, err)
		started(ferr)
		return final, ferr
	}
	t, err := store.Update(spec.ID, func(t *tasks.Task) {
		t.SupervisorPID, t.SupervisorStart = self, ProcStart(self)
	})
	if err != nil {
		return cannotStart(err)
	}
	if t.Finished() {
		// Recorded as ended before this supervisor took it: its caller
		// died before the supervisor's pid was written, and a reader
		// found neither alive. The record is the truth; the command
		// must not run after it says the task ended.
		err := fmt.Errorf("task %s was recorded %s before its supervisor started; not run", t.ID, t.Status)
		started(err)
		return t, err
	}
	log, err := os.OpenFile(store.LogPath(t.ID), os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return cannotStart(err)
	}
	defer log.Close()
	if len(t.Command) == 0 {
		return cannotStart(errors.New("no command"))
	}
	cmd := exec.Command(t.Command[0], t.Command[1:]...)
	cmd.Dir = t.Cwd
	cmd.Env = append(append([]string{}, spec.Env...), "HERMES_TASK_ID="+t.ID)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		return cannotStart(err)
	}
	pid := cmd.Process.Pid
	if _, err := store.Update(t.ID, func(t *tasks.Task) { t.PID, t.PIDStart = pid, ProcStart(pid) }); err != nil {
		// The command runs; its end is still recorded below.
		fmt.Fprintf(os.Stderr, "hermes: task %s: %v\n", t.ID, err)
	}
	started(nil)

	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				syscall.Kill(-pid, sig.(syscall.Signal))
			case <-done:
				return
			}
		}
	}()
	every := spec.HeartbeatEvery
	if every <= 0 {
		every = tasks.HeartbeatEvery
	}
	go heartbeat(store, t.ID, every, done)
	var tailed chan error
	if spec.Output != nil {
		tailed = make(chan error, 1)
		go func() { tailed <- follow(store.LogPath(t.ID), spec.Output, done) }()
	}
	waitErr := cmd.Wait()
	close(done)
	if tailed != nil {
		<-tailed
	}
	final, _, err := store.Finish(t.ID, func(t *tasks.Task) { setOutcome(t, cmd.ProcessState, waitErr) })
	return final, err
}

// heartbeat renews the lease of task id at each tick of every, until done is
// closed, so that other hosts, which cannot look up its pids, know it
// runs. A failure is reported once, until a heartbeat succeeds again.
func heartbeat(store *tasks.Store, id string, every time.Duration, done <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-tick.C:
			err := store.Heartbeat(id)
			if err != nil && !failing {
				fmt.Fprintf(os.Stderr, "hermes: task %s: %v\n", id, err)
			}
			failing = err != nil
		case <-done:
			return
		}
	}
}

// setOutcome fills in status, exit code and signal from how the process
// ended.
func setOutcome(t *tasks.Task, ps *os.ProcessState, waitErr error) {
	if ps == nil {
		t.Status, t.Error = tasks.Lost, fmt.Sprint(waitErr)
		return
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Status, t.Signal = tasks.Killed, SignalName(ws.Signal())
		return
	}
	code := ps.ExitCode()
	t.ExitCode = &code
	t.Status = tasks.Succeeded
	if code != 0 {
		t.Status = tasks.Failed
	}
}

// fail records a task whose command could not be started: failed, exit
// code 127 (as a shell reports a command it cannot run), the reason kept.
// When not even that can be recorded (a full disk), the record, which
// says the task runs, is discarded: nothing is left of a command that
// never ran.
func fail(store *tasks.Store, id string, cause error) (tasks.Task, error) {
	code := 127
	t, _, err := store.Finish(id, func(t *tasks.Task) {
		t.Status, t.ExitCode, t.Error = tasks.Failed, &code, cause.Error()
	})
	if err == nil {
		return t, fmt.Errorf("task %s: cannot start: %w", id, cause)
	}
	if derr := store.Discard(id); derr != nil {
		return t, errors.Join(cause, err, derr)
	}
	return tasks.Task{}, fmt.Errorf("task %s: cannot start: %w; recording that failed too (%w), so the task is not kept", id, cause, err)
}

// follow copies the file at path to w as it grows, until done is closed,
// then copies what is left and returns.
func follow(path string, w io.Writer, done <-chan struct{}) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
		select {
		case <-done:
			_, err := io.Copy(w, f)
			return err
		case <-tick.C:
		}
	}
}

// Follow is follow for `tasks log -f`: it copies the log of task id to w
// until the task has finished, then what is left.
func Follow(ctx context.Context, store *tasks.Store, id string, w io.Writer) error {
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- follow(store.LogPath(id), w, done) }()
	for {
		t, err := store.Get(id)
		if err != nil || t.Finished() {
			close(done)
			return errors.Join(err, <-errc)
		}
		if !alive(store, t) {
			Reconcile(store)
		}
		select {
		case <-ctx.Done():
			close(done)
			<-errc
			return ctx.Err()
		case err := <-errc:
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// alive reports whether task t runs, as far as this host can tell. On its
// own host, or when its record names none (written before hosts were
// recorded), its supervisor's and its command's pids say; on another, a
// pid means nothing here, and its lease says (tasks.Lease).
func alive(store *tasks.Store, t tasks.Task) bool {
	if store.Local(t) {
		return Alive(t.SupervisorPID, t.SupervisorStart) || Alive(t.PID, t.PIDStart)
	}
	return store.LeaseHeld(t.ID)
}

// Reconcile looks at every task whose record says running. On the task's
// own host, one whose supervisor has died (kill -9, a reboot) while its
// command still lives stays running, and Reconcile renews its lease in
// the supervisor's stead; one whose command is gone too is marked lost,
// with what is known: its log, and no exit code. A task of another host
// is marked lost only once its lease has expired. It returns how many it
// marked lost.
func Reconcile(store *tasks.Store) (int, error) {
	ids, err := store.Running()
	if err != nil {
		return 0, err
	}
	lost := 0
	for _, id := range ids {
		t, err := store.Get(id)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return lost, err
		}
		if t.Finished() {
			// A crash between the record and its marker: Finish tidies up.
			store.Finish(id, func(*tasks.Task) {})
			continue
		}
		// From its creation the record names a live supervisor: the caller
		// of tasks run stands in until the supervisor writes its own pid.
		if alive(store, t) {
			if store.Local(t) && t.Host != "" && !Alive(t.SupervisorPID, t.SupervisorStart) {
				if err := store.Heartbeat(id); err != nil {
					store.Warn(fmt.Sprintf("task %s: %v", id, err))
				}
			}
			continue
		}
		_, marked, err := store.Finish(id, func(t *tasks.Task) {
			if alive(store, *t) {
				return
			}
			t.Status = tasks.Lost
			if store.Local(*t) {
				t.Error = fmt.Sprintf("the supervisor (pid %d) and the command (pid %d) are gone; the exit code is unknown", t.SupervisorPID, t.PID)
			} else {
				t.Error = fmt.Sprintf("host %s sent no heartbeat for more than %ds; the exit code is unknown", t.Host, int(tasks.Lease.Seconds()))
			}
		})
		if err != nil {
			return lost, err
		}
		if marked {
			lost++
		}
	}
	return lost, nil
}

// Kill sends sig to the process group of task id's command and, if it still
// runs after grace, SIGKILL. It waits for the command to end and for its end
// to be recorded; if the supervisor is gone, it records the kill itself.
func Kill(store *tasks.Store, id string, sig syscall.Signal, grace time.Duration) (tasks.Task, error) {
	t, err := store.Get(id)
	if err != nil {
		return t, err
	}
	if t.Finished() {
		return t, fsstore.Refusedf("task %s has already finished (%s)", id, t.Status)
	}
	if !store.Local(t) {
		// One whose lease has expired (its host rebooted, say) is lost.
		Reconcile(store)
		if t, err = store.Get(id); err == nil && t.Finished() {
			return t, fsstore.Refusedf("task %s has already finished (%s)", id, t.Status)
		}
		return t, fsstore.Refusedf("task %s runs on host %s; kill it there", id, t.Host)
	}
	if !Alive(t.PID, t.PIDStart) {
		Reconcile(store)
		if t, err = store.Get(id); err == nil && t.Finished() {
			return t, fsstore.Refusedf("task %s has already finished (%s)", id, t.Status)
		}
		return t, fmt.Errorf("task %s: its command is not running (yet)", id)
	}
	syscall.Kill(-t.PID, sig)
	if !waitGone(t.PID, t.PIDStart, grace) {
		syscall.Kill(-t.PID, syscall.SIGKILL)
		sig = syscall.SIGKILL
		waitGone(t.PID, t.PIDStart, 5*time.Second)
	}
	// The supervisor records the end; wait for it a little.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if t, err = store.Get(id); err != nil || t.Finished() {
			return t, err
		}
		if !Alive(t.SupervisorPID, t.SupervisorStart) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t, _, err = store.Finish(id, func(t *tasks.Task) {
		t.Status, t.Signal = tasks.Killed, SignalName(sig)
	})
	return t, err
}

func waitGone(pid int, start string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for Alive(pid, start) {
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
