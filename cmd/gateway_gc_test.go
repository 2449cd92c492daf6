package cmd

import (
	"runtime/debug"
	"testing"
)

// TestGatewayGC: a serving gateway collects at GOGC 400 (its collections
// were a tenth of a turn's CPU at Go's 100), unless the environment sets
// GOGC, which it leaves to the runtime.
func TestGatewayGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	t.Setenv("GOGC", "")
	gatewayGC()
	if got := debug.SetGCPercent(100); got != gatewayGCPercent {
		t.Errorf("GOGC unset: the collector's percent is %d, want %d", got, gatewayGCPercent)
	}
	t.Setenv("GOGC", "100")
	gatewayGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100: the collector's percent is %d, want the environment's 100", got)
	}
}
