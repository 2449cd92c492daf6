package cmd

import (
	"fmt"
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
}

func (e *fsTimeoutError) Error() string {
	return fmt.Sprintf("the filesystem of %s has stopped answering: a stat of it has had no answer for %s (--fs-timeout %s); giving up",
		e.Dir, e.Waited.Round(100*time.Millisecond), e.Timeout)
}

// watchFS runs action while a watchdog asks the filesystem of dir, every
// quarter of timeout, whether it answers (fsProbe). A probe without an
// answer after three quarters of timeout ends the command with an
// *fsTimeoutError, so that a filesystem that stopped answering just after
// one probe was answered is told within timeout. The action, blocked in
// the filesystem, is left behind: a process cannot finish exiting while a
// thread of it is inside a FUSE request, so on a network or FUSE
// filesystem the command runs in a watched child whose parent exits at
// once (fschild.go). A command that works longer than timeout on a
// filesystem that answers is left to finish. A timeout of 0 watches
// nothing.
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
	answered := make(chan struct{}, 1)
	var pending time.Time // when the probe without an answer began
	// The ticks since then are counted, not the time between their
	// stamps: a ticker's stamps jitter, and 2.999 s for three quarters of
	// 4 s cost a whole quarter more.
	ticks := 0
	for {
		select {
		case err := <-done:
			return err
		case <-answered:
			pending = time.Time{}
		case now := <-tick.C:
			switch {
			case pending.IsZero():
				pending, ticks = now, 0
				go func() {
					probe(dir)
					answered <- struct{}{}
				}()
			default:
				if ticks++; ticks >= 3 {
					return &fsTimeoutError{Dir: dir, Waited: now.Sub(pending), Timeout: timeout}
				}
			}
		}
	}
}
