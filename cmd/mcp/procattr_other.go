//go:build !linux

package mcp

import "syscall"

// procAttr puts a server in its own process group, so that hermes (or,
// after a kill -9 of hermes, the guard) kills what it started with it.
// Only Linux has a parent-death signal.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
