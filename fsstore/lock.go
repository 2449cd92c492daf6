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
	"sync/atomic"
	"syscall"
	"time"

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
	return lock(path, timeout, nil, false, true)
}

// RLock is like Lock but takes a shared lock: readers that need a stable
// view (the size of a log as of the last complete write) take it briefly.
func RLock(path string, timeout time.Duration) (unlock func(), err error) {
	return lock(path, timeout, nil, true, false)
}

// LockUntil is like Lock, but a wait also ends when done closes (a tool
// call's ctx.Done(): Ctrl-C, a gateway client gone), with a
// *LockInterruptedError, which matches context.Canceled. A lock that is
// free is taken even if done has closed: only a wait is called off. A nil
// done never closes, which is Lock.
func LockUntil(path string, timeout time.Duration, done <-chan struct{}) (unlock func(), err error) {
	return lock(path, timeout, done, false, true)
}

// LockLogUntil is like LockUntil for a lock that guards logs alone and is
// held for one append (the activity catalog's, the gateway's history
// index): it writes no holder record. An append is fenced by its log's
// end, not by a token (doc.go, "Fencing"), and such a lock is held for
// microseconds, where the record's write and emptying were half of its
// cost; a wait that times out on it names the lock, not its holder. A
// change that renames a document under the same lock takes it with Lock,
// which records and fences it.
func LockLogUntil(path string, timeout time.Duration, done <-chan struct{}) (unlock func(), err error) {
	return lock(path, timeout, done, false, false)
}

// RLockUntil is like RLock, with LockUntil's done.
func RLockUntil(path string, timeout time.Duration, done <-chan struct{}) (unlock func(), err error) {
	return lock(path, timeout, done, true, false)
}

// RLock on a sidecar that is missing and cannot be made (IsReadOnly: a
// read-only copy of a profile, a directory the reader may not write)
// returns at once, without a lock: the reader reads what is complete, and
// a write in progress that it may meet looks like a torn tail, which it
// skips and reports. Lock in the same place fails, naming the lock. An
// exclusive lock records its holder when record is set (hold), and so
// does a wait for it in the lock's waiters' record (lock_waiters.go).
func lock(path string, timeout time.Duration, done <-chan struct{}, shared, record bool) (_ func(), lockErr error) {
	how := unix.LOCK_EX
	if shared {
		how = unix.LOCK_SH
	}
	deadline := time.Now().Add(timeout)
	// Held: an exclusive waiter that records its holding records itself
	// first, until the wait ends, when lockErr is what it ended in: after
	// its holder record is written if it took the lock.
	var w *waiter
	defer func() {
		if w != nil {
			w.leave(&lockErr)
		}
	}()
	join := func() {}
	if !shared && record {
		join = func() {
			if w == nil {
				w = joinWaiters(path)
			}
		}
	}
	for {
		fd, writable, err := openLock(path, shared || !record)
		if errors.Is(err, os.ErrNotExist) {
			if err := makeSidecar(path); err != nil {
				if shared && IsReadOnly(err) {
					return func() {}, nil
				}
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, lockError(path, err)
		}
		leave := func() {}
		if !shared {
			// Wait behind this process's other takers first (lockqueue.go).
			if leave, err = queue(&st, path, timeout, deadline, done); err != nil {
				unix.Close(fd)
				return nil, err
			}
		}
		if err := take(fd, path, how, timeout, deadline, done, join); err != nil {
			leave()
			return nil, err
		}
		if !namedBy(path, &st) {
			// The file was removed between its open and its lock (a
			// holder may remove it: see Lock): the inode locked guards
			// nothing now. Let it go and lock what the path names.
			release(fd)
			leave()
			continue
		}
		fixMode(fd, &st)
		if shared {
			return unlockOnce(func() { release(fd) }), nil
		}
		return hold(path, fd, writable, leave), nil
	}
}

// openLock opens the lock file at path, without following a symlink, to
// lock it: for writing unless readOnly (a shared lock, one without a
// record), so that the holder's record is written through the descriptor
// that holds the lock, and read-only where the file cannot be written
// (IsReadOnly: a read-only copy of a profile), where the lock is taken
// without a record, as a shared lock is.
func openLock(path string, readOnly bool) (fd int, writable bool, err error) {
	const flag = unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !readOnly {
		fd, err := seam.OpenLock(path, unix.O_RDWR|flag)
		if err == nil {
			return fd, true, nil
		}
		if !IsReadOnly(err) {
			return -1, false, lockError(path, err)
		}
	}
	fd, err = seam.OpenLock(path, unix.O_RDONLY|flag)
	if err != nil {
		return -1, false, lockError(path, err)
	}
	return fd, false, nil
}

// lockError is the error of a lock's open or flock call on path.
func lockError(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return Refusedf("lock %s is a symlink; refusing to write through it", path)
	}
	return &os.PathError{Op: "lock", Path: path, Err: err}
}

// take locks fd, the lock file at path, as how says (unix.LOCK_EX or
// LOCK_SH), waiting for it until deadline or done; join is called before
// a wait. On an error fd is closed, or left to a wait given up, which
// closes it.
func take(fd int, path string, how int, timeout time.Duration, deadline time.Time, done <-chan struct{}, join func()) error {
	delay := 250 * time.Microsecond
	var nap *time.Timer
	for {
		err := flock(fd, how|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			unix.Close(fd)
			return lockError(path, err)
		}
		if !time.Now().Before(deadline) {
			unix.Close(fd)
			return &LockTimeoutError{Path: path, Timeout: timeout.String(), Holder: holderOf(path)}
		}
		join() // the waiters' record (lock)
		// Held: wait for it in the kernel (blockingWait), so that the
		// wait ends the moment the holder lets go. When too many waits
		// given up are still blocked, poll instead, with short sleeps
		// that keep the wake-up close to the release.
		err = blockingWait(fd, path, how, deadline, done)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errWaitersFull):
		default:
			if _, timedOut := err.(*LockTimeoutError); timedOut {
				return &LockTimeoutError{Path: path, Timeout: timeout.String(), Holder: holderOf(path)}
			}
			return err
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
			unix.Close(fd)
			return &LockInterruptedError{Path: path}
		case <-nap.C:
		}
		delay = min(delay*2, maxLockPoll)
	}
}

