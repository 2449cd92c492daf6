//go:build !linux

package agent

import "os"

// exchange swaps the names a and b through a third name: other systems
// have no one-step exchange (macOS's renamex_np is not in x/sys), so for
// a moment a names nothing.
func exchange(a, b string) error {
	tmp := a + ".swap"
	if err := os.Rename(a, tmp); err != nil {
		return err
	}
	if err := os.Rename(b, a); err != nil {
		return err
	}
	return os.Rename(tmp, b)
}
