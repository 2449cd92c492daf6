package main

import (
	"net"

	"github.com/rogpeppe/go-internal/testscript"
)

// unixSocketCmd is the testscript command `unix-socket PATH`: a Unix
// socket listening at PATH until the script ends.
func unixSocketCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: unix-socket PATH")
	}
	l, err := net.Listen("unix", ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Defer(func() { l.Close() })
}
