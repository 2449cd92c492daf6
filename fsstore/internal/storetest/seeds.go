package storetest

import "os"

// Seeds is how many seeds a property test whose full run is full seeds
// runs (or rounds a kill loop whose full run is full rounds): all of them
// with HERMES_TEST_LONG=1 (.ci/run sets it), half of them (at least two)
// in a plain go test ./..., whose time they were the longest part of in
// their packages. Each seed is a fixed history, so a failure found by any
// of them is found again by the same run.
func Seeds(full int) int {
	if os.Getenv("HERMES_TEST_LONG") == "1" {
		return full
	}
	return max(2, full/2)
}
