package fsstore

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The takers of an exclusive lock in one process queue in the process,
// first come first served, for the file they opened (its device and
// inode, as flock locks an inode), and only the first calls flock(2): a
// lock held by another goroutine is waited for on a channel, not on a
// thread blocked in the kernel each. A release hands the lock to the next
// in line, where flock woke a blocked thread that a newcomer's try could
// beat to it (at 16 gateway clients, the activity catalog's lock was
// waited for up to 97 ms by some turns while others took it at once).
// Other processes are still waited for with flock. Shared takers do not
// queue: readers hold the lock together.

// queueKey is a lock file: flock locks its inode, whatever path names it.
type queueKey struct{ dev, ino uint64 }

// lockQueue is the takers of one lock file in this process: the one that
// holds the token of turn and those waiting to send it.
type lockQueue struct {
	turn  chan struct{}
	users int
}

var queues = struct {
	sync.Mutex
	m map[queueKey]*lockQueue
}{m: map[queueKey]*lockQueue{}}

// queue waits for the turn of this process's takers of the lock file st
// (opened from path) until deadline or done, and returns leave, which
// passes the turn on; the caller then takes the flock, and calls leave
// once it has let it go. A turn that is free is taken even if done has
// closed, as a free lock is.
func queue(st *unix.Stat_t, path string, timeout time.Duration, deadline time.Time, done <-chan struct{}) (leave func(), err error) {
	k := queueKey{uint64(st.Dev), uint64(st.Ino)}
	queues.Lock()
	q := queues.m[k]
	if q == nil {
		q = &lockQueue{turn: make(chan struct{}, 1)}
		queues.m[k] = q
	}
	q.users++
	queues.Unlock()
	exit := func() {
		queues.Lock()
		if q.users--; q.users == 0 {
			delete(queues.m, k)
		}
		queues.Unlock()
	}
	select {
	case q.turn <- struct{}{}:
	default:
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		select {
		case q.turn <- struct{}{}:
		case <-timer.C:
			exit()
			return nil, &LockTimeoutError{Path: path, Timeout: timeout.String(), Holder: holderOf(path)}
		case <-done:
			exit()
			return nil, &LockInterruptedError{Path: path}
		}
	}
	return func() {
		<-q.turn
		exit()
	}, nil
}
