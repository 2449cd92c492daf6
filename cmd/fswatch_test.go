package cmd

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// setProbe replaces fsProbe for the rest of the test.
func setProbe(t *testing.T, probe func(string) error) {
	old := fsProbe
	t.Cleanup(func() { fsProbe = old })
	fsProbe = probe
}

// TestWatchFSGivesUp: a command whose profile's filesystem stops
// answering (the probe blocks, and so does the command, in the
// filesystem) ends within --fs-timeout with an error naming the
// directory and the wait, instead of hanging until the mount gives up.
func TestWatchFSGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := make(chan struct{})
		defer close(dead)
		setProbe(t, func(string) error { <-dead; return nil })
		start := time.Now()
		err := watchFS("/mnt/hermes/profiles/default", 30*time.Second, func() error { <-dead; return nil })
		var stuck *fsTimeoutError
		if !errors.As(err, &stuck) {
			t.Fatalf("watchFS = %v, want an *fsTimeoutError", err)
		}
		if waited := time.Since(start); waited > 30*time.Second {
			t.Errorf("gave up after %v, past the bound of 30s", waited)
		}
		msg := err.Error()
		for _, want := range []string{"/mnt/hermes/profiles/default", "stopped answering", "--fs-timeout 30s"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q does not say %q", msg, want)
			}
		}
		if exitCode(err) != ExitFailed {
			t.Errorf("exit code %d, want %d", exitCode(err), ExitFailed)
		}
	})
}

// TestWatchFSTransportGone: a FUSE mount cut off from its server can
// answer a stat at once with ENOTCONN while the command waits in the
// filesystem (a flock in the kernel) for ever. Such an answer is no
// answer: the command ends within --fs-timeout, naming what the
// filesystem said. Other errors (a directory removed) are answers.
func TestWatchFSTransportGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dead := make(chan struct{})
		defer close(dead)
		setProbe(t, func(string) error { return &os.PathError{Op: "statx", Path: "/mnt/p", Err: syscall.ENOTCONN} })
		start := time.Now()
		err := watchFS("/mnt/p", 8*time.Second, func() error { <-dead; return nil })
		var stuck *fsTimeoutError
		if !errors.As(err, &stuck) {
			t.Fatalf("watchFS = %v, want an *fsTimeoutError", err)
		}
		if waited := time.Since(start); waited > 8*time.Second {
			t.Errorf("gave up after %v, past the bound of 8s", waited)
		}
		if msg := err.Error(); !strings.Contains(msg, "transport endpoint is not connected") || !strings.Contains(msg, "/mnt/p") {
			t.Errorf("message %q does not name the directory and what it answered", msg)
		}

		setProbe(t, func(string) error { return &os.PathError{Op: "statx", Path: "/p", Err: syscall.ENOENT} })
		err = watchFS("/p", 8*time.Second, func() error { time.Sleep(time.Minute); return errors.New("done") })
		if err == nil || err.Error() != "done" {
			t.Fatalf("watchFS with a probe answering ENOENT = %v, want the command's own error", err)
		}
	})
}

// TestWatchFSLongCommand: a command that takes longer than --fs-timeout on
// a filesystem that answers is left to finish; a timeout of 0 watches
// nothing.
func TestWatchFSLongCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int32
		setProbe(t, func(string) error { probes.Add(1); return nil })
		err := watchFS("/p", 30*time.Second, func() error { time.Sleep(5 * time.Minute); return errors.New("done") })
		if err == nil || err.Error() != "done" {
			t.Fatalf("watchFS = %v, want the command's own error", err)
		}
		if probes.Load() == 0 {
			t.Error("a five-minute command was never watched")
		}
		synctest.Wait() // the last probe, started before the command ended, has answered
		probes.Store(0)
		if err := watchFS("/p", 0, func() error { time.Sleep(time.Minute); return nil }); err != nil || probes.Load() != 0 {
			t.Fatalf("watchFS with 0 = %v after %d probes, want nil after none", err, probes.Load())
		}
	})
}

// TestFSTimeoutFlag: --fs-timeout takes a duration (0: off); anything else
// is bad usage, naming the flag.
func TestFSTimeoutFlag(t *testing.T) {
	home := t.TempDir()
	var out, errOut bytes.Buffer
	code := Run([]string{"hermes", "--home", home, "--fs-timeout", "soon", "sessions", "list"}, strings.NewReader(""), &out, &errOut)
	if code != ExitUsage || !strings.Contains(errOut.String(), "--fs-timeout: ") {
		t.Fatalf("exit %d, stderr %q; want %d naming --fs-timeout", code, errOut.String(), ExitUsage)
	}
	errOut.Reset()
	if code := Run([]string{"hermes", "--home", home, "--fs-timeout", "0", "sessions", "list"}, strings.NewReader(""), &out, &errOut); code != ExitOK {
		t.Fatalf("--fs-timeout 0: exit %d, stderr %q", code, errOut.String())
	}
}
