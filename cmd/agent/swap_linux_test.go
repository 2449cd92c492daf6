package agent

import "golang.org/x/sys/unix"

// exchange swaps the names a and b in one step (renameat2
// RENAME_EXCHANGE), so that each always names something.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
