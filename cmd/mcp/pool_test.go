package mcp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/mcp/mcptest"
	"github.com/hermes/hermes/fsstore/testtmp"
	"github.com/hermes/hermes/profiles"
)

// TestMain makes the test binary the test server when the pool starts it
// (MCPTEST_SERVE, passed through the server's env).
func TestMain(m *testing.M) {
	if os.Getenv("MCPTEST_SERVE") == "1" {
		mcptest.Main()
		return
	}
	os.Exit(testtmp.Main(m))
}

// testServer is a config entry that runs the test server, counting its
// starts in the returned file.
func testServer(t testing.TB, env map[string]string) (profiles.MCPServer, string) {
	starts := filepath.Join(t.TempDir(), "starts")
	e := map[string]string{"MCPTEST_SERVE": "1", "MCPTEST_STARTS": starts}
	for k, v := range env {
		e[k] = v
	}
	return profiles.MCPServer{Command: os.Args[0], Env: e, Approval: "auto"}, starts
}

func newTestPool(t *testing.T, dir string, servers map[string]profiles.MCPServer) *Pool {
	t.Helper()
	p, err := NewPool(dir, profiles.Config{MCPServers: servers}, "test", func(msg string) { t.Log("warn:", msg) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func startCount(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func tool(t *testing.T, tools []agent.Tool, name string) agent.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %d", name, len(tools))
	return nil
}

func run(t *testing.T, tl agent.Tool, args string) (string, error) {
	t.Helper()
	return tl.Run(context.Background(), &agent.Env{MaxOutput: agent.DefaultMaxOutput}, []byte(args))
}

// A server is started once to list its tools; the next process offers
// them from the cache without starting it, and starts it at the first
// call.
func TestLazyFromCache(t *testing.T) {
	dir := t.TempDir()
	srv, starts := testServer(t, nil)
	servers := map[string]profiles.MCPServer{"test": srv}

	p := newTestPool(t, dir, servers)
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := startCount(t, starts); n != 1 {
		t.Fatalf("listing started the server %d times, want 1", n)
	}
	tool(t, tools, "mcp__test__mixed_content")
	p.Close()

	p = newTestPool(t, dir, servers)
	tools, err = p.Select(context.Background(), []string{"mcp__test__echo", "mcp__test__p*"}, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || startCount(t, starts) != 1 || p.Running("test") {
		t.Fatalf("from the cache: %d tools, %d starts, running %v; want 2 tools and no new start", len(tools), startCount(t, starts), p.Running("test"))
	}
	out, err := run(t, tool(t, tools, "mcp__test__echo"), `{"text":"hi"}`)
	if err != nil || out != "echo: hi" {
		t.Fatalf("echo: %q, %v", out, err)
	}
	if n := startCount(t, starts); n != 2 {
		t.Fatalf("the call started the server %d times in all, want 2", n)
	}

	// Another configuration is listed again: the cache is keyed by it.
	srv.Args = []string{"-test.run=none"}
	p = newTestPool(t, dir, map[string]profiles.MCPServer{"test": srv})
	if _, err := p.Select(context.Background(), nil, fatal(t)); err != nil {
		t.Fatal(err)
	}
	if n := startCount(t, starts); n != 3 {
		t.Fatalf("a changed configuration: %d starts in all, want 3", n)
	}
}

// A call past tool_timeout is answered as timed out, and the same server
// answers the next call.
func TestToolTimeoutKeepsServer(t *testing.T) {
	srv, starts := testServer(t, nil)
	srv.ToolTimeout = "300ms"
	p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{"test": srv})
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, tool(t, tools, "mcp__test__hang"), `{}`)
	if err != nil || !strings.HasPrefix(out, "timed out after 300ms") {
		t.Fatalf("hang: %q, %v", out, err)
	}
	out, err = run(t, tool(t, tools, "mcp__test__echo"), `{"text":"still here"}`)
	if err != nil || out != "echo: still here" {
		t.Fatalf("echo after a timeout: %q, %v", out, err)
	}
	if n := startCount(t, starts); n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
}

// A server that exits under a call is answered unavailable with its
// stderr's last lines; the next call starts it again.
func TestCrashMidCall(t *testing.T) {
	dir := t.TempDir()
	srv, starts := testServer(t, nil)
	p := newTestPool(t, dir, map[string]profiles.MCPServer{"test": srv})
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, tool(t, tools, "mcp__test__crash"), `{}`)
	var u *Unavailable
	if !errors.As(err, &u) || !strings.Contains(u.Reason, "exit status 3") || !strings.Contains(u.Stderr, "crashing on purpose") {
		t.Fatalf("crash: %v", err)
	}
	l, _ := p.Cache.Read("test")
	if !strings.Contains(l.LastError, "MCP server test unavailable") {
		t.Fatalf("last_error %q", l.LastError)
	}
	log, _ := os.ReadFile(p.Cache.LogPath("test"))
	if !strings.Contains(string(log), "crashing on purpose") {
		t.Fatalf("stderr log: %q", log)
	}
	if st, err := p.Status(p.Specs[0]); err != nil || st.State != "failed" {
		t.Fatalf("status after the crash: %+v, %v; want failed", st, err)
	}
	out, err := run(t, tool(t, tools, "mcp__test__echo"), `{"text":"again"}`)
	if err != nil || out != "echo: again" || startCount(t, starts) != 2 {
		t.Fatalf("after a crash: %q, %v, %d starts", out, err, startCount(t, starts))
	}
	// A call answered since: the state is of its last use, listed, and
	// the failure stays told as the last error.
	if st, err := p.Status(p.Specs[0]); err != nil || st.State != "listed" || !strings.Contains(st.LastError, "unavailable") {
		t.Fatalf("status after a call answered: %+v, %v; want listed, with the last error", st, err)
	}
}

// A server that cannot start offers no tools: the selection goes on,
// says why, and records it.
func TestStartFailures(t *testing.T) {
	exits, _ := testServer(t, map[string]string{"MCPTEST_FAULT": "exit"})
	hangs, _ := testServer(t, map[string]string{"MCPTEST_FAULT": "hang"})
	hangs.StartupTimeout = "300ms"
	for name, c := range map[string]struct {
		srv  profiles.MCPServer
		want []string
	}{
		"missing": {profiles.MCPServer{Command: "hermes-no-such-server"}, []string{"executable file not found"}},
		"exits":   {exits, []string{"exit status 1", "cannot open the database"}},
		"hangs":   {hangs, []string{"did not answer within 300ms (startup_timeout)"}},
		"nourl":   {profiles.MCPServer{URL: "http://127.0.0.1:1/mcp"}, []string{"MCP server nourl unavailable"}},
		"unset":   {profiles.MCPServer{Command: "true", Env: map[string]string{"K": "${HERMES_TEST_UNSET}"}}, []string{"${HERMES_TEST_UNSET} is not set"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{name: c.srv})
			var warned string
			tools, err := p.Select(context.Background(), nil, func(s string) { warned += s })
			if err != nil || len(tools) != 0 {
				t.Fatalf("select: %d tools, %v", len(tools), err)
			}
			_, err = p.List(context.Background(), p.Specs[0])
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.Contains(warned, "MCP server "+name+" unavailable") {
				t.Errorf("warning %q", warned)
			}
			if l, _ := p.Cache.Read(name); l.LastError == "" {
				t.Errorf("no last_error recorded")
			}
		})
	}
}

