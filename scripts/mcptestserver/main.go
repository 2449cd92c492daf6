// Command mcptestserver is the MCP test server of cmd/mcp/mcptest as a
// binary of its own, for measuring a first call to a Go stdio server
// without the test binary's weight (BenchmarkFirstCall's
// HERMES_BENCH_MCP_SERVER).
package main

import "github.com/hermes/hermes/cmd/mcp/mcptest"

func main() { mcptest.Main() }
