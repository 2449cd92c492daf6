package sessions

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// syncFS commits every write to the file system that holds dir: one
// syncfs instead of one sync per bucket.
func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
