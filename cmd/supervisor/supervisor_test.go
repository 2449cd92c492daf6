package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/tasks"
)

// deadPID returns the pid of a process that has ended and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// startSleep starts a long sleep in its own process group and kills it
// when the test ends.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

func newStore(t *testing.T) *tasks.Store {
	t.Helper()
	return tasks.NewStore(filepath.Join(t.TempDir(), "profiles", "default"), 10*time.Second, func(msg string) { t.Log("warning:", msg) })
}

// create writes the record of a task to run argv, as `tasks run` does:
// this process stands in as its supervisor.
func create(t *testing.T, store *tasks.Store, argv ...string) tasks.Task {
	t.Helper()
	self := os.Getpid()
	task, err := store.Create(tasks.Task{Command: argv, Cwd: t.TempDir(), SupervisorPID: self, SupervisorStart: ProcStart(self)})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// A start time is fixed for a process's life, "" for a pid without one,
// and later for a process started later. It is a tick count on Linux,
// seconds and microseconds ("1700000000.123456") on macOS and FreeBSD.
func TestProcStart(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" && runtime.GOOS != "freebsd" {
		t.Skip("start times are read on Linux, macOS and FreeBSD only: go test ./cmd/supervisor/ there runs it")
	}
	self := os.Getpid()
	a := ProcStart(self)
	an, err := parseStart(a)
	if err != nil {
		t.Fatalf("ProcStart of this process: %q: %v", a, err)
	}
	time.Sleep(20 * time.Millisecond)
	if b := ProcStart(self); b != a {
		t.Fatalf("ProcStart changed: %q then %q", a, b)
	}
	if s := ProcStart(deadPID(t)); s != "" {
		t.Fatalf("ProcStart of a dead pid: %q", s)
	}
	for _, pid := range []int{0, -1, 1 << 30} {
		if s := ProcStart(pid); s != "" {
			t.Errorf("ProcStart(%d) = %q", pid, s)
		}
	}
	// A child started later started no earlier than this process.
	child := startSleep(t)
	c := ProcStart(child.Process.Pid)
	cn, err := parseStart(c)
	if err != nil || cn.Cmp(an) < 0 {
		t.Fatalf("child start %q, self %q", c, a)
	}
}

// parseStart reads a start time as a number: ticks, or seconds and six
// digits of microseconds.
func parseStart(s string) (*big.Int, error) {
	digits := s
	if sec, usec, ok := strings.Cut(s, "."); ok {
		if len(usec) != 6 {
			return nil, fmt.Errorf("%q: not six digits of microseconds", s)
		}
		digits = sec + usec
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok || n.Sign() < 0 {
		return nil, fmt.Errorf("%q is not a start time", s)
	}
	return n, nil
}

// A process that has exited but is not reaped yet (a zombie) has ended.
func TestProcStartOfZombie(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: go test ./cmd/supervisor/ on Linux runs it")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && bytes.HasPrefix(b[i+1:], []byte(" Z")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never became a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := ProcStart(pid); s != "" {
		t.Fatalf("ProcStart of a zombie: %q", s)
	}
}

func TestAlive(t *testing.T) {
	self := os.Getpid()
	start := ProcStart(self)
	if !Alive(self, start) {
		t.Fatal("this process is not alive")
	}
	// The pid reuse guard: the same pid with another start time is another
	// process.
	n, _ := strconv.ParseUint(start, 10, 64)
	for _, wrong := range []string{strconv.FormatUint(n+1, 10), strconv.FormatUint(n-1, 10), "", "-"} {
		if Alive(self, wrong) {
			t.Errorf("Alive(self, %q) is true", wrong)
		}
	}
	if Alive(0, start) || Alive(-1, start) {
		t.Error("Alive of a pid <= 0")
	}
	if Alive(deadPID(t), start) {
		t.Error("a dead pid is alive")
	}
}

