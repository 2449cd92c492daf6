package cmd

import (
	"io"
	"strings"
	"testing"
)

// BenchmarkRunVersion is what every command pays inside the process before
// its own work: building the command tree and parsing the arguments
// (process start-up and package initialisation are outside it:
// scripts/bench.sh times `hermes --version` whole).
func BenchmarkRunVersion(b *testing.B) {
	for b.Loop() {
		if code := Run([]string{"hermes", "--version"}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}

// BenchmarkRunAppend is `hermes sessions append` in the process: the
// command tree, the profile's resolution and the store's append.
func BenchmarkRunAppend(b *testing.B) {
	e, id := benchEnv(b, 10)
	args := []string{"hermes", "--home", e.profile.Root, "sessions", "append", id, "--role", "user", "--content", "run the tests again"}
	for b.Loop() {
		if code := Run(args, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}
