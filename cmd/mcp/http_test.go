package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes/hermes/cmd/mcp/mcptest"
	"github.com/hermes/hermes/profiles"
)

// A streamable HTTP server gets its headers, ${VAR} expanded, and its
// bearer token; a server that goes away is unavailable.
func TestHTTPServer(t *testing.T) {
	t.Setenv("HERMES_TEST_TEAM", "blue")
	t.Setenv("HERMES_TEST_TOKEN", "s3cret")
	server := mcptest.NewServer()
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Team") != "blue" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		seen = append(seen, r.Method)
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()

	p := newTestPool(t, t.TempDir(), map[string]profiles.MCPServer{"web": {
		URL: srv.URL, Headers: map[string]string{"X-Team": "${HERMES_TEST_TEAM}"}, BearerTokenEnv: "HERMES_TEST_TOKEN", Approval: "auto",
	}})
	tools, err := p.Select(context.Background(), []string{"mcp__web__echo"}, fatal(t))
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, tool(t, tools, "mcp__web__echo"), `{"text":"over http"}`)
	if err != nil || out != "echo: over http" {
		t.Fatalf("echo: %q, %v (requests %v)", out, err, seen)
	}

	srv.CloseClientConnections()
	srv.Close()
	_, err = run(t, tool(t, tools, "mcp__web__echo"), `{"text":"gone"}`)
	if err == nil || !strings.Contains(err.Error(), "MCP server web unavailable") {
		t.Fatalf("after the server went away: %v", err)
	}
}