func TestParseSignal(t *testing.T) {
	good := []struct {
		in   string
		want syscall.Signal
	}{
		{"TERM", syscall.SIGTERM}, {"SIGTERM", syscall.SIGTERM}, {"term", syscall.SIGTERM}, {"sigterm", syscall.SIGTERM},
		{"KILL", syscall.SIGKILL}, {"INT", syscall.SIGINT}, {"HUP", syscall.SIGHUP}, {"QUIT", syscall.SIGQUIT},
		{"USR1", syscall.SIGUSR1}, {"USR2", syscall.SIGUSR2}, {"STOP", syscall.SIGSTOP}, {"CONT", syscall.SIGCONT},
		{"ALRM", syscall.SIGALRM}, {"PIPE", syscall.SIGPIPE}, {"sigsegv", syscall.SIGSEGV}, {"ABRT", syscall.SIGABRT},
		{"SIG40", syscall.Signal(40)}, {"sig9", syscall.SIGKILL}, {"9", syscall.SIGKILL}, {"15", syscall.SIGTERM}, {"1", syscall.SIGHUP}, {"64", syscall.Signal(64)},
	}
	for _, c := range good {
		got, err := ParseSignal(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "BOGUS", "SIG", "0", "-9", "65", "1e3", "TERM ", "SIGSIGTERM", "9x"} {
		if got, err := ParseSignal(bad); err == nil {
			t.Errorf("ParseSignal(%q) = %v, want an error", bad, got)
		}
	}
	// SignalName and ParseSignal agree.
	for sig := syscall.Signal(1); sig < 65; sig++ {
		name := SignalName(sig)
		if !strings.HasPrefix(name, "SIG") {
			t.Errorf("SignalName(%d) = %q", sig, name)
		}
		if got, err := ParseSignal(name); err != nil || got != sig {
			t.Errorf("ParseSignal(SignalName(%d) = %q) = %v, %v", sig, name, got, err)
		}
	}
	for sig, want := range map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE", syscall.SIGSEGV: "SIGSEGV", syscall.Signal(40): "SIG40"} {
		if got := SignalName(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", sig, got, want)
		}
	}
}

