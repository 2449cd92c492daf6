//go:build !linux

package mcp

import "syscall"

// procAttr puts a server in its own process group, so that hermes kills
// what it started with it. Only Linux has a parent-death signal: elsewhere
// a server outlives a kill -9 of hermes until it reads the end of its
// input, which the MCP stdio transport tells it to take as the end.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
