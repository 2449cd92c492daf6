package main

import (
	"fmt"
	"os"
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

// longLeftOut is the one line a run without the switch prints, naming what
// it left out and how to run it.
const longLeftOut = "hermes: left out the long tests (hostile_big_message.txtar, cron_tickers.txtar, " +
	"TestReadFileMemory, TestTitleUniqueAcrossProcesses, TestVersionNamesCommit, and the real npm clients: " +
	"mcp_npm.txtar, claude_code_*.txtar): HERMES_TEST_LONG=1 go test ./... runs them"

// skipUnlessLong skips a long test, saying what makes it long and how to
// run it, unless HERMES_TEST_LONG=1.
func skipUnlessLong(t *testing.T, what string) {
	t.Helper()
	if !longTests {
		t.Skipf("long (%s): HERMES_TEST_LONG=1 go test . runs it", what)
	}
}

// printLongLeftOut prints longLeftOut when the long tests were left out:
// on stdout, which go test shows with -v or a failure, and on the
// terminal when there is one, since go test ./... shows nothing else of a
// package that passes.
func printLongLeftOut() {
	if longTests {
		return
	}
	fmt.Println(longLeftOut)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprintln(tty, longLeftOut)
		tty.Close()
	}
}