// Results: an isError result is an error with its text; other content
// is named by type and size.
func TestResults(t *testing.T) {
	srv, _ := testServer(t, nil)
	p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{"test": srv})
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, tool(t, tools, "mcp__test__fail"), `{}`); err == nil || err.Error() != "the tool failed on purpose" {
		t.Fatalf("fail: %v", err)
	}
	out, err := run(t, tool(t, tools, "mcp__test__mixed_content"), `{}`)
	want := "a picture:\n[image image/png, 10 bytes]\n[resource file:///a.txt text/plain, 5 bytes]"
	if err != nil || out != want {
		t.Fatalf("mixed: %q, %v", out, err)
	}
}

// A call to a tool the server no longer lists renews the cache.
func TestToolGone(t *testing.T) {
	dir := t.TempDir()
	srv, _ := testServer(t, map[string]string{"MCPTEST_NO_ECHO": "1"})
	p := newTestPool(t, dir, map[string]profiles.MCPServer{"test": srv})
	if err := p.Cache.Listed("test", p.Specs[0].Key, []RemoteTool{{Name: "echo"}, {Name: "pid"}}); err != nil {
		t.Fatal(err)
	}
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, tool(t, tools, "mcp__test__echo"), `{"text":"x"}`)
	if err == nil || !strings.Contains(err.Error(), "no longer has the tool echo") {
		t.Fatalf("gone: %v", err)
	}
	l, _ := p.Cache.Read("test")
	if hasTool(l.Tools, "echo") || !hasTool(l.Tools, "pid") {
		t.Fatalf("the cache was not renewed: %+v", l.Tools)
	}
}

// Close leaves no server process behind.
func TestCloseEndsServer(t *testing.T) {
	srv, _ := testServer(t, nil)
	p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{"test": srv})
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, tool(t, tools, "mcp__test__pid"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmtSscan(out, &pid); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("server %d still there after Close: %v", pid, err)
	}
}

