package tasks

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// HeartbeatEvery is how often a task's supervisor renews its lease.
const HeartbeatEvery = 10 * time.Second

// Lease is how long a heartbeat vouches for a running task on other hosts
// than its own: one that has had none for longer is taken to be lost. Six
// heartbeats, so that a busy disk or a clock a few seconds off does not
// lose a task that runs.
const Lease = 60 * time.Second

// Local reports whether task t runs on this host (s.Host), where its pids
// can be looked up. A record that names no host was written before hosts
// were recorded, when every process ran on the host that read it: it is
// taken to run here.
func (s *Store) Local(t Task) bool { return t.Host == "" || t.Host == s.Host }

// Heartbeat renews the lease of running task id: its running marker takes
// the time s.Now. It changes a time, no byte of the record, and is not
// synced: a heartbeat lost in a crash only makes the lease older, which is
// the side a crash errs on anyway. A task that has finished (no marker) is
// not an error.
func (s *Store) Heartbeat(id string) error {
	now := s.Now()
	err := touch(s.runningMarker(id), now)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// LeaseHeld reports whether task id, of another host, holds its lease: a
// task without a running marker has none; one whose marker's time (its
// last heartbeat) this host has not watched stay unchanged for more than
// Lease, by its own monotonic clock (s.Seen), holds it. The marker's time
// is the heartbeat's host's clock: it is compared with nothing, only seen
// to change, so hosts whose clocks disagree judge each other's tasks
// right. A command that runs once records what it saw, and a later one
// (any process of this host's boot) judges from there: the first to see
// a heartbeat never finds it lost. A sighting that cannot be recorded is
// reported, and the lease taken for held.
func (s *Store) LeaseHeld(id string) bool {
	fi, err := os.Lstat(s.runningMarker(id))
	if err != nil {
		return false
	}
	watched, err := s.Seen.Watch("task "+id, strconv.FormatInt(fi.ModTime().UnixNano(), 10), Lease)
	if err != nil {
		s.Warn(fmt.Sprintf("task %s: its lease is taken for held: %v", id, err))
		return true
	}
	return watched <= Lease
}

// touch sets the times of the file at path to t, never through a symlink.
func touch(path string, t time.Time) error {
	ts := unix.NsecToTimespec(t.UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimes", Path: path, Err: err}
	}
	return nil
}
