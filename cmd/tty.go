package cmd

import (
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether f is a terminal. /dev/null is a character
// device too, so the mode bits are not enough: term asks for terminal
// attributes, on every platform.
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}
