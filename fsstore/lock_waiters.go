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
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The waiters' record of a lock (doc.go, "Waiters"): <lock>.waiters, one
// line a process that waits for the lock exclusively, written before its
// wait blocks and removed when the wait ends. A grant that its waiter
// never learns of (its host cut off from the file server as the lock
// came to it) leaves a lock held by a process that wrote no holder
// record; the waiters' record is what names it then.

// waiterRecord is one waiter's line: who waits, since when, and a token
// that tells its line from every other.
type waiterRecord struct {
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Since Time   `json:"since"`
	Token string `json:"token"`
}

func (w waiterRecord) String() string {
	return fmt.Sprintf("pid %d on host %s, waiting since %s", w.PID, w.Host, w.Since)
}

const (
	// maxWaitersRecord bounds what is read of a waiters' record.
	maxWaitersRecord = 64 << 10
	// maxWaitersNamed bounds the waiters a timeout names.
	maxWaitersNamed = 4
	// waiterMaxAge is the age past which a waiter's line is dropped as
	// left by a process that could not remove it: no wait lasts a day,
	// and a day dwarfs any disagreement of clocks hosts keep.
	waiterMaxAge = 24 * time.Hour
	// waitersPatience bounds how long a waiter tries for the record's
	// own lock, which is held for microseconds unless its holder's host
	// was cut off: then the waiter goes unrecorded rather than wait.
	waitersPatience = 50 * time.Millisecond
)

// waiter is this process's line in the waiters' record of a lock it
// waits for; a zero token when it could not be written.
type waiter struct {
	path  string
	token string
}

func waitersPath(lock string) string { return lock + ".waiters" }

// joinWaiters records this process in the waiters' record of the lock at
// path before it waits for the lock exclusively, and drops the lines of
// waiters gone (stale). A record that cannot be written is no error: the
// wait goes on unrecorded.
func joinWaiters(path string) *waiter {
	w := &waiter{path: waitersPath(path)}
	f := lockWaiters(w.path)
	if f == nil {
		return w
	}
	defer f.Close()
	var token [12]byte
	rand.Read(token[:])
	me := waiterRecord{Host: ThisHost(), PID: os.Getpid(), Since: TimeOf(time.Now()), Token: hex.EncodeToString(token[:])}
	var keep []waiterRecord
	for _, r := range parseWaiters(f) {
		if !stale(r) {
			keep = append(keep, r)
		}
	}
	if writeWaiters(f, w.path, append(keep, me)) == nil {
		w.token = me.Token
	}
	return w
}

// leave ends w's wait: a *LockTimeoutError in *errp that names no holder
// is given the other waiters recorded, and w's line is removed (the
// record with it when no line is left). It is deferred by lock, so that
// a waiter that took the lock is named by its holder record before its
// line goes.
func (w *waiter) leave(errp *error) {
	var timeout *LockTimeoutError
	if errors.As(*errp, &timeout) && timeout.Holder == "" {
		for _, r := range readWaiters(w.path) {
			if r.Token == w.token {
				continue
			}
			if len(timeout.Waiting) == maxWaitersNamed {
				timeout.Waiting = append(timeout.Waiting, "and others")
				break
			}
			timeout.Waiting = append(timeout.Waiting, r.String())
		}
	}
	if w.token == "" {
		return
	}
	f := lockWaiters(w.path)
	if f == nil {
		return
	}
	defer f.Close()
	var keep []waiterRecord
	for _, r := range parseWaiters(f) {
		if r.Token != w.token && !stale(r) {
			keep = append(keep, r)
		}
	}
	writeWaiters(f, w.path, keep)
}

// stale reports whether r is the line of a waiter that could not remove
// it: a process of this host that is gone, or a line older than
// waiterMaxAge. A process of another host is judged by age alone.
func stale(r waiterRecord) bool {
	if t, err := r.Since.Instant(); err != nil || time.Since(t) > waiterMaxAge {
		return true
	}
	return r.Host == ThisHost() && errors.Is(syscall.Kill(r.PID, 0), syscall.ESRCH)
}

// lockWaiters opens the waiters' record at path, made 0600 if missing,
// and locks it, trying without blocking for at most waitersPatience; nil
// when it cannot. A record removed between its open and its lock (its
// last waiter left) is opened again.
func lockWaiters(path string) *os.File {
	deadline := time.Now().Add(waitersPatience)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, FileMode)
		if err != nil {
			return nil
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			held, serr := f.Stat()
			named, lerr := os.Lstat(path)
			if serr != nil || lerr == nil && os.SameFile(held, named) {
				return f
			}
			f.Close()
			continue
		}
		f.Close()
		if !errors.Is(err, unix.EWOULDBLOCK) || !time.Now().Before(deadline) {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

// writeWaiters replaces the lines of the waiters' record f, at path,
// which this process has locked, with recs, in place: written over the
// old lines, then cut to their length. No line left, the file is
// removed. It is not synced: like a holder record, it names, it does not
// keep.
func writeWaiters(f *os.File, path string, recs []waiterRecord) error {
	if len(recs) == 0 {
		return os.Remove(path)
	}
	var b []byte
	for _, r := range recs {
		line, _ := json.Marshal(r)
		b = append(append(b, line...), '\n')
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(b)))
}

// readWaiters reads the waiters' record at path without its lock, as a
// wait that timed out does: opened without blocking, its lines that do
// not parse (a rewrite in progress) skipped.
func readWaiters(path string) []waiterRecord {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseWaiters(f)
}

// parseWaiters reads the lines of a waiters' record, each token once.
func parseWaiters(f *os.File) []waiterRecord {
	b := make([]byte, maxWaitersRecord)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	var out []waiterRecord
	seen := map[string]bool{}
	for _, line := range bytes.Split(b[:n], []byte{'\n'}) {
		var r waiterRecord
		if json.Unmarshal(line, &r) != nil || r.PID <= 0 || r.Host == "" || r.Token == "" || seen[r.Token] {
			continue
		}
		seen[r.Token] = true
		out = append(out, r)
	}
	return out
}

// waitingFor is the part of a *LockTimeoutError's message that names the
// other waiters recorded, when the lock's file names no holder.
func waitingFor(waiting []string) string {
	return "held by a process that wrote no record; waiting for it when it was granted: " + strings.Join(waiting, "; ")
}
