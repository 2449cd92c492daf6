package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd/mcp"
	"github.com/hermes/hermes/profiles"
)

// BenchmarkChatMCPServers is a whole one-shot `hermes chat -q` (echo
// provider), in process, with no MCP server configured and with three
// whose tool lists (20 tools each) are cached: the three must cost only
// the reading of their lists, starting none (their commands do not exist:
// a start would warn, and fail the benchmark).
func BenchmarkChatMCPServers(b *testing.B) {
	for _, n := range []int{0, 3} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			root := b.TempDir()
			dir := filepath.Join(root, "profiles", "default")
			cfg := profiles.Config{MCPServers: map[string]profiles.MCPServer{}}
			var yaml strings.Builder
			if n > 0 {
				yaml.WriteString("mcp_servers:\n")
			}
			for i := range n {
				name := fmt.Sprintf("s%d", i)
				cfg.MCPServers[name] = profiles.MCPServer{Command: "hermes-bench-no-such-server", Approval: "auto"}
				fmt.Fprintf(&yaml, "  %s:\n    command: hermes-bench-no-such-server\n    approval: auto\n", name)
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(yaml.String()), 0o600); err != nil {
				b.Fatal(err)
			}
			pool, err := mcp.NewPool(dir, cfg, Version, func(msg string) { b.Fatal(msg) })
			if err != nil {
				b.Fatal(err)
			}
			schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"the file"},"limit":{"type":"integer"}},"required":["path"]}`)
			for _, s := range pool.Specs {
				tools := make([]mcp.RemoteTool, 20)
				for j := range tools {
					tools[j] = mcp.RemoteTool{Name: fmt.Sprintf("tool_%d", j), Description: "A tool that does one thing well, described in a sentence or two.", InputSchema: schema}
				}
				if err := pool.Cache.Listed(s.Name, s.Key, tools); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				var stderr bytes.Buffer
				code := Run([]string{"hermes", "--home", root, "chat", "--provider", "echo", "-q", "hi"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
				if code != 0 || stderr.Len() > 0 {
					b.Fatalf("exit %d: %s", code, stderr.String())
				}
			}
		})
	}
}
