package sessions

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// The tests in this file run the test binary again as helper processes
// (storetest.HelperCommand), so that locks are proved across processes,
// not only across goroutines.

// TestHelperAppender is not a test: it is the helper process of
// TestConcurrentProcessAppends. It opens a Store on the given
// profile directory and appends N messages, one per call, tagged
// "<tag>:<i>".
func TestHelperAppender(t *testing.T) {
	if os.Getenv(storetest.HelperRoleEnv) != "appender" {
		t.Skip("helper process of TestConcurrentProcessAppends, which runs it")
	}
	n, err := strconv.Atoi(os.Getenv(storetest.HelperNEnv))
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(os.Getenv(storetest.HelperDirEnv), "default", 5*time.Minute, func(msg string) {
		fmt.Fprintln(os.Stderr, "warning:", msg)
	})
	id, tag := os.Getenv(storetest.HelperIDEnv), os.Getenv(storetest.HelperTagEnv)
	for i := range n {
		if _, err := s.Append(id, []Message{textMsg("user", fmt.Sprintf("%s:%d", tag, i))}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

// TestHelperLocker is not a test: it is the helper process of the lock
// tests. It takes the lock at $FSSTORE_TEST_LOCK, says "locked" on stdout,
// and holds the lock until its stdin closes or it is killed.
func TestHelperLocker(t *testing.T) {
	if os.Getenv(storetest.HelperRoleEnv) != "locker" {
		t.Skip("helper process of the lock tests, which run it")
	}
	unlock, err := fsstore.Lock(os.Getenv(storetest.HelperLockEnv), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
}

// startLocker starts a helper process that holds the lock at path. It
// returns once the lock is held; closing stdin releases it.
func startLocker(t *testing.T, path string) (cmd *exec.Cmd, stdin io.WriteCloser) {
	t.Helper()
	cmd = storetest.HelperCommand(t, "TestHelperLocker", storetest.HelperRoleEnv+"=locker", storetest.HelperLockEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("locker helper said %q (%v), want \"locked\"", line, err)
	}
	return cmd, stdin
}

// TestConcurrentProcessAppends runs 8 processes that each append 200
// messages, one per call, to one session. Every message must be there
// exactly once, numbered 1…1600 without a gap or a duplicate, each
// process's messages in the order it wrote them, and the document must
// count them all.
func TestConcurrentProcessAppends(t *testing.T) {
	const procs, each = 8, 200
	if testing.Short() {
		t.Skip("-short: starts 8 processes that make 1,600 synced appends; go test ./fsstore/sessions/ (without -short) runs it")
	}
	s, _, _ := newTestStore(t)
	profileDir := strings.TrimSuffix(s.Dir, "/sessions")
	id := mustCreate(t, s, "shared")

	cmds := make([]*exec.Cmd, procs)
	outs := make([]*strings.Builder, procs)
	for p := range cmds {
		cmds[p] = storetest.HelperCommand(t, "TestHelperAppender",
			storetest.HelperRoleEnv+"=appender", storetest.HelperDirEnv+"="+profileDir, storetest.HelperIDEnv+"="+id,
			fmt.Sprintf("%s=w%d", storetest.HelperTagEnv, p), fmt.Sprintf("%s=%d", storetest.HelperNEnv, each))
		outs[p] = &strings.Builder{}
		cmds[p].Stdout, cmds[p].Stderr = outs[p], outs[p]
		if err := cmds[p].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("appender %d: %v\n%s", p, err, outs[p])
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	msgs := readMessages(t, s, id)
	if len(msgs) != procs*each {
		t.Fatalf("%d messages, want %d", len(msgs), procs*each)
	}
	next := make([]int, procs) // the next index expected from each process
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i+1, m.Seq)
		}
		var p, k int
		if _, err := fmt.Sscanf(m.Text(), "w%d:%d", &p, &k); err != nil || p < 0 || p >= procs {
			t.Fatalf("message %d: unexpected text %q", i+1, m.Text())
		}
		if k != next[p] {
			t.Fatalf("message %d is %q; process %d's next message was %d (a loss, duplicate or reordering)", i+1, m.Text(), p, next[p])
		}
		next[p]++
	}
	for p, k := range next {
		if k != each {
			t.Errorf("process %d: %d messages stored, want %d", p, k, each)
		}
	}
	if got, err := s.Get(id); err != nil || got.MessageCount != procs*each {
		t.Errorf("Get says message_count %d (%v), want %d", got.MessageCount, err, procs*each)
	}
	if d := docOf(t, s, id); d.MessageCount > procs*each {
		t.Errorf("document says message_count %d, ahead of the transcript's %d", d.MessageCount, procs*each)
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Problem {
			t.Errorf("fsck: %s: %s", f.Path, f.What)
		}
	}
}

// TestLockHeldByAnotherProcess: while another process holds session A's
// lock, a writer to A fails after its timeout with a *LockTimeoutError
// naming A's lock file, a writer to B does not wait, and once the holder
// lets go, A can be written again.
func TestLockHeldByAnotherProcess(t *testing.T) {
	s, _, _ := newTestStore(t)
	a, b := mustCreate(t, s, "a"), mustCreate(t, s, "b")
	_, stdin := startLocker(t, s.lockPath(a))
	checkLockedOut(t, s, a, b)
	stdin.Close() // the helper unlocks and exits
	s.LockTimeout = time.Minute
	if _, err := s.Append(a, []Message{textMsg("user", "after the holder left")}); err != nil {
		t.Fatal(err)
	}
}

// TestLockHeldInThisProcess is TestLockHeldByAnotherProcess with the lock
// held through a second open file description in this process, which
// conflicts with the store's like another process's would.
func TestLockHeldInThisProcess(t *testing.T) {
	s, _, _ := newTestStore(t)
	a, b := mustCreate(t, s, "a"), mustCreate(t, s, "b")
	unlock, err := fsstore.Lock(s.lockPath(a), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	checkLockedOut(t, s, a, b)
	unlock()
	if _, err := s.Append(a, []Message{textMsg("user", "after the holder left")}); err != nil {
		t.Fatal(err)
	}
}

// checkLockedOut is called while a's lock is held elsewhere.
func checkLockedOut(t *testing.T, s *Store, a, b string) {
	t.Helper()
	before := storetest.MustRead(t, s.logPath(a))
	s.LockTimeout = 200 * time.Millisecond
	_, err := s.Append(a, []Message{textMsg("user", "must wait")})
	var lte *fsstore.LockTimeoutError
	if !errors.As(err, &lte) || lte.Path != s.lockPath(a) || !strings.Contains(err.Error(), s.lockPath(a)) {
		t.Fatalf("Append to the locked session: %v, want a *fsstore.LockTimeoutError naming %s", err, s.lockPath(a))
	}
	if got := storetest.MustRead(t, s.logPath(a)); string(got) != string(before) {
		t.Fatalf("the timed-out append wrote to the transcript")
	}

	// A writer to another session does not wait. The bound is a guard
	// against a hang, not a measure of speed.
	s.LockTimeout = time.Minute
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(b, []Message{textMsg("user", "does not wait")})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Append to the other session: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Append to session %s waited for the lock of session %s", b, a)
	}
}

// TestAppendWaitsForLockHolder: a writer blocks while another holds the
// lock (like lockedfile's mustBlock: it must not finish during a quiet
// period) and finishes once the lock is released, with its message after
// the holder's.
func TestAppendWaitsForLockHolder(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "a")
	s.LockTimeout = time.Minute
	unlock, err := fsstore.Lock(s.lockPath(id), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(id, []Message{textMsg("user", "waited")})
		done <- err
	}()
	const quiescent = 100 * time.Millisecond
	select {
	case err := <-done:
		unlock()
		t.Fatalf("Append finished (%v) while the lock was held", err)
	case <-time.After(quiescent):
	}
	unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Append still blocked a minute after the lock was released")
	}
	if msgs := readMessages(t, s, id); len(msgs) != 1 || msgs[0].Text() != "waited" {
		t.Fatalf("transcript %q", texts(msgs))
	}
}

// TestLockOfDeadProcessIsFree: a lock whose holder was killed with
// SIGKILL (no chance to unlock) is free: the kernel drops the flock with
// the holder's last descriptor, and no stale lock file blocks anyone.
func TestLockOfDeadProcessIsFree(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "a")
	cmd, _ := startLocker(t, s.lockPath(id))
	// The helper really holds it.
	if _, err := fsstore.Lock(s.lockPath(id), 50*time.Millisecond); err == nil {
		t.Fatal("took the lock while the helper held it")
	} else if lte := (*fsstore.LockTimeoutError)(nil); !errors.As(err, &lte) {
		t.Fatalf("Lock: %v, want a *fsstore.LockTimeoutError", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("helper exit: %v, want killed", err)
	}
	unlock, err := fsstore.Lock(s.lockPath(id), 10*time.Second)
	if err != nil {
		t.Fatalf("lock of a dead process: %v", err)
	}
	unlock()
	if _, err := s.Append(id, []Message{textMsg("user", "after the crash")}); err != nil {
		t.Fatal(err)
	}
}
