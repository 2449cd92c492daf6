package fsstore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore/internal/seam"
)

// Lock takes an exclusive flock on the sidecar file path, creating it 0600
// if missing, and waits at most timeout for it. The sidecar is a
// well-known file that guards other files; it is never itself replaced by a
// rename, which would let two holders lock two different inodes. A holder
// may remove it (a session's delete removes the session's, fsck --repair
// one that no record has): a lock taken on a file that its path no longer
// names is let go and taken again on what the path names, so a waiter
// that opened the file before the removal never holds it beside the next
// holder. On success the caller must call unlock; on timeout the error is
// a *LockTimeoutError.
// A lock held by a process that died is free: the kernel drops flocks with
// the last descriptor.
func Lock(path string, timeout time.Duration) (unlock func(), err error) {
	return lock(path, timeout, nil, false)
}

// RLock is like Lock but takes a shared lock: readers that need a stable
// view (the size of a log as of the last complete write) take it briefly.
func RLock(path string, timeout time.Duration) (unlock func(), err error) {
	return lock(path, timeout, nil, true)
}

// LockUntil is like Lock, but a wait also ends when done closes (a tool
// call's ctx.Done(): Ctrl-C, a gateway client gone), with a
// *LockInterruptedError, which matches context.Canceled. A lock that is
// free is taken even if done has closed: only a wait is called off. A nil
// done never closes, which is Lock.
func LockUntil(path string, timeout time.Duration, done <-chan struct{}) (unlock func(), err error) {
	return lock(path, timeout, done, false)
}

// RLockUntil is like RLock, with LockUntil's done.
func RLockUntil(path string, timeout time.Duration, done <-chan struct{}) (unlock func(), err error) {
	return lock(path, timeout, done, true)
}

// RLock on a sidecar that is missing and cannot be made (IsReadOnly: a
// read-only copy of a profile, a directory the reader may not write)
// returns at once, without a lock: the reader reads what is complete, and
// a write in progress that it may meet looks like a torn tail, which it
// skips and reports. Lock in the same place fails, naming the lock.
func lock(path string, timeout time.Duration, done <-chan struct{}, shared bool) (_ func(), lockErr error) {
	if err := makeSidecar(path); err != nil {
		if shared && IsReadOnly(err) {
			return func() {}, nil
		}
		return nil, err
	}
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW))
	try := fl.TryLock
	if shared {
		try = fl.TryRLock
	}
	deadline := time.Now().Add(timeout)
	delay := 250 * time.Microsecond
	var nap *time.Timer
	var w *waiter
	for {
		ok, err := try()
		if errors.Is(err, syscall.ELOOP) {
			return nil, Refusedf("lock %s is a symlink; refusing to write through it", path)
		}
		if err != nil {
			return nil, &os.PathError{Op: "lock", Path: path, Err: err}
		}
		if ok {
			if namedBy(fl, path) {
				break
			}
			// The file was removed between its open and its lock (a
			// holder may remove it: see Lock): the inode locked guards
			// nothing now. Let it go and lock what the path names.
			fl.Unlock()
			continue
		}
		if !time.Now().Before(deadline) {
			return nil, &LockTimeoutError{Path: path, Timeout: timeout.String(), Holder: holderOf(path)}
		}
		// Held: an exclusive waiter records itself first, until the wait
		// ends, when lockErr is what it ended in (lock_waiters.go).
		if w == nil && !shared {
			w = joinWaiters(path)
			defer w.leave(&lockErr)
		}
		// Held: wait for it in the kernel (blockingWait), so that the
		// wait ends the moment the holder lets go. When too many waits
		// given up are still blocked, poll instead, with short sleeps
		// that keep the wake-up close to the release.
		unlock, err := blockingWait(path, shared, deadline, done)
		switch {
		case errors.Is(err, errWaitersFull):
		case err != nil:
			if _, timedOut := err.(*LockTimeoutError); timedOut {
				return nil, &LockTimeoutError{Path: path, Timeout: timeout.String(), Holder: holderOf(path)}
			}
			return nil, err
		case unlock != nil:
			if !shared {
				unlock = hold(path, unlock)
			}
			return unlock, nil
		default:
			continue // the file was removed under the wait: lock what the path names
		}
		d := min(delay, time.Until(deadline)+time.Millisecond)
		if nap == nil {
			nap = time.NewTimer(d)
			defer nap.Stop()
		} else {
			nap.Reset(d)
		}
		select {
		case <-done:
			return nil, &LockInterruptedError{Path: path}
		case <-nap.C:
		}
		delay = min(delay*2, maxLockPoll)
	}
	fixMode(path, fl.Stat)
	if shared {
		return func() { fl.Unlock() }, nil
	}
	return hold(path, func() { fl.Unlock() }), nil
}

