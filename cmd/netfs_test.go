package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
)

// A command that opens a profile says what fsstore.NetFSOnce reports, on
// stderr as a warning naming the type, the options and the README
// section, and still does its work; --version opens no profile and asks
// nothing.
func TestNetFSWarning(t *testing.T) {
	home := t.TempDir()
	var asked []string
	report := true
	old := netFSOnce
	t.Cleanup(func() { netFSOnce = old })
	netFSOnce = func(dir string) (fsstore.NetFS, bool) {
		asked = append(asked, dir)
		return fsstore.NetFS{Type: "nfs", Options: "noac"}, report
	}
	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := Run(append([]string{"hermes", "--home", home}, args...), strings.NewReader(""), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}

	if _, stderr, code := run("--version"); code != 0 || stderr != "" || len(asked) != 0 {
		t.Fatalf("--version: code %d, stderr %q, asked %q", code, stderr, asked)
	}
	stdout, stderr, code := run("sessions", "new", "--id", "s1")
	dir := filepath.Join(home, "profiles", "default")
	want := "hermes: warning: profile directory " + dir + " is on a network filesystem (nfs): hermes needs client caches that show every host's writes at once and flock locks kept by the servers (noac); see README, \"Running on several machines\"\n"
	if code != 0 || stdout != "s1\n" || stderr != want || len(asked) != 1 || asked[0] != dir {
		t.Fatalf("sessions new: code %d, stdout %q, stderr %q, asked %q; want stderr %q", code, stdout, stderr, asked, want)
	}
	report = false
	if _, stderr, code := run("sessions", "list"); code != 0 || stderr != "" || len(asked) != 2 {
		t.Fatalf("once warned: code %d, stderr %q, asked %q", code, stderr, asked)
	}
}
