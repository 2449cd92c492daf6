package fsstore

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// Lock takes an exclusive flock on the sidecar file path, creating it 0600
// if missing, and waits at most timeout for it. The sidecar is a
// well-known file that guards other files; it is never itself replaced by a
// rename, which would let two holders lock two different inodes. On success
// the caller must call unlock; on timeout the error is a *LockTimeoutError.
// A lock held by a process that died is free: the kernel drops flocks with
// the last descriptor.
func Lock(path string, timeout time.Duration) (unlock func(), err error) {
	return lock(path, timeout, false)
}

// RLock is like Lock but takes a shared lock: readers that need a stable
// view (the size of a log as of the last complete write) take it briefly.
func RLock(path string, timeout time.Duration) (unlock func(), err error) {
	return lock(path, timeout, true)
}

func lock(path string, timeout time.Duration, shared bool) (func(), error) {
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW))
	try := fl.TryLock
	if shared {
		try = fl.TryRLock
	}
	// The wait polls: a blocking flock cannot be called off when the time
	// is up, and a waiter that got the lock after its caller gave up would
	// hold it for nobody. Short sleeps keep the wake-up close to the
	// holder's release.
	deadline := time.Now().Add(timeout)
	delay := 250 * time.Microsecond
	for {
		ok, err := try()
		if errors.Is(err, syscall.ELOOP) {
			return nil, Refusedf("lock %s is a symlink; refusing to write through it", path)
		}
		if err != nil {
			return nil, &os.PathError{Op: "lock", Path: path, Err: err}
		}
		if ok {
			break
		}
		if !time.Now().Before(deadline) {
			return nil, &LockTimeoutError{Path: path, Timeout: timeout.String()}
		}
		time.Sleep(min(delay, time.Until(deadline)+time.Millisecond))
		delay = min(delay*2, maxLockPoll)
	}
	// flock creates the sidecar 0600 less the umask, which may narrow it;
	// the store's files are 0600 whatever the umask.
	if fi, err := fl.Stat(); err == nil && fi.Mode().Perm() != FileMode {
		os.Chmod(path, FileMode)
	}
	return func() { fl.Unlock() }, nil
}

// maxLockPoll is the longest sleep between two tries of a lock.
const maxLockPoll = 5 * time.Millisecond
