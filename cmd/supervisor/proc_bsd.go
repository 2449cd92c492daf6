//go:build darwin || (freebsd && (amd64 || arm64))

package supervisor

import "fmt"

// formatTimeval writes a process's start time as the BSDs keep it, in
// seconds and microseconds since 1970.
func formatTimeval(sec, usec int64) string {
	return fmt.Sprintf("%d.%06d", sec, usec)
}
