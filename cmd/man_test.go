package cmd

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The man page's ENVIRONMENT names every HERMES_ variable the sources
// read or set (the tests' own, HERMES_TEST_ and HERMES_BENCH_, aside), and
// its EXIT STATUS, FILES and EXAMPLES are there.
func TestManPageSections(t *testing.T) {
	page := manPage(NewApp(strings.NewReader(""), io.Discard, io.Discard), 1)
	for _, h := range []string{".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES", ".SH EXAMPLES"} {
		if !strings.Contains(page, h) {
			t.Errorf("no %s", h)
		}
	}
	env := page[strings.Index(page, ".SH ENVIRONMENT"):strings.Index(page, ".SH FILES")]
	name := regexp.MustCompile(`"(HERMES_[A-Z_]+)`)
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "scripts") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range name.FindAllStringSubmatch(string(b), -1) {
			v := m[1]
			if strings.HasPrefix(v, "HERMES_TEST_") || strings.HasPrefix(v, "HERMES_BENCH_") || seen[v] {
				continue
			}
			seen[v] = true
			if !strings.Contains(env, roff(v)) {
				t.Errorf("%s (read in %s) is not in the man page's ENVIRONMENT", v, path)
			}
		}
		return err
	})
	if err != nil || len(seen) < 5 {
		t.Fatalf("walked the sources: %v, found %d variables", err, len(seen))
	}
	for _, code := range []string{"\n.B 0\n", "\n.B 5\n"} {
		if !strings.Contains(page, code) {
			t.Errorf("EXIT STATUS lacks %q", code)
		}
	}
}