// flock is flock(2) on fd, called again when a signal interrupts it.
func flock(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); err != unix.EINTR {
			return err
		}
	}
}

// unlockOnce returns an unlock that does f the first time it is called
// and nothing after: a deferred unlock after an explicit one must neither
// wait for the process's turn again (lockqueue.go) nor close a descriptor
// number that another file has been given since.
func unlockOnce(f func()) func() {
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			f()
		}
	}
}

// release lets the lock on fd go and closes it. The explicit unlock
// lets it go even while a child being started holds a copy of fd
// between its fork and its exec.
func release(fd int) {
	unix.Flock(fd, unix.LOCK_UN)
	unix.Close(fd)
}

// held maps the lock files this process holds exclusively to the token
// each holder wrote in its record: what CheckHeld compares the files with.
var held = struct {
	sync.Mutex
	tokens map[string]string
}{tokens: map[string]string{}}

// hold records this process as the holder of the lock on fd, the lock
// file at path open for writing when writable, in the file and in held,
// and returns unlock, which forgets it and empties the file first, lets
// the lock go, and then leaves the process's queue for it: a lock file
// holds a record only while it is held, so that it costs no disk block
// at rest and names no one who let go.
func hold(path string, fd int, writable bool, leave func()) func() {
	token := ""
	if writable {
		token = recordHolder(fd)
	}
	if token == "" {
		return unlockOnce(func() {
			release(fd)
			leave()
		})
	}
	held.Lock()
	held.tokens[path] = token
	held.Unlock()
	return unlockOnce(func() {
		held.Lock()
		if held.tokens[path] == token {
			delete(held.tokens, path)
		}
		held.Unlock()
		unix.Ftruncate(fd, 0)
		release(fd)
		leave()
	})
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
// through fd, the lock file it holds open for writing, and returns the
// token. A failure is no error ("": the lock is not fenced, only not
// named; a full disk has no block for the record).
func recordHolder(fd int) string {
	var token [12]byte
	rand.Read(token[:])
	line := append(holderPrefix(), TimeOf(time.Now())...)
	line = append(line, `","token":"`...)
	line = hex.AppendEncode(line, token[:])
	line = append(line, "\"}\n"...)
	if n, err := unix.Pwrite(fd, line, 0); err != nil || n != len(line) {
		unix.Ftruncate(fd, 0)
		return ""
	}
	return hex.EncodeToString(token[:])
}

// holderPrefix is a new copy of the start of this process's holder
// records (a holderRecord in JSON), up to its time: the host and the pid
// do not change, and encoding them at each lock was a tenth of its cost.
func holderPrefix() []byte {
	return append(make([]byte, 0, 160), holderStart()...)
}

var holderStart = sync.OnceValue(func() []byte {
	host, _ := json.Marshal(ThisHost())
	return fmt.Appendf(nil, `{"host":%s,"pid":%d,"at":"`, host, os.Getpid())
})

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

// fixMode makes a sidecar 0600, st its fd's stat: the sidecar is made
// 0600 less the umask, which may narrow it; the store's files are 0600
// whatever the umask.
func fixMode(fd int, st *unix.Stat_t) {
	if uint32(st.Mode)&0o777 != uint32(FileMode) {
		unix.Fchmod(fd, uint32(FileMode))
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

// blockingWait waits for the lock on fd, the lock file at path, in the
// kernel (flock without LOCK_NB), until deadline or done. It returns nil
// with the lock taken; errWaitersFull, fd still open, when
// maxBlockedWaits are blocked; else an error, fd closed or left to the
// wait given up. A blocking flock cannot be called off: a wait given up
// leaves its goroutine blocked, and when it gets the lock it lets go at
// once, for nobody, closing fd.
func blockingWait(fd int, path string, how int, deadline time.Time, done <-chan struct{}) error {
	select {
	case blockedWaits <- struct{}{}:
	default:
		return errWaitersFull
	}
	var (
		mu        sync.Mutex
		abandoned bool
	)
	got := make(chan error, 1)
	go func() {
		defer func() { <-blockedWaits }()
		err := flock(fd, how)
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			unix.Close(fd) // lets the lock go, if taken
			return
		}
		got <- err
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var why error
	select {
	case err := <-got:
		return tookLock(fd, path, err)
	case <-timer.C:
		why = &LockTimeoutError{Path: path}
	case <-done:
		why = &LockInterruptedError{Path: path}
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case err := <-got: // taken as the wait was given up: keep it
		return tookLock(fd, path, err)
	default:
		abandoned = true
		return why
	}
}

// tookLock is the end of a blocking wait on fd: nil with the lock taken,
// else the flock's error, fd closed.
func tookLock(fd int, path string, err error) error {
	if err != nil {
		unix.Close(fd)
		return lockError(path, err)
	}
	return nil
}

// namedBy reports whether path still names the file whose stat is st;
// when that cannot be told, it says yes, as a lock without the check
// would.
func namedBy(path string, st *unix.Stat_t) bool {
	var named unix.Stat_t
	err := unix.Lstat(path, &named)
	if errors.Is(err, unix.ENOENT) {
		return false
	}
	return err != nil || named.Dev == st.Dev && named.Ino == st.Ino
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
