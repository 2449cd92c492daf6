package fsstore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waiterEnv names the lock that TestHelperLockWaiter waits for, when the
// test binary runs it as another process.
const waiterEnv = "HERMES_TEST_LOCK_WAITER"

// TestHelperLockWaiter is the other process of
// TestLockTimeoutNamesWaiter: it waits for the lock its environment names,
// says "took" when it holds it, and lets go when its stdin closes.
func TestHelperLockWaiter(t *testing.T) {
	path := os.Getenv(waiterEnv)
	if path == "" {
		t.Skip("run by TestLockTimeoutNamesWaiter")
	}
	unlock, err := Lock(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("took")
	io.Copy(io.Discard, os.Stdin)
	unlock()
}

// holdRaw takes the lock at path as a holder that writes no record: a
// grant that its waiter never learned of (a host cut off as the lock
// came to it), or a program that is not hermes.
func holdRaw(t *testing.T, path string) (release func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// TestLockTimeoutNamesWaiter: a lock held by a process that wrote no
// record is named, when a wait for it times out, by the other processes
// recorded as waiting for it (one of them may hold it unaware); a waiter
// that gives up leaves the record, one that takes the lock leaves it
// too, and its holder record names it.
func TestLockTimeoutNamesWaiter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	release := holdRaw(t, path)
	defer release()

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLockWaiter$")
	cmd.Env = append(os.Environ(), waiterEnv+"="+path, HostEnv+"=host-b")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		release()
		stdin.Close()
		cmd.Wait()
	}()
	other := fmt.Sprintf("pid %d on host host-b", cmd.Process.Pid)
	// The other process records itself before it blocks.
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(path + ".waiters"); strings.Contains(string(b), fmt.Sprintf(`"pid":%d`, cmd.Process.Pid)) {
			break
		}
		if i == 10000 {
			t.Fatal("the other waiter never recorded itself")
		}
		time.Sleep(time.Millisecond)
	}

	_, err = Lock(path, 20*time.Millisecond)
	var timeout *LockTimeoutError
	if !errors.As(err, &timeout) {
		t.Fatalf("Lock of a held lock = %v, want a *LockTimeoutError", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "held by a process that wrote no record; waiting for it when it was granted: "+other+", waiting since ") {
		t.Fatalf("error %q does not name the other waiter (%s)", msg, other)
	}
	if strings.Contains(msg, fmt.Sprintf("pid %d ", os.Getpid())) {
		t.Fatalf("error %q names the waiter that timed out", msg)
	}
	if b, _ := os.ReadFile(path + ".waiters"); strings.Contains(string(b), fmt.Sprintf(`"pid":%d`, os.Getpid())) {
		t.Fatalf("a waiter that gave up is still recorded: %s", b)
	}

	release()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "took" {
		t.Fatalf("the other process did not take the lock: %q", sc.Text())
	}
	h, err := readHolder(path)
	if err != nil || h.PID != cmd.Process.Pid || h.Host != "host-b" {
		t.Fatalf("holder record %+v, %v; want the waiter that took the lock", h, err)
	}
	if _, err := os.Lstat(path + ".waiters"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("waiters' record after its last waiter took the lock: %v; want none", err)
	}
}

// TestLockUncontendedNoWaiters: a lock taken at the first try leaves no
// waiters' record behind; a wait in the kernel (the lock held through
// another descriptor, as another process holds it) records itself until
// it takes the lock. A wait behind another taker of the same process is
// in the process's queue (lockqueue.go), not in the kernel, and its
// process is named by the holder record already.
func TestLockUncontendedNoWaiters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	unlock, err := Lock(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path + ".waiters"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("waiters' record of a lock taken at once: %v; want none", err)
	}
	unlock()
	unlock = holdRaw(t, path)
	got := make(chan error, 1)
	go func() {
		u, err := Lock(path, time.Minute)
		if err == nil {
			u()
		}
		got <- err
	}()
	for i := 0; ; i++ {
		if _, err := os.Lstat(path + ".waiters"); err == nil {
			break
		}
		if i == 10000 {
			t.Fatal("the waiter never recorded itself")
		}
		time.Sleep(time.Millisecond)
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path + ".waiters"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("waiters' record after the wait: %v; want none", err)
	}
}

// TestLockWaitersPruned: a waiter that joins the record drops from it
// the entries of processes of its own host that are gone (killed while
// they waited) and those older than a day, so that a timeout never names
// them.
func TestLockWaitersPruned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	release := holdRaw(t, path)
	defer release()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	old := TimeOf(time.Now().Add(-25 * time.Hour))
	rec := fmt.Sprintf(`{"host":%q,"pid":%d,"since":%q,"token":"a"}`+"\n"+`{"host":"host-c","pid":7,"since":%q,"token":"b"}`+"\n",
		ThisHost(), gone.Process.Pid, TimeOf(time.Now()), old)
	if err := os.WriteFile(path+".waiters", []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Lock(path, 10*time.Millisecond)
	if err == nil || strings.Contains(err.Error(), "waiting for it") {
		t.Fatalf("Lock = %v; want a timeout that names no waiter", err)
	}
	if _, err := os.Lstat(path + ".waiters"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("waiters' record of pruned entries only: %v; want none", err)
	}
}

// TestLockWaitersUnwritable: a waiters' record that cannot be written (a
// directory in its place) changes nothing of the lock: the wait takes it
// when it comes free, and a timeout names the holder.
func TestLockWaitersUnwritable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	if err := os.Mkdir(path+".waiters", 0o700); err != nil {
		t.Fatal(err)
	}
	unlock, err := Lock(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(path, 10*time.Millisecond); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("held by pid %d", os.Getpid())) {
		t.Fatalf("Lock = %v; want a timeout naming the holder", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := Lock(path, time.Minute)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
