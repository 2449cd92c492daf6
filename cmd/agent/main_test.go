package agent

import (
	"os"
	"testing"

	"github.com/hermes/hermes/fsstore/testtmp"
)

// TestMain puts the tests' temporary files in memory where it may
// (fsstore/testtmp).
func TestMain(m *testing.M) { os.Exit(testtmp.Main(m)) }
