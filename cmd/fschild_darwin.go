package cmd

import "syscall"

// fsChildAttr is nothing on macOS, which has no parent-death signal: a
// parent killed with SIGKILL leaves its watched child to finish the
// command (the signals that can be caught are passed on).
func fsChildAttr() *syscall.SysProcAttr { return nil }
