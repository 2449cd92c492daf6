package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermes/hermes/cmd"
)

// TestTitleUniqueAcrossProcesses races two hermes processes that give one
// title to two sessions, 40 rounds of `sessions rename` and 40 of
// `sessions new --title`: each round exactly one wins (exit 0) and the
// other is refused (exit 4), and no two sessions end up with one title.
// The profile holds 100 other sessions, so that the title check (which
// reads every document) takes long enough for the two to overlap.
func TestTitleUniqueAcrossProcesses(t *testing.T) {
	skipUnlessLong(t, "runs 160 processes")
	if raceEnabled {
		t.Skip("160 processes racing each other, which the run without -race covers: HERMES_TEST_LONG=1 go test . runs it")
	}
	home := filepath.Join(t.TempDir(), "hermes")
	hermes := func(args ...string) *exec.Cmd {
		c := exec.Command("hermes", append([]string{"--home", home}, args...)...)
		c.Env = append(os.Environ(), "HERMES_PROFILE=", quickRaceExit())
		return c
	}
	// The sessions the rounds need are made in this process.
	must := func(args ...string) {
		t.Helper()
		var out bytes.Buffer
		if code := cmd.Run(append([]string{"hermes", "--home", home, "-p", "default"}, args...), strings.NewReader(""), &out, &out); code != 0 {
			t.Fatalf("hermes %v: exit %d: %s", args, code, out.String())
		}
	}
	for i := range 100 {
		must("sessions", "new", "--id", fmt.Sprintf("other%03d", i), "--title", fmt.Sprintf("other %d", i))
	}
	const rounds = 40
	for i := range rounds {
		must("sessions", "new", "--id", fmt.Sprintf("r%02da", i))
		must("sessions", "new", "--id", fmt.Sprintf("r%02db", i))
	}
	// race starts both commands at once and returns their exit codes and
	// stderr.
	race := func(a, b []string) ([2]int, string) {
		var codes [2]int
		var stderr [2]bytes.Buffer
		var wg sync.WaitGroup
		start := make(chan struct{})
		for k, args := range [][]string{a, b} {
			c := hermes(args...)
			c.Stderr = &stderr[k]
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := c.Run()
				var exit *exec.ExitError
				switch {
				case err == nil:
				case errors.As(err, &exit):
					codes[k] = exit.ExitCode()
				default:
					codes[k] = -1
				}
			}()
		}
		close(start)
		wg.Wait()
		return codes, stderr[0].String() + stderr[1].String()
	}
	oneWins := func(what string, codes [2]int, stderr string) {
		t.Helper()
		if !(codes == [2]int{0, 4} || codes == [2]int{4, 0}) {
			t.Errorf("%s: exit codes %v, want one 0 and one 4 (stderr %q)", what, codes, stderr)
		} else if !strings.Contains(stderr, "is taken by session") {
			t.Errorf("%s: the loser says %q", what, stderr)
		}
	}
	for i := range rounds {
		title := fmt.Sprintf("renamed %d", i)
		codes, stderr := race(
			[]string{"sessions", "rename", fmt.Sprintf("r%02da", i), title},
			[]string{"sessions", "rename", fmt.Sprintf("r%02db", i), title})
		oneWins("round "+title, codes, stderr)
	}
	for i := range rounds {
		title := fmt.Sprintf("new %d", i)
		codes, stderr := race(
			[]string{"sessions", "new", "--title", title},
			[]string{"sessions", "new", "--title", title})
		oneWins("round "+title, codes, stderr)
	}
	out, err := hermes("--json", "sessions", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		_, rest, _ := strings.Cut(line, `"title":"`)
		title, _, _ := strings.Cut(rest, `"`)
		if title != "" {
			seen[title]++
		}
	}
	for title, n := range seen {
		if n > 1 {
			t.Errorf("%d sessions have the title %q", n, title)
		}
	}
	if out, err := hermes("fsck").CombinedOutput(); err != nil {
		t.Errorf("fsck: %v\n%s", err, out)
	}
}

// quickRaceExit is the environment variable that keeps a hermes process
// built with the race detector from sleeping a second before it exits
// (GORACE atexit_sleep_ms): tests that run hundreds of processes would
// spend minutes asleep. Without the race detector it is ignored.
func quickRaceExit() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}
