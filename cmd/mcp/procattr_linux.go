package mcp

import "syscall"

// procAttr puts a server in its own process group, so that hermes kills
// what it started with it, and asks Linux to kill the server when hermes
// dies (a kill -9 included), which no cleanup of hermes's own can do.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
