package mcp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hermes/hermes/profiles"
)

var fmtSscan = fmt.Sscan

func TestToolName(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"fs", "read_file", "mcp__fs__read_file"},
		{"my.server", "get/issue é", "mcp__my_server__get_issue__"},
		{"gh", "list-prs", "mcp__gh__list-prs"},
	} {
		if got := ToolName(c.server, c.tool); got != c.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
	long := strings.Repeat("x", 80)
	a, b := ToolName("srv", long+"a"), ToolName("srv", long+"b")
	if len(a) != MaxToolName || len(b) != MaxToolName || a == b || !strings.HasPrefix(a, "mcp__srv__xxx") {
		t.Fatalf("long names: %q %q", a, b)
	}
}

func TestSpecsRefuse(t *testing.T) {
	yes := true
	for _, c := range []struct {
		name string
		srv  profiles.MCPServer
		want string
	}{
		{"a", profiles.MCPServer{}, "needs a command"},
		{"a", profiles.MCPServer{Command: "x", URL: "http://h"}, "both a command and a url"},
		{"a", profiles.MCPServer{Command: "x", Headers: map[string]string{"k": "v"}}, "are for a url"},
		{"a", profiles.MCPServer{URL: "http://h", Args: []string{"x"}}, "are for a command"},
		{"a", profiles.MCPServer{URL: "ftp://h"}, "not an http or https URL"},
		{"a", profiles.MCPServer{Command: "x", ToolTimeout: "0s"}, "tool_timeout"},
		{"a", profiles.MCPServer{Command: "x", StartupTimeout: "soon"}, "startup_timeout"},
		{"a", profiles.MCPServer{Command: "x", Approval: "maybe"}, "approval"},
		{"a", profiles.MCPServer{Command: "x", Enabled: &yes, Approval: "auto", Tools: profiles.MCPToolFilter{Include: []string{"[x"}}}, "bad pattern"},
		{"../a", profiles.MCPServer{Command: "x"}, "MCP server name"},
		{".a", profiles.MCPServer{Command: "x"}, "MCP server name"},
	} {
		_, err := Specs(profiles.Config{MCPServers: map[string]profiles.MCPServer{c.name: c.srv}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.name, c.srv, err, c.want)
		}
	}
	_, err := Specs(profiles.Config{MCPServers: map[string]profiles.MCPServer{"a.b": {Command: "x"}, "a_b": {Command: "y"}}})
	if err == nil || !strings.Contains(err.Error(), "the same names") {
		t.Errorf("colliding names: %v", err)
	}
}

func TestOffered(t *testing.T) {
	s, err := parseSpec("s", profiles.MCPServer{Command: "x", Tools: profiles.MCPToolFilter{Include: []string{"read_*", "list"}, Exclude: []string{"read_secret"}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]bool{"read_file": true, "list": true, "read_secret": false, "write_file": false} {
		if s.Offered(tool) != want {
			t.Errorf("Offered(%s) = %v", tool, !want)
		}
	}
}
