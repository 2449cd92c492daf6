package fsstore

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestThisHost(t *testing.T) {
	t.Setenv(HostEnv, " build-7 ")
	if got := thisHost(); got != "build-7" {
		t.Fatalf("with %s set: %q", HostEnv, got)
	}
	t.Setenv(HostEnv, "")
	got := thisHost()
	name, _ := os.Hostname()
	if !strings.HasPrefix(got, name) {
		t.Fatalf("host id %q does not start with the hostname %q", got, name)
	}
	if runtime.GOOS == "linux" {
		boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err == nil && !strings.Contains(got, "/"+strings.TrimSpace(string(boot))) {
			t.Fatalf("host id %q lacks the boot id", got)
		}
	}
	// macOS and FreeBSD always have a boot time to read.
	if runtime.GOOS == "darwin" || runtime.GOOS == "freebsd" {
		if boot := bootID(); boot == "" || !strings.Contains(got, "/"+boot) {
			t.Fatalf("host id %q lacks the boot id %q", got, boot)
		}
	}
	if got != thisHost() {
		t.Fatal("the host id is not stable")
	}
}
