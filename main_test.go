package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hermes/hermes/cmd"
	"github.com/hermes/hermes/cmd/mcp/mcptest"
	"github.com/hermes/hermes/fsstore/testtmp"
)

// TestMain lets the scripts run the real binary: testscript re-executes
// this test binary as "hermes".
func TestMain(m *testing.M) {
	testscript.Main(testsRun{m}, map[string]func(){
		"hermes": func() { os.Exit(cmd.Main()) },
		// An MCP server over stdio (cmd/mcp/mcptest) for mcp_servers.
		"mcp-test-server": mcptest.Main,
		// Runs a command and writes its peak RSS to a file (memory_test.go).
		"peak-rss": peakRSSMain,
		// An MCP client (cmd/mcp/mcptest) for hermes mcp serve.
		"mcp-client": mcptest.ClientMain,
	})
}

// scriptsParallel is how many scripts run at once unless -parallel says:
// a script spends most of its time waiting for the processes it starts
// (a lock, a claim's expiry, a worker), so that two at a time, go test's
// default on two cores, left the cores idle half the time (the root
// package: 39 s, 31 s at 6). Under the race detector, where the processes
// themselves are the cost, go test's default stays.
const scriptsParallel = "6"

// testsRun runs the tests of this package (and not the commands the test
// binary also is): the scripts scriptsParallel at a time, and a run
// without HERMES_TEST_LONG=1 ends with one line naming the long tests it
// left out (long_test.go).
type testsRun struct{ m *testing.M }

func (r testsRun) Run() int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && !raceEnabled {
		flag.Set("test.parallel", scriptsParallel)
	}
	buildScriptsHermesEarly()
	code := testtmp.Main(r.m)
	removeScriptsHermes()
	printLongLeftOut()
	return code
}

// TestScripts runs the end-to-end scripts under testdata/*.txtar. Each
// script gets its own $HOME and $HERMES_HOME, so nothing leaks between
// scripts or into the user's home.
func TestScripts(t *testing.T) {
	hermesDir, err := scriptsHermes()
	if err != nil {
		t.Fatal(err)
	}
	var servers sync.Map
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		RequireExplicitExec: true,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"openai-server":    openAIServerCmd(&servers),
			"anthropic-server": anthropicServerCmd(new(sync.Map)),
			"unix-socket":      unixSocketCmd,
			"free-port":        freePortCmd,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "race" {
				return raceEnabled, nil
			}
			if cond == "long" {
				return longTests, nil
			}
			if cond == "claudecode" {
				_, err := os.Stat(filepath.Join(claudeNPMDir(), "node_modules", ".bin", "claude"))
				return err == nil, nil
			}
			if cond == "mcpnpm" {
				_, err := os.Stat(filepath.Join(mcpNPMDir(), "node_modules", "@modelcontextprotocol", "server-everything"))
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(e *testscript.Env) error {
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv("HERMES_HOME", filepath.Join(e.WorkDir, "hermes"))
			e.Setenv("HERMES_PROFILE", "")
			if hermesDir != "" {
				e.Setenv("PATH", hermesDir+string(filepath.ListSeparator)+e.Getenv("PATH"))
			}
			e.Setenv("MCP_NPM", filepath.Join(mcpNPMDir(), "node_modules"))
			e.Setenv("CLAUDE", filepath.Join(claudeNPMDir(), "node_modules", ".bin", "claude"))
			// The scripts run thousands of hermes processes: under the
			// race detector each would sleep a second before exiting.
			e.Setenv("GORACE", strings.TrimPrefix(quickRaceExit(), "GORACE="))
			return nil
		},
	})
}

// claudeNPMDir is where scripts/claude-npm.sh installs Claude Code.
func claudeNPMDir() string {
	if dir := os.Getenv("HERMES_CLAUDE_NPM_DIR"); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "hermes-claude-npm")
}

// mcpNPMDir is where scripts/mcp-npm.sh installs the npm reference MCP
// servers that testdata/mcp_npm.txtar needs.
func mcpNPMDir() string {
	if dir := os.Getenv("HERMES_MCP_NPM_DIR"); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "hermes-mcp-npm")
}
