package testtmp

import (
	"flag"
	"os"
	"testing"
)

// Main runs m, with TMPDIR in memory when the package doc's conditions
// hold, and returns its exit code, for TestMain to pass to os.Exit.
func Main(m *testing.M) int {
	flag.Parse()
	if os.Getenv("TMPDIR") == "" && os.Getenv("HERMES_TEST_DISK") != "1" && !benchmarks() {
		if dir, release, err := memoryDir(); err == nil {
			os.Setenv("TMPDIR", dir)
			defer release()
		}
	}
	return m.Run()
}

// benchmarks says whether the run was asked for benchmarks (-bench): they
// measure what a change costs on the disk a user has, syncs included, so
// they keep the system's temporary directory.
func benchmarks() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}