func TestSuperviseOutcomes(t *testing.T) {
	cases := []struct {
		argv   []string
		status string
		code   int // -1: null
		signal string
		out    string
	}{
		{[]string{"true"}, tasks.Succeeded, 0, "", ""},
		{[]string{"false"}, tasks.Failed, 1, "", ""},
		{[]string{"sh", "-c", "echo out; echo err >&2; exit 42"}, tasks.Failed, 42, "", "out\nerr\n"},
		{[]string{"sh", "-c", "echo bye; kill -TERM $$"}, tasks.Killed, -1, "SIGTERM", "bye\n"},
		{[]string{"sh", "-c", "kill -KILL $$"}, tasks.Killed, -1, "SIGKILL", ""},
		{[]string{"sh", "-c", "kill -PIPE $$"}, tasks.Killed, -1, "SIGPIPE", ""},
		{[]string{"sh", "-c", "kill -40 $$"}, tasks.Killed, -1, "SIG40", ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.argv, " "), func(t *testing.T) {
			store := newStore(t)
			task := create(t, store, c.argv...)
			var out bytes.Buffer
			var startedErr []error
			final, err := Supervise(Spec{Store: store, ID: task.ID, Output: &out, Started: func(err error) { startedErr = append(startedErr, err) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(startedErr) != 1 || startedErr[0] != nil {
				t.Fatalf("Started called with %v", startedErr)
			}
			if final.Status != c.status || final.Signal != c.signal {
				t.Fatalf("final %+v", final)
			}
			if c.code < 0 && final.ExitCode != nil || c.code >= 0 && (final.ExitCode == nil || *final.ExitCode != c.code) {
				t.Fatalf("exit code %v, want %d", final.ExitCode, c.code)
			}
			if out.String() != c.out || final.OutputPreview != c.out || final.LogBytes != int64(len(c.out)) {
				t.Fatalf("output %q, preview %q, log_bytes %d; want %q", out.String(), final.OutputPreview, final.LogBytes, c.out)
			}
			onDisk, err := store.Get(task.ID)
			if err != nil || onDisk.Status != c.status || onDisk.FinishedAt == "" {
				t.Fatalf("record %+v %v", onDisk, err)
			}
			self := os.Getpid()
			if onDisk.SupervisorPID != self || onDisk.SupervisorStart != ProcStart(self) || onDisk.PID <= 0 || onDisk.PID == self {
				t.Fatalf("pids in the record: %+v", onDisk)
			}
			if ids, _ := store.Running(); len(ids) != 0 {
				t.Fatalf("markers left: %v", ids)
			}
			h, err := store.History(tasks.HistoryOptions{})
			if err != nil || len(h) != 1 || h[0].ID != task.ID {
				t.Fatalf("history %v %v", h, err)
			}
		})
	}
}

func TestSuperviseEnvAndCwd(t *testing.T) {
	store := newStore(t)
	task := create(t, store, "sh", "-c", `echo "$GREETING $HERMES_TASK_ID"; pwd`)
	final, err := Supervise(Spec{Store: store, ID: task.ID, Env: []string{"GREETING=hello", "PATH=" + os.Getenv("PATH")}})
	if err != nil || final.Status != tasks.Succeeded {
		t.Fatalf("%+v %v", final, err)
	}
	log, _ := os.ReadFile(store.LogPath(task.ID))
	wd, _ := filepath.EvalSymlinks(task.Cwd)
	want := "hello " + task.ID + "\n"
	if got := string(log); !strings.HasPrefix(got, want) || !strings.Contains(got, wd+"\n") && !strings.Contains(got, task.Cwd+"\n") {
		t.Fatalf("log %q, want %q and the cwd %s", got, want, task.Cwd)
	}
}

func TestSuperviseCannotStart(t *testing.T) {
	store := newStore(t)
	task := create(t, store, "no-such-command-for-hermes")
	var startedErr error
	var seen tasks.Task
	final, err := Supervise(Spec{Store: store, ID: task.ID, Env: os.Environ(), Started: func(err error) {
		startedErr = err
		// The caller hears of the failure once the record says so.
		seen, _ = store.Get(task.ID)
	}})
	if err == nil || startedErr == nil || !strings.Contains(err.Error(), "no-such-command-for-hermes") {
		t.Fatalf("err %v, started %v", err, startedErr)
	}
	if seen.Status != tasks.Failed {
		t.Fatalf("when Started was called the record said %q, want failed", seen.Status)
	}
	if final.Status != tasks.Failed || final.ExitCode == nil || *final.ExitCode != 127 || !strings.Contains(final.Error, "no-such-command-for-hermes") {
		t.Fatalf("final %+v", final)
	}
	// A directory that went away before the start.
	task = create(t, store, "true")
	if _, err := store.Update(task.ID, func(t *tasks.Task) { t.Cwd = filepath.Join(t.Cwd, "gone") }); err != nil {
		t.Fatal(err)
	}
	final, err = Supervise(Spec{Store: store, ID: task.ID})
	if err == nil || final.Status != tasks.Failed || *final.ExitCode != 127 {
		t.Fatalf("missing cwd: %+v %v", final, err)
	}
	// A task already finished is not run again.
	final, err = Supervise(Spec{Store: store, ID: task.ID})
	if err == nil && final.Status != tasks.Failed {
		t.Fatalf("second supervise: %+v %v", final, err)
	}
}

func TestReconcile(t *testing.T) {
	store := newStore(t)
	dead := deadPID(t)
	live := startSleep(t)
	livePID := live.Process.Pid
	self := os.Getpid()
	set := func(id string, spid int, sstart string, pid int, pstart string) {
		t.Helper()
		if _, err := store.Update(id, func(t *tasks.Task) {
			t.SupervisorPID, t.SupervisorStart, t.PID, t.PIDStart = spid, sstart, pid, pstart
		}); err != nil {
			t.Fatal(err)
		}
	}
	// gone: supervisor and command dead.
	gone := create(t, store, "x")
	mustWriteLog(t, store, gone.ID, "partial output\n")
	set(gone.ID, dead, "12345", dead, "12346")
	// orphan: supervisor dead, command alive.
	orphan := create(t, store, "x")
	set(orphan.ID, dead, "12345", livePID, ProcStart(livePID))
	// supervised: supervisor alive (this process), command not started yet.
	supervised := create(t, store, "x")
	// reused: both pids belong to live processes, but not the ones that
	// started the task (their start times differ).
	reused := create(t, store, "x")
	set(reused.ID, self, "1", livePID, "2")

	n, err := Reconcile(store)
	if err != nil || n != 2 {
		t.Fatalf("Reconcile = %d, %v; want 2 marked lost", n, err)
	}
	for id, want := range map[string]string{gone.ID: tasks.Lost, orphan.ID: tasks.Running, supervised.ID: tasks.Running, reused.ID: tasks.Lost} {
		got, err := store.Get(id)
		if err != nil || got.Status != want {
			t.Errorf("%s: %s %v, want %s", id, got.Status, err, want)
		}
	}
	lost, _ := store.Get(gone.ID)
	if lost.ExitCode != nil || lost.FinishedAt == "" || lost.OutputPreview != "partial output\n" || lost.LogBytes != 15 || !strings.Contains(lost.Error, "exit code is unknown") {
		t.Fatalf("lost record %+v", lost)
	}
	if b, _ := os.ReadFile(store.LogPath(gone.ID)); string(b) != "partial output\n" {
		t.Fatalf("log %q", b)
	}
	h, err := store.History(tasks.HistoryOptions{Status: tasks.Lost})
	if err != nil || len(h) != 2 {
		t.Fatalf("history of lost tasks: %v %v", h, err)
	}
	ids, _ := store.Running()
	if len(ids) != 2 {
		t.Fatalf("markers %v, want the orphan's and the supervised one's", ids)
	}
	// Again: nothing more to do, and nothing changes.
	before, _ := os.ReadFile(filepath.Join(store.Dir, gone.ID+".json"))
	if n, err := Reconcile(store); err != nil || n != 0 {
		t.Fatalf("second Reconcile = %d, %v", n, err)
	}
	if after, _ := os.ReadFile(filepath.Join(store.Dir, gone.ID+".json")); !bytes.Equal(before, after) {
		t.Fatal("a lost record changed")
	}
	// When the orphan's command dies, it is lost too.
	syscall.Kill(livePID, syscall.SIGKILL)
	live.Wait()
	if n, err := Reconcile(store); err != nil || n != 1 {
		t.Fatalf("Reconcile after the command died = %d, %v", n, err)
	}
	if got, _ := store.Get(orphan.ID); got.Status != tasks.Lost {
		t.Fatalf("orphan: %+v", got)
	}
	// A record that says finished but still has its marker: tidied, not
	// counted.
	if err := os.WriteFile(filepath.Join(store.Dir, ".running", gone.ID), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := Reconcile(store); err != nil || n != 0 {
		t.Fatalf("Reconcile with a stale marker = %d, %v", n, err)
	}
	if ids, _ := store.Running(); len(ids) != 1 || ids[0] != supervised.ID {
		t.Fatalf("markers %v", ids)
	}
}

func mustWriteLog(t *testing.T, store *tasks.Store, id, text string) {
	t.Helper()
	if err := os.WriteFile(store.LogPath(id), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// superviseInBackground runs Supervise for a new task of argv in a
// goroutine and returns the task once its command runs.
func superviseInBackground(t *testing.T, store *tasks.Store, argv ...string) (tasks.Task, <-chan tasks.Task) {
	t.Helper()
	task := create(t, store, argv...)
	started := make(chan error, 1)
	done := make(chan tasks.Task, 1)
	go func() {
		final, err := Supervise(Spec{Store: store, ID: task.ID, Started: func(err error) { started <- err }})
		if err != nil {
			t.Error(err)
		}
		done <- final
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	task, err := store.Get(task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return task, done
}

func TestKill(t *testing.T) {
	store := newStore(t)
	// The whole process group: a shell with a child in the background.
	pidFile := filepath.Join(t.TempDir(), "child")
	task, done := superviseInBackground(t, store, "sh", "-c", "sleep 60 & echo $! > "+pidFile+"; wait")
	var child int
	for deadline := time.Now().Add(5 * time.Second); child == 0; {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			t.Fatal("no child pid")
		}
		time.Sleep(10 * time.Millisecond)
	}
	childStart := ProcStart(child)
	final, err := Kill(store, task.ID, syscall.SIGTERM, 5*time.Second)
	if err != nil || final.Status != tasks.Killed || final.Signal != "SIGTERM" || final.ExitCode != nil {
		t.Fatalf("kill: %+v %v", final, err)
	}
	if got := <-done; got.Status != tasks.Killed {
		t.Fatalf("supervisor's record %+v", got)
	}
	if !waitGone(child, childStart, 5*time.Second) {
		t.Fatal("the child of the command survived")
	}
	// Killing it again is refused.
	if _, err := Kill(store, task.ID, syscall.SIGTERM, time.Second); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("second kill: %v, want refused", err)
	}
	if _, err := Kill(store, "19990101_000000_abcdef", syscall.SIGTERM, time.Second); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("kill of an unknown task: %v", err)
	}

	// A command that ignores TERM: SIGKILL after the grace.
	task, done = superviseInBackground(t, store, "sh", "-c", `trap "" TERM; echo ready; exec sleep 60`)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if b, _ := os.ReadFile(store.LogPath(task.ID)); string(b) == "ready\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never got ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t0 := time.Now()
	final, err = Kill(store, task.ID, syscall.SIGTERM, 300*time.Millisecond)
	if err != nil || final.Status != tasks.Killed || final.Signal != "SIGKILL" {
		t.Fatalf("kill with grace: %+v %v", final, err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Fatalf("SIGKILL after %s, before the grace", d)
	}
	<-done
}

// Supervise passes the signals that would end it (INT, TERM, HUP) to the
// command's process group, and records how the command ended.
func TestSuperviseForwardsSignals(t *testing.T) {
	store := newStore(t)
	_, done := superviseInBackground(t, store, "sleep", "60")
	// The test process is the supervisor: a TERM to it goes to the command.
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case final := <-done:
		if final.Status != tasks.Killed || final.Signal != "SIGTERM" {
			t.Fatalf("final %+v", final)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command outlived the forwarded TERM")
	}
}

// A task recorded as ended before its supervisor took it (its caller died
// before the supervisor wrote its pid, and a reader recorded it lost) is
// not run: a lost task's command never runs after the record says it
// ended.
func TestSuperviseRefusesEndedTask(t *testing.T) {
	store := newStore(t)
	marker := filepath.Join(t.TempDir(), "ran")
	task := create(t, store, "touch", marker)
	if _, _, err := store.Finish(task.ID, func(t *tasks.Task) { t.Status, t.Error = tasks.Lost, "its caller died" }); err != nil {
		t.Fatal(err)
	}
	var startedErr []error
	final, err := Supervise(Spec{Store: store, ID: task.ID, Started: func(err error) { startedErr = append(startedErr, err) }})
	if err == nil || len(startedErr) != 1 || startedErr[0] == nil {
		t.Fatalf("Supervise of an ended task: %v, Started %v; want an error told to the caller", err, startedErr)
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("the command of an ended task ran")
	}
	if final.Status != tasks.Lost {
		t.Fatalf("the record became %+v, want it left lost", final)
	}
}
