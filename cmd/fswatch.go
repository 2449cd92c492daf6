package cmd

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// fsProbe asks the filesystem of a directory for its attributes from the
// filesystem's server (fsstore.ProbeDir); tests replace it.
var fsProbe = fsstore.ProbeDir

// fsTimeoutError ends a command whose profile's filesystem stopped
// answering (exit 1).
type fsTimeoutError struct {
	Dir     string
	Waited  time.Duration
	Timeout time.Duration
	Said    error // what the filesystem answered instead, if anything (transportGone)
}

func (e *fsTimeoutError) Error() string {
	had := "has had no answer"
	if e.Said != nil {
		var pe *os.PathError
		said := e.Said
		if errors.As(said, &pe) {
			said = pe.Err
		}
		had = fmt.Sprintf("has had no answer but %q", said.Error())
	}
	return fmt.Sprintf("the filesystem of %s has stopped answering: a stat of it %s for %s (--fs-timeout %s); giving up",
		e.Dir, had, e.Waited.Round(100*time.Millisecond), e.Timeout)
}

// transportGone says whether a probe's error means that the filesystem's
// server is out of reach rather than that the directory is gone: a FUSE
// mount cut off from its server answers a stat at once with ENOTCONN while
// a flock on it waits in the kernel for ever, and a hard NFS mount says
// EIO or ESTALE. Such an answer is no answer.
func transportGone(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOTCONN, syscall.EIO, syscall.ESTALE, syscall.ETIMEDOUT,
		syscall.EHOSTDOWN, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ECONNABORTED} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// watchFS runs action while a watchdog asks the filesystem of dir, every
// quarter of timeout, whether it answers (fsProbe). A probe without an
// answer after three quarters of timeout ends the command with an
// *fsTimeoutError, so that a filesystem that stopped answering just after
// one probe was answered is told within timeout. A probe answered with an
// error that says the server is out of reach (transportGone) is no answer.
// The action, blocked in the filesystem, is left behind: a process cannot
// finish exiting while a thread of it is inside a FUSE request, so on a
// network or FUSE filesystem the command runs in a watched child whose
// parent exits at once (fschild.go). A command that works longer than
// timeout on a filesystem that answers is left to finish. A timeout of 0
// watches nothing.
func watchFS(dir string, timeout time.Duration, action func() error) error {
	if timeout <= 0 {
		return action()
	}
	probe := fsProbe // a probe may outlive the command
	done := make(chan error, 1)
	go func() { done <- action() }()
	every := timeout / 4
	tick := time.NewTicker(every)
	defer tick.Stop()
	answered := make(chan error, 1)
	probing := false
	var pending time.Time // since when the filesystem has not answered
	var said error        // what it answered instead (transportGone)
	// The ticks since then are counted, not the time between their
	// stamps: a ticker's stamps jitter, and 2.999 s for three quarters of
	// 4 s cost a whole quarter more.
	ticks := 0
	for {
		select {
		case err := <-done:
			return err
		case err := <-answered:
			probing = false
			if transportGone(err) {
				said = err
				continue
			}
			pending, said = time.Time{}, nil
		case now := <-tick.C:
			if pending.IsZero() {
				pending, ticks = now, 0
			} else if ticks++; ticks >= 3 {
				return &fsTimeoutError{Dir: dir, Waited: now.Sub(pending), Timeout: timeout, Said: said}
			}
			if !probing {
				probing = true
				go func() { answered <- probe(dir) }()
			}
		}
	}
}
