package mcp

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// The guard kills, at the end of its input, every group it was told of
// and not told to forget, whatever is in each, and nothing else.
func TestGuardKillsWatchedGroups(t *testing.T) {
	group := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		})
		return cmd
	}
	watched, forgotten, other := group(), group(), group()
	in := fmt.Sprintf("+ %d\n+ %d\n- %d\n", watched.Process.Pid, forgotten.Process.Pid, forgotten.Process.Pid)
	g := exec.Command("/bin/sh", "-c", guardScript)
	g.Stdin = strings.NewReader(in)
	if out, err := g.CombinedOutput(); err != nil {
		t.Fatalf("guard: %v: %s", err, out)
	}
	if err := watched.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the watched group's process: %v, want killed", err)
	}
	// A SIGKILL the guard sent decides how a process ends, whenever it
	// ends: the kernel ignores any signal sent after it. So a process the
	// guard left alone is the one that ends by this SIGTERM.
	for _, c := range []*exec.Cmd{forgotten, other} {
		c.Process.Signal(syscall.SIGTERM)
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("process %d, not to be killed, ended: %v", c.Process.Pid, err)
		}
	}
}
