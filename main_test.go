package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hermes/hermes/cmd"
	"github.com/hermes/hermes/cmd/mcp/mcptest"
)

// TestMain lets the scripts run the real binary: testscript re-executes
// this test binary as "hermes". A run without HERMES_TEST_LONG=1 ends with
// one line naming the long tests it left out (long_test.go).
func TestMain(m *testing.M) {
	testscript.Main(longNote{m}, map[string]func(){
		"hermes": func() { os.Exit(cmd.Main()) },
		// An MCP server over stdio (cmd/mcp/mcptest) for mcp_servers.
		"mcp-test-server": mcptest.Main,
		// Runs a command and writes its peak RSS to a file (memory_test.go).
		"peak-rss": peakRSSMain,
		// An MCP client (cmd/mcp/mcptest) for hermes mcp serve.
		"mcp-client": mcptest.ClientMain,
	})
}

// TestScripts runs the end-to-end scripts under testdata/*.txtar. Each
// script gets its own $HOME and $HERMES_HOME, so nothing leaks between
// scripts or into the user's home.
func TestScripts(t *testing.T) {
	var servers sync.Map
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		RequireExplicitExec: true,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"openai-server": openAIServerCmd(&servers),
			"unix-socket":   unixSocketCmd,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "race" {
				return raceEnabled, nil
			}
			if cond == "long" {
				return longTests, nil
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
			e.Setenv("MCP_NPM", filepath.Join(mcpNPMDir(), "node_modules"))
			// The scripts run thousands of hermes processes: under the
			// race detector each would sleep a second before exiting.
			e.Setenv("GORACE", strings.TrimPrefix(quickRaceExit(), "GORACE="))
			return nil
		},
	})
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
