package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The long scenarios (a 100 MB message, 16 seconds of cron tickers, a
// 400 MB file, 160 racing processes, a binary linked by go build to see
// its stamp, and the real npm clients, Claude Code and the reference MCP
// servers, each seconds of processor to start)
// run only with HERMES_TEST_LONG=1, which .ci/run sets: together they
// were half the wall time, most of the peak memory and nearly all the
// disk written of a plain go test ./... (README, "Tests").
var longTests = os.Getenv("HERMES_TEST_LONG") == "1"

// longTestNames are the long tests, as the line that says they were left
// out names them.
const longTestNames = "hostile_big_message.txtar, cron_tickers.txtar, TestReadFileMemory, " +
	"TestTitleUniqueAcrossProcesses, TestVersionNamesCommit, and the real npm clients: mcp_npm.txtar, claude_code_*.txtar"

// sdkTestNames are the tests that need -tags sdk.
const sdkTestNames = "the official clients' tests (cmd/gateway with openai-go and anthropic-sdk-go, minutes of compiling)"

// leftOut is the one line a run prints that left out the long tests, or
// the official clients' tests, or both, naming them and how to run them;
// "" when it left out neither.
func leftOut(long, sdk bool) string {
	switch {
	case !long && !sdk:
		return "hermes: left out the long tests (" + longTestNames + ") and " + sdkTestNames +
			": HERMES_TEST_LONG=1 go test -tags sdk ./... runs them"
	case !long:
		return "hermes: left out the long tests (" + longTestNames + "): HERMES_TEST_LONG=1 go test ./... runs them"
	case !sdk:
		return "hermes: left out " + sdkTestNames + ": go test -tags sdk ./... runs them"
	}
	return ""
}

// skipUnlessLong skips a long test, saying what makes it long and how to
// run it, unless HERMES_TEST_LONG=1.
func skipUnlessLong(t *testing.T, what string) {
	t.Helper()
	if !longTests {
		t.Skipf("long (%s): HERMES_TEST_LONG=1 go test . runs it", what)
	}
}

// printLongLeftOut prints leftOut's line, when there is one: on stdout,
// which go test shows with -v or a failure, and on the terminal when there
// is one, since go test ./... shows nothing else of a package that passes.
func printLongLeftOut() {
	line := leftOut(longTests, sdkTests)
	if line == "" {
		return
	}
	fmt.Println(line)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprintln(tty, line)
		tty.Close()
	}
}

// TestLeftOutSaysHowToRun: the line names what each run left out and the
// command that runs it, and a run that left out nothing prints none.
func TestLeftOutSaysHowToRun(t *testing.T) {
	for _, c := range []struct {
		long, sdk  bool
		has, hasnt []string
	}{
		{false, false, []string{"long tests", "official clients", "HERMES_TEST_LONG=1 go test -tags sdk ./..."}, nil},
		{false, true, []string{"long tests", "HERMES_TEST_LONG=1 go test ./..."}, []string{"official clients", "-tags sdk"}},
		{true, false, []string{"official clients", "go test -tags sdk ./..."}, []string{"long tests", "HERMES_TEST_LONG"}},
	} {
		line := leftOut(c.long, c.sdk)
		for _, s := range c.has {
			if !strings.Contains(line, s) {
				t.Errorf("long=%v sdk=%v: %q lacks %q", c.long, c.sdk, line, s)
			}
		}
		for _, s := range c.hasnt {
			if strings.Contains(line, s) {
				t.Errorf("long=%v sdk=%v: %q names %q", c.long, c.sdk, line, s)
			}
		}
	}
	if line := leftOut(true, true); line != "" {
		t.Errorf("nothing left out: %q", line)
	}
}