// held maps the lock files this process holds exclusively to the token
// each holder wrote in its record: what CheckHeld compares the files with.
var held = struct {
	sync.Mutex
	tokens map[string]string
}{tokens: map[string]string{}}

// hold records this process as the holder of the lock at path (its file
// and held) and returns unlock, which forgets it and empties the file
// first: a lock file holds a record only while it is held, so that it
// costs no disk block at rest and names no one who let go.
func hold(path string, unlock func()) func() {
	f, token := recordHolder(path)
	if f == nil {
		return unlock
	}
	held.Lock()
	held.tokens[path] = token
	held.Unlock()
	return func() {
		held.Lock()
		if held.tokens[path] == token {
			delete(held.tokens, path)
		}
		held.Unlock()
		f.Truncate(0)
		f.Close()
		unlock()
	}
}

// guards reports whether the lock file lock guards the file at path: a
// lock X.lock guards the files X and X.* of its directory (a session's
// <id>.lock its <id>.json and <id>.jsonl, a log's <log>.lock the log), and
// .lock every file of its directory.
func guards(lock, path string) bool {
	if filepath.Dir(lock) != filepath.Dir(path) {
		return false
	}
	base, name := strings.TrimSuffix(filepath.Base(lock), ".lock"), filepath.Base(path)
	return base == "" || name == base || strings.HasPrefix(name, base+".")
}

// CheckHeld refuses a write to path when a lock this process holds over
// it (guards) was lost: its file, read again, holds another holder's
// token or none (another host or process took the lock since, and maybe
// let it go), or is gone. A lock file that cannot be read (the filesystem
// failing) is no refusal: the write will say what fails. It is the fence
// of a document's commit point, its rename (doc.go, "Fencing").
func CheckHeld(path string) error {
	held.Lock()
	var locks, tokens []string
	for lock, token := range held.tokens {
		if guards(lock, path) {
			locks, tokens = append(locks, lock), append(tokens, token)
		}
	}
	held.Unlock()
	for i, lock := range locks {
		rec, err := readHolder(lock)
		switch {
		case errors.Is(err, os.ErrNotExist), errors.Is(err, errNoHolder):
			return &LockLostError{Path: path, Lock: lock}
		case err != nil:
			continue
		case rec.Token != tokens[i]:
			return &LockLostError{Path: path, Lock: lock, Holder: rec.String()}
		}
	}
	return nil
}

// holderRecord is what a holder of an exclusive lock writes in the lock's
// file when it takes the lock, and empties when it lets go: who it is, so
// that a wait that times out can name it (a host cut off keeps its locks
// until the servers drop them), and its token (CheckHeld). It is not
// synced: a holder that dies leaves it, naming a holder that let go.
type holderRecord struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	At   Time   `json:"at"`
	// Token tells this holding from every other, of any process on any
	// host: what CheckHeld fences a write by.
	Token string `json:"token"`
}

func (h holderRecord) String() string {
	return fmt.Sprintf("pid %d on host %s at %s", h.PID, h.Host, h.At)
}

// maxHolderRecord bounds what is read of a lock's file.
const maxHolderRecord = 1 << 10

// recordHolder writes a holderRecord of this process, with a new token,
// in the lock file at path, which it holds, and returns the file, open to
// empty it when the lock is let go, and the token. A failure is no error
// (nil: the lock is not fenced, only not named; a full disk has no block
// for the record).
func recordHolder(path string) (*os.File, string) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, ""
	}
	var token [12]byte
	rand.Read(token[:])
	rec := holderRecord{Host: ThisHost(), PID: os.Getpid(), At: TimeOf(time.Now()), Token: hex.EncodeToString(token[:])}
	line, _ := json.Marshal(rec)
	line = append(line, '\n')
	if _, err := f.WriteAt(line, 0); err != nil {
		f.Truncate(0)
		f.Close()
		return nil, ""
	}
	return f, rec.Token
}

// readHolder reads the record of the lock file at path. The file is
// opened without blocking (a fifo in its place does not hang a message).
func readHolder(path string) (holderRecord, error) {
	var h holderRecord
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return h, err
	}
	defer f.Close()
	b := make([]byte, maxHolderRecord)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return h, err
	}
	line, _, _ := bytes.Cut(b[:n], []byte{'\n'})
	if len(bytes.TrimSpace(line)) == 0 {
		return h, errNoHolder
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, err
	}
	if h.PID <= 0 || h.Host == "" {
		return h, errNoHolder
	}
	return h, nil
}

