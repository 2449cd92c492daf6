package hooks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// waitAfterExit bounds the wait for a hook's output once it has exited
// (or its group was killed): a process it left in the background that
// keeps its stdout open must not hold the turn.
const waitAfterExit = 2 * time.Second

// result is what one hook did.
type result struct {
	hook     Hook
	code     int // -1 when it did not exit by itself
	stdout   []byte
	stderr   []byte
	cut      bool // stdout was longer than MaxOutput
	timedOut bool
	err      error // it could not start, or ctx ended
}

// run runs h with sh -c in dir (the session's working directory), stdin
// on its standard input, in a process group of its own that is killed
// whole at h's timeout or when ctx ends. Each stream keeps its first
// MaxOutput bytes.
func run(ctx context.Context, h Hook, dir string, stdin []byte) result {
	stdout, stderr := &capped{limit: MaxOutput}, &capped{limit: MaxOutput}
	cmd := exec.Command("sh", "-c", h.Command)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Claude Code's scripts find their project by this variable.
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = waitAfterExit
	r := result{hook: h, code: -1}
	if err := cmd.Start(); err != nil {
		r.err = err
		return r
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(h.Timeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		r.timedOut = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		r.err = context.Cause(ctx)
	}
	r.stdout, r.stderr, r.cut = stdout.buf.Bytes(), stderr.buf.Bytes(), stdout.cut
	var exitErr *exec.ExitError
	switch {
	case r.timedOut || r.err != nil:
	case err == nil || errors.Is(err, exec.ErrWaitDelay):
		r.code = 0
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode() // -1 when a signal killed it
	default:
		r.err = err
	}
	return r
}

// capped keeps the first limit bytes written to it and drops the rest,
// so that a hook that writes without end costs bounded memory and never
// blocks on a full pipe.
type capped struct {
	buf   bytes.Buffer
	limit int
	cut   bool
}

func (c *capped) Write(p []byte) (int, error) {
	n, room := len(p), c.limit-c.buf.Len()
	if n > room {
		c.cut = true
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
	return n, nil
}
