package testtmp

import (
	"os"
	"testing"
)

// Main runs m, with TMPDIR in memory when the package doc's conditions
// hold, and returns its exit code, for TestMain to pass to os.Exit.
func Main(m *testing.M) int {
	if os.Getenv("TMPDIR") == "" && os.Getenv("HERMES_TEST_DISK") != "1" {
		if dir, release, err := memoryDir(); err == nil {
			os.Setenv("TMPDIR", dir)
			defer release()
		}
	}
	return m.Run()
}
