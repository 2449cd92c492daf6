package main

import (
	"net"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

// freePortCmd is the testscript command `free-port VAR`: sets VAR to a
// TCP port of 127.0.0.1 that was free a moment ago, for a server that
// takes its port from the environment (the npm MCP servers), so that
// scripts run at once, or two runs on one machine, do not share one.
func freePortCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: free-port VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := l.Addr().(*net.TCPAddr).Port
	ts.Check(l.Close())
	ts.Setenv(args[0], strconv.Itoa(port))
}
