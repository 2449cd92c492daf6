package mcpserve

import (
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes/hermes/cmd/gateway"
)

// mcpHeaders are the request headers of the streamable HTTP transport: a
// page of an allowed origin sends them, so its preflight must allow them.
var mcpHeaders = []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID"}

// DefaultIdleTimeout is how long a session of mcp serve --http lives
// without a request when --idle-timeout is not given.
const DefaultIdleTimeout = time.Hour

// Handler serves srv as streamable HTTP at /mcp behind the gateway's
// checks (gateway.Protect): Host, Origin, and the bearer key. CORS is the
// gateway's, for the allowed origins only, with MCP's own: the transport's
// headers allowed, DELETE (a client ending its session) among the
// methods, and Mcp-Session-Id, which a client must read to go on, exposed.
// A session that receives no request (a POST: an open event stream does
// not count) for idle is closed and forgotten, so that clients that leave
// without a DELETE do not hold the server's memory; a request that names
// it then gets 404, on which a client starts a new session. Zero keeps
// sessions until their client ends them.
func Handler(srv *mcp.Server, addr, key string, hosts, origins []string, idle time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{SessionTimeout: idle}))
	protected := gateway.Protect(mux, addr, key, hosts, origins)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		protected.ServeHTTP(&corsWriter{ResponseWriter: w, preflight: preflight}, r)
	})
}

// corsWriter adds MCP's CORS headers to a response the gateway's checks
// answer for an allowed origin (one they gave Access-Control-Allow-Origin),
// as its header is written.
type corsWriter struct {
	http.ResponseWriter
	preflight bool
	wrote     bool
}

func (c *corsWriter) WriteHeader(code int) {
	if !c.wrote {
		c.wrote = true
		h := c.Header()
		if h.Get("Access-Control-Allow-Origin") != "" {
			if c.preflight {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
				h.Set("Access-Control-Allow-Headers", strings.Join(append([]string{h.Get("Access-Control-Allow-Headers")}, mcpHeaders...), ", "))
			} else {
				h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id")
			}
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *corsWriter) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// Flush and Unwrap keep the transport's event streams flowing through the
// wrapper (http.Flusher, http.ResponseController).
func (c *corsWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		if !c.wrote {
			c.WriteHeader(http.StatusOK)
		}
		f.Flush()
	}
}

func (c *corsWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
