//go:build !linux

package cmd

import "os"

// isTerminal reports whether f is a character device: the best guess
// without terminal ioctls on this platform.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
