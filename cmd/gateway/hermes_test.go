package gateway_test

import (
	"os"

	"github.com/hermes/hermes/cmd"
)

// init makes this test binary the hermes command when the process tests
// start it so (runHermesEnv in process_test.go: an external test package,
// since cmd imports the gateway), before the testing package reads its
// flags.
func init() {
	if os.Getenv("GATEWAY_TEST_RUN_HERMES") == "1" {
		os.Exit(cmd.Main())
	}
}
