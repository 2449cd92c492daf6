package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bareSkip is a script's skip that says nothing: a condition, skip, and
// no message.
var bareSkip = regexp.MustCompile(`^\s*(\[[^\]]*\]\s*)*skip\s*$`)

// TestScriptSkipsSayWhy: every skip in a script names what is missing and
// how to get it, as the Go tests' skips do (README, "Tests"), so that a
// run that skipped a script says why.
func TestScriptSkipsSayWhy(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range scripts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The script itself, not its files (after the first "-- name --").
		script, _, _ := strings.Cut(string(b), "\n-- ")
		for i, line := range strings.Split(script, "\n") {
			if bareSkip.MatchString(line) {
				t.Errorf("%s:%d: a skip that does not say why: %q", path, i+1, line)
			}
		}
	}
}
