package mcp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/hermes/hermes/profiles"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkFirstCall is the first call to a Go stdio server (the SDK's:
// this test binary, or the binary $HERMES_BENCH_MCP_SERVER names, such as
// go build ./scripts/mcptestserver) in a process whose pool offers its
// tools from the cache: start the server (and the guard, which a
// process starts with its first server), connect, call echo; then Close,
// which is not timed.
func BenchmarkFirstCall(b *testing.B) {
	srv := benchServer(b)
	dir := b.TempDir()
	servers := map[string]profiles.MCPServer{"go": srv}
	p, err := NewPool(dir, profiles.Config{MCPServers: servers}, "bench", func(msg string) { b.Fatal(msg) })
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.List(context.Background(), p.Specs[0]); err != nil {
		b.Fatal(err)
	}
	p.Close()
	var took []time.Duration
	for b.Loop() {
		p, err := NewPool(dir, profiles.Config{MCPServers: servers}, "bench", func(msg string) { b.Fatal(msg) })
		if err != nil {
			b.Fatal(err)
		}
		procGuard = &guard{}
		start := time.Now()
		tools, err := p.Select(context.Background(), []string{"mcp__go__echo"}, func(msg string) { b.Fatal(msg) })
		if err != nil || len(tools) != 1 {
			b.Fatal(len(tools), err)
		}
		if _, err := tools[0].Run(context.Background(), nil, []byte(`{"text":"hi"}`)); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		p.Close()
		if procGuard.w != nil {
			procGuard.w.Close() // the guard exits, as at hermes's exit
		}
		b.StartTimer()
	}
	reportFirstCalls(b, took)
}

// BenchmarkFirstCallSDK is BenchmarkFirstCall's reference: the same
// server started, connected and called through the SDK alone
// (CommandTransport), with none of hermes's pool, cache or process
// handling. The difference between the two is hermes's part of a first
// call; the rest is the server's start and the protocol's handshake.
func BenchmarkFirstCallSDK(b *testing.B) {
	srv := benchServer(b)
	var took []time.Duration
	for b.Loop() {
		cmd := serverCmd(srv)
		start := time.Now()
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "bench"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		cs.Close()
		b.StartTimer()
	}
	reportFirstCalls(b, took)
}

// BenchmarkServerExec is the floor under both: the same server started
// with its input at its end at once, so that it starts, reads the end and
// exits, with no MCP message. On a Go server built with the SDK it is
// most of a first call.
func BenchmarkServerExec(b *testing.B) {
	srv := benchServer(b)
	var took []time.Duration
	for b.Loop() {
		cmd := serverCmd(srv)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	reportFirstCalls(b, took)
}

// benchServer is the server the benchmarks start: the test binary as a
// Go stdio server, or the binary $HERMES_BENCH_MCP_SERVER names.
func benchServer(b *testing.B) profiles.MCPServer {
	srv, _ := testServer(b, nil)
	if bin := os.Getenv("HERMES_BENCH_MCP_SERVER"); bin != "" {
		srv.Command = bin
	}
	return srv
}

// serverCmd is srv's command with its environment and nothing else.
func serverCmd(srv profiles.MCPServer) *exec.Cmd {
	cmd := exec.Command(srv.Command)
	for k, v := range srv.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// reportFirstCalls reports the median and the least of the times: on a
// shared machine the mean follows the other processes' load, the least
// what the work itself needs.
func reportFirstCalls(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(took[len(took)/2]), "median-ms")
	b.ReportMetric(ms(took[0]), "min-ms")
}

// BenchmarkLaterCall is one call to a running Go stdio server.
func BenchmarkLaterCall(b *testing.B) {
	srv, _ := testServer(b, nil)
	p, err := NewPool(b.TempDir(), profiles.Config{MCPServers: map[string]profiles.MCPServer{"go": srv}}, "bench", func(msg string) { b.Fatal(msg) })
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	tools, err := p.Select(context.Background(), []string{"mcp__go__echo"}, func(msg string) { b.Fatal(msg) })
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := tools[0].Run(context.Background(), nil, []byte(`{"text":"hi"}`)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSelectCached is what three configured servers whose lists
// (20 tools each) are cached add to a turn that calls none of them:
// reading the lists and building the tools' schemas. Nothing starts.
func BenchmarkSelectCached(b *testing.B) {
	dir := b.TempDir()
	servers := map[string]profiles.MCPServer{}
	for _, name := range []string{"a", "b", "c"} {
		servers[name] = profiles.MCPServer{Command: "hermes-bench-no-such-server"}
	}
	p, err := NewPool(dir, profiles.Config{MCPServers: servers}, "bench", func(msg string) { b.Fatal(msg) })
	if err != nil {
		b.Fatal(err)
	}
	schema := []byte(`{"type":"object","properties":{"path":{"type":"string","description":"the file"},"limit":{"type":"integer"}},"required":["path"]}`)
	for _, s := range p.Specs {
		tools := make([]RemoteTool, 20)
		for i := range tools {
			tools[i] = RemoteTool{Name: fmt.Sprintf("tool_%d", i), Description: "A tool that does one thing well, described in a sentence or two.", InputSchema: schema}
		}
		if err := p.Cache.Listed(s.Name, s.Key, tools); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		tools, err := p.Select(context.Background(), nil, func(msg string) { b.Fatal(msg) })
		if err != nil || len(tools) != 60 {
			b.Fatal(len(tools), err)
		}
		for _, t := range tools {
			t.Schema()
		}
	}
}