// Approval: auto needs none, ask needs it, deny refuses without calling.
func TestApproval(t *testing.T) {
	srv, starts := testServer(t, nil)
	dir := t.TempDir()
	p := newTestPool(t, dir, map[string]profiles.MCPServer{"test": srv})
	if _, err := p.Select(context.Background(), nil, fatal(t)); err != nil {
		t.Fatal(err)
	}
	p.Close()
	for _, c := range []struct{ approval, global string }{{"ask", ""}, {"deny", ""}, {"", "deny"}, {"", ""}} {
		srv.Approval = c.approval
		cfg := profiles.Config{MCPServers: map[string]profiles.MCPServer{"test": srv}}
		cfg.Tools.Approval = c.global
		p, err := NewPool(dir, cfg, "test", func(msg string) { t.Log(msg) })
		if err != nil {
			t.Fatal(err)
		}
		tools, err := p.Select(context.Background(), []string{"mcp__test__echo"}, fatal(t))
		if err != nil {
			t.Fatal(err)
		}
		policy := p.Specs[0].Approval
		if got := tools[0].NeedsApproval(nil); got != (policy == agent.PolicyAsk) {
			t.Errorf("%+v: NeedsApproval %v", c, got)
		}
		if policy == agent.PolicyDeny {
			out, err := run(t, tools[0], `{"text":"x"}`)
			if err != nil || !strings.HasPrefix(out, "not approved") {
				t.Errorf("%+v: deny answered %q, %v", c, out, err)
			}
		}
		p.Close()
	}
	if n := startCount(t, starts); n != 1 {
		t.Fatalf("%d starts, want 1: a denied call starts nothing", n)
	}
}

// fatal is a warn function that fails the test: no warning is expected.
func fatal(t *testing.T) func(string) {
	return func(msg string) { t.Helper(); t.Fatal(msg) }
}

// A tools/list_changed notification renews the cached list.
func TestListChanged(t *testing.T) {
	srv, _ := testServer(t, nil)
	p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{"test": srv})
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, tool(t, tools, "mcp__test__grow"), `{}`); err != nil || out != "added grown" {
		t.Fatalf("grow: %q, %v", out, err)
	}
	// The notification comes on its own; wait for its listing, boundedly.
	for i := 0; ; i++ {
		if l, _ := p.Cache.Read("test"); hasTool(l.Tools, "grown") {
			break
		}
		if i == 400 {
			t.Fatal("the cache never got the tool the server announced")
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// A server that exits between calls is started again by the next call,
// which it answers.
func TestExitBetweenCalls(t *testing.T) {
	srv, starts := testServer(t, nil)
	p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{"test": srv})
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, tool(t, tools, "mcp__test__pid"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmtSscan(out, &pid); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; p.Running("test"); i++ {
		if i == 400 {
			t.Fatal("the pool never saw its server exit")
		}
		time.Sleep(25 * time.Millisecond)
	}
	out, err = run(t, tool(t, tools, "mcp__test__echo"), `{"text":"back"}`)
	if err != nil || out != "echo: back" || startCount(t, starts) != 2 {
		t.Fatalf("after an exit between calls: %q, %v, %d starts", out, err, startCount(t, starts))
	}
}

// A stdio server gets the variables its env lists, ${VAR} expanded from
// hermes's, and the small base, not hermes's whole environment.
func TestServerEnvironment(t *testing.T) {
	t.Setenv("HERMES_TEST_TEAM", "blue")
	t.Setenv("HERMES_TEST_SECRET", "not for servers")
	t.Setenv("LANG", "C.UTF-8")
	environ := filepath.Join(t.TempDir(), "environ")
	srv, _ := testServer(t, map[string]string{"TEAM": "team ${HERMES_TEST_TEAM}", "MCPTEST_ENVIRON": environ})
	p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{"test": srv})
	if _, err := p.List(context.Background(), p.Specs[0]); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(environ)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, want := range []string{"TEAM=team blue", "LANG=C.UTF-8", "PATH=" + os.Getenv("PATH")} {
		if !slices.Contains(got, want) {
			t.Errorf("the server's environment lacks %s: %q", want, got)
		}
	}
	for _, kv := range got {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(baseEnv, name) && srv.Env[name] == "" {
			t.Errorf("the server got %s, which neither its env nor the base lists", kv)
		}
	}
}

// A result is cut to the turn's max_tool_output, as a built-in's is.
func TestResultCut(t *testing.T) {
	srv, _ := testServer(t, nil)
	p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{"test": srv})
	tools, err := p.Select(context.Background(), []string{"mcp__test__echo"}, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 5000)
	out, err := tools[0].Run(context.Background(), &agent.Env{MaxOutput: 1000}, []byte(`{"text":"`+long+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := agent.Cut("echo: "+long, 1000); out != want || len(out) >= 5000 {
		t.Fatalf("cut to %d bytes, want %d (agent.Cut)", len(out), len(want))
	}
}

// A disabled server (enabled: false) keeps its entry but offers nothing,
// starts nothing, and a tool of it named is refused.
func TestDisabledServer(t *testing.T) {
	srv, starts := testServer(t, nil)
	no := false
	srv.Enabled = &no
	p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{"test": srv})
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil || len(tools) != 0 {
		t.Fatalf("offered %d tools, %v; want none", len(tools), err)
	}
	_, err = p.Select(context.Background(), []string{"mcp__test__echo"}, fatal(t))
	if err == nil || !strings.Contains(err.Error(), "MCP server test is disabled") {
		t.Fatalf("a disabled server's tool named: %v", err)
	}
	if n := startCount(t, starts); n != 0 {
		t.Fatalf("%d starts, want none", n)
	}
}
