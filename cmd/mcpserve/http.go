package mcpserve

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes/hermes/cmd/gateway"
)

// Handler serves srv as streamable HTTP at /mcp behind the gateway's
// checks (gateway.Protect): Host, Origin, and the bearer key.
func Handler(srv *mcp.Server, addr, key string, hosts, origins []string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	return gateway.Protect(mux, addr, key, hosts, origins)
}
