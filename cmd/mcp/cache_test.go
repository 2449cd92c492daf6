package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/profiles"
)

// A damaged cache document is moved aside and said, never taken for an
// empty list: the server is listed again.
func TestCorruptCache(t *testing.T) {
	dir := t.TempDir()
	srv, starts := testServer(t, nil)
	var warned string
	p, err := NewPool(dir, profiles.Config{MCPServers: map[string]profiles.MCPServer{"test": srv}}, "test", func(s string) { warned += s })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := os.MkdirAll(p.Cache.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.Cache.Dir, "test.json"), []byte(`{"server":"test","tools":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	tools, err := p.Select(context.Background(), nil, fatal(t))
	if err != nil || len(tools) == 0 || startCount(t, starts) != 1 {
		t.Fatalf("%d tools, %v, %d starts", len(tools), err, startCount(t, starts))
	}
	if !strings.Contains(warned, "moved aside") {
		t.Fatalf("warning %q", warned)
	}
	aside, _ := filepath.Glob(filepath.Join(p.Cache.Dir, "test.json.corrupt-*"))
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v", aside)
	}
}

// The stderr log stays within twice MaxLog, and the tail keeps the last
// lines.
func TestStderrLogBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp", "s.stderr.log")
	l := openStderrLog(path)
	line := strings.Repeat("x", 99) + "\n"
	for i := 0; i < 3*MaxLog/len(line); i++ {
		l.Write([]byte(line))
	}
	l.Write([]byte("the last line\n"))
	l.Close()
	total := int64(0)
	for _, p := range []string{path, path + ".1"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > MaxLog {
			t.Errorf("%s is %d bytes, past %d", p, fi.Size(), MaxLog)
		}
		total += fi.Size()
	}
	if total < MaxLog {
		t.Errorf("only %d bytes kept", total)
	}
	tail := l.Tail()
	if lines := strings.Split(tail, "\n"); len(lines) != tailLines || lines[len(lines)-1] != "the last line" {
		t.Fatalf("tail: %q", tail)
	}
}
