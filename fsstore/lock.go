package fsstore

import (
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
	try, wait := fl.TryLock, fl.Lock
	if shared {
		try, wait = fl.TryRLock, fl.RLock
	}
	ok, err := try()
	if err != nil {
		return nil, &os.PathError{Op: "lock", Path: path, Err: err}
	}
	if !ok {
		if timeout <= 0 {
			return nil, &LockTimeoutError{Path: path, Timeout: timeout.String()}
		}
		// A blocking flock wakes the moment the holder lets go, which no
		// polling interval matches; a timer bounds the wait.
		done := make(chan error, 1)
		go func() { done <- wait() }()
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case err := <-done:
			if err != nil {
				return nil, &os.PathError{Op: "lock", Path: path, Err: err}
			}
		case <-timer.C:
			// The waiter may still get the lock later: it lets it go then.
			go func() {
				if <-done == nil {
					fl.Unlock()
				}
			}()
			return nil, &LockTimeoutError{Path: path, Timeout: timeout.String()}
		}
	}
	// flock creates the sidecar 0600 less the umask, which may narrow it;
	// the store's files are 0600 whatever the umask.
	if fi, err := fl.Stat(); err == nil && fi.Mode().Perm() != fileMode {
		os.Chmod(path, fileMode)
	}
	return func() { fl.Unlock() }, nil
}
