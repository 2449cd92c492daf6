package mcp

import (
	"context"
	"testing"
	"time"

	"github.com/hermes/hermes/profiles"
)

// BenchmarkFirstCall is the first call to a Go stdio server (the SDK's,
// in this test binary) in a process whose pool offers its tools from the
// cache: start the server, connect, call echo; then Close, which is not
// timed. first-call-ms is the median's input.
func BenchmarkFirstCall(b *testing.B) {
	srv, _ := testServer(b, nil)
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
	var total time.Duration
	n := 0
	for b.Loop() {
		p, err := NewPool(dir, profiles.Config{MCPServers: servers}, "bench", func(msg string) { b.Fatal(msg) })
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		tools, err := p.Select(context.Background(), []string{"mcp__go__echo"}, func(msg string) { b.Fatal(msg) })
		if err != nil || len(tools) != 1 {
			b.Fatal(len(tools), err)
		}
		if _, err := tools[0].Run(context.Background(), nil, []byte(`{"text":"hi"}`)); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		n++
		b.StopTimer()
		p.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(n), "first-call-ms")
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