// errNoHolder is a lock file that names no holder: not held, or held by
// a process that does not record itself.
var errNoHolder = errors.New("no holder recorded")

// holderOf is who the lock file at path says last took it, "" when it
// says nothing readable.
func holderOf(path string) string {
	h, err := readHolder(path)
	if err != nil {
		return ""
	}
	return h.String()
}

// fixMode makes a sidecar 0600: flock creates it 0600 less the umask,
// which may narrow it; the store's files are 0600 whatever the umask.
func fixMode(path string, stat func() (os.FileInfo, error)) {
	if fi, err := stat(); err == nil && fi.Mode().Perm() != FileMode {
		os.Chmod(path, FileMode)
	}
}

// maxBlockedWaits bounds the waits that block in the kernel at once,
// those given up (timed out, called off) included: a wait given up stays
// blocked, holding a descriptor, until the holder lets go, and then lets
// go at once. A long-running process (the gateway) whose callers keep
// giving up on a lock that is never let go would otherwise gather them
// without end; past the bound, waits poll.
const maxBlockedWaits = 256

var (
	blockedWaits   = make(chan struct{}, maxBlockedWaits)
	errWaitersFull = errors.New("lock: too many blocked waits")
)

// blockingWait waits for the lock on path in the kernel (flock without
// LOCK_NB), on a descriptor of its own, until deadline or done. It
// returns the unlock of the lock taken; nil and no error when the file
// was removed under the wait (the caller locks what the path names
// now); errWaitersFull when maxBlockedWaits are blocked. A blocking
// flock cannot be called off: a wait given up leaves its goroutine
// blocked, and when it gets the lock it lets go at once, for nobody.
func blockingWait(path string, shared bool, deadline time.Time, done <-chan struct{}) (func(), error) {
	select {
	case blockedWaits <- struct{}{}:
	default:
		return nil, errWaitersFull
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		<-blockedWaits
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // removed by its holder since the try: try again
		}
		if errors.Is(err, syscall.ELOOP) {
			return nil, Refusedf("lock %s is a symlink; refusing to write through it", path)
		}
		return nil, &os.PathError{Op: "lock", Path: path, Err: errors.Unwrap(err)}
	}
	how := unix.LOCK_EX
	if shared {
		how = unix.LOCK_SH
	}
	var (
		mu        sync.Mutex
		abandoned bool
	)
	got := make(chan error, 1)
	go func() {
		defer func() { <-blockedWaits }()
		var err error
		for {
			if err = unix.Flock(int(f.Fd()), how); !errors.Is(err, unix.EINTR) {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			f.Close() // lets the lock go, if taken
			return
		}
		got <- err
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var why error
	select {
	case err := <-got:
		return tookLock(f, path, err)
	case <-timer.C:
		why = &LockTimeoutError{Path: path}
	case <-done:
		why = &LockInterruptedError{Path: path}
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case err := <-got: // taken as the wait was given up: keep it
		return tookLock(f, path, err)
	default:
		abandoned = true
		return nil, why
	}
}

// tookLock is the end of a blocking wait on f: its unlock, or nil when
// path no longer names f's file (removed by its holder).
func tookLock(f *os.File, path string, err error) (func(), error) {
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "lock", Path: path, Err: err}
	}
	held, serr := f.Stat()
	named, lerr := os.Lstat(path)
	if serr == nil && (errors.Is(lerr, os.ErrNotExist) || lerr == nil && !os.SameFile(held, named)) {
		f.Close()
		return nil, nil
	}
	fixMode(path, f.Stat)
	return func() { f.Close() }, nil
}

// namedBy reports whether path still names the file fl has locked; when
// that cannot be told, it says yes, as a lock without the check would.
func namedBy(fl *flock.Flock, path string) bool {
	held, err := fl.Stat()
	if err != nil {
		return true
	}
	named, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	return err != nil || os.SameFile(held, named)
}

// makeSidecar creates the lock file at path, 0600, if it is missing.
func makeSidecar(path string) error {
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		return nil // there, or flock will say why not
	}
	f, err := seam.CreateLock(path)
	if errors.Is(err, os.ErrExist) {
		return nil // made meanwhile by another holder
	}
	if err != nil {
		return &os.PathError{Op: "lock", Path: path, Err: errors.Unwrap(err)}
	}
	return f.Close()
}

// IsReadOnly reports whether err comes from a file system or a directory
// that this process may not write: a read-only mount, missing permission.
func IsReadOnly(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// maxLockPoll is the longest sleep between two tries of a lock.
const maxLockPoll = 5 * time.Millisecond
