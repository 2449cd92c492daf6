package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// scriptsHermesDir is the directory of the hermes the scripts run,
// made by scriptsHermes and removed by testsRun once the tests end.
var scriptsHermesDir string

// scriptsHermes builds, once a run, the hermes the scripts run, as
// scripts/build.sh builds a release (CGO_ENABLED=0, -tags
// urfave_cli_no_docs, with the tags this test binary was built with), and
// returns the directory that holds it, for the scripts' PATH; "" when the
// scripts run this test binary as hermes instead: under the race detector
// (a race in hermes's code paths must fail its script), with coverage (the
// scripts' processes report theirs), or when no go command is at hand (a
// test binary run by hand).
//
// The scripts start hermes about 3,400 times, and a start of the test
// binary cost 7.3 to 8.7 ms of processor against 5.4 to 6.2 ms for the
// release build (no dynamic loader and libc, no Markdown renderer's
// initialisation, a smaller binary to map): 6 to 8 s of the suite's
// processor time, for a link of about 2 s, which a run pays only when the
// code changed (linkScriptsHermes). The scripts then also run what users
// run.
var scriptsHermes = sync.OnceValues(func() (string, error) {
	if raceEnabled || testing.CoverMode() != "" {
		return "", nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", nil
	}
	sweepScriptsHermes()
	dir, err := os.MkdirTemp(userTempDir, "hermes-scripts-")
	if err != nil {
		return "", err
	}
	scriptsHermesDir = dir
	return dir, linkScriptsHermes(goCmd, scriptsHermesLinkDir(), filepath.Join(dir, "hermes"))
})

// scriptsHermesLinkDir is where the scripts' hermes is linked and kept
// from one run to the next: a directory of the user's cache (else of the
// temporary directory) for each checkout and set of tags.
func scriptsHermesLinkDir() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = userTempDir
	}
	wd, _ := os.Getwd()
	sum := sha256.Sum256([]byte(wd + "\x00" + strings.Join(buildTags(), ",")))
	return filepath.Join(cache, "hermes-test", "scripts-hermes-"+hex.EncodeToString(sum[:6]))
}

// linkScriptsHermes builds hermes in dir unless go build finds the one
// there up to date, which it then does not link again (a link is 1.3 to
// 2 s of processor; the check 0.2 s), and copies it to the new file to.
// It holds a lock on dir meanwhile, so that a run never copies what a run
// of other code is linking.
func linkScriptsHermes(goCmd, dir, to string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	unlock, err := fsstore.Lock(filepath.Join(dir, "lock"), 10*time.Minute)
	if err != nil {
		return err
	}
	defer unlock()
	linked := filepath.Join(dir, "hermes")
	cmd := exec.Command(goCmd, "build", "-buildvcs=false", "-tags", strings.Join(buildTags(), ","),
		"-o", linked, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building hermes for the scripts: %v\n%s", err, out)
	}
	return copyExecutable(linked, to)
}

// buildScriptsHermesEarly starts scriptsHermes's build when the run will
// run the scripts, so that the link (2 s of processor) runs beside the
// tests before them rather than holding the scripts back.
func buildScriptsHermesEarly() {
	pattern := flag.Lookup("test.run").Value.String()
	first, _, _ := strings.Cut(pattern, "/")
	if matched, err := regexp.MatchString(first, "TestScripts"); err == nil && matched &&
		flag.Lookup("test.list").Value.String() == "" {
		builtEarly = true
		go scriptsHermes()
	}
}

// sweepScriptsHermes removes the scripts' hermes that test binaries
// killed before their end left (a test timeout, a kill), once they are
// older than any run, and the linked ones (scriptsHermesLinkDir) that no
// run has built for two weeks (go build touches one it finds up to date):
// a checkout removed, tags no longer used.
func sweepScriptsHermes() {
	old, _ := filepath.Glob(filepath.Join(userTempDir, "hermes-scripts-*"))
	for _, dir := range old {
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > 6*time.Hour {
			os.RemoveAll(dir)
		}
	}
	linked, _ := filepath.Glob(filepath.Join(filepath.Dir(scriptsHermesLinkDir()), "scripts-hermes-*", "hermes"))
	for _, exe := range linked {
		if fi, err := os.Lstat(exe); err == nil && time.Since(fi.ModTime()) > 14*24*time.Hour {
			os.RemoveAll(filepath.Dir(exe))
		}
	}
}

// builtEarly says that buildScriptsHermesEarly started the build.
var builtEarly bool

// userTempDir is the temporary directory of the user's, read before
// TestMain puts the tests' files in memory (fsstore/testtmp): the
// scripts' hermes is mapped by each of its thousands of starts, and a
// file on a disk filesystem that was written in one pass (a copy, not the
// linker's writes through a memory map) is mapped from the page cache in
// large blocks, where a tmpfs maps it page by page: a start cost 0.3 to
// 1 ms of processor less (ext4 on Linux 6; README, "Tests").
var userTempDir = os.TempDir()

// copyExecutable copies the executable from to a new file to in one
// write: the page cache keeps what one write filled in larger blocks
// than what many small ones did (a start of a copy written 32 KB at a
// time cost 4.6 ms, in one write 4.0 ms).
func copyExecutable(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// buildTags are the tags this test binary was built with, and
// urfave_cli_no_docs.
func buildTags() []string {
	tags := []string{"urfave_cli_no_docs"}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-tags" && s.Value != "" {
				tags = append(tags, strings.Split(s.Value, ",")...)
			}
		}
	}
	return tags
}

// TestScriptsHermesIsReleaseBuild: the hermes the scripts run is built as
// a release is, static and without urfave/cli's Markdown renderer, and with
// the test's own tags.
func TestScriptsHermesIsReleaseBuild(t *testing.T) {
	dir, err := scriptsHermes()
	if err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		t.Skip("the scripts run the test binary (race detector, coverage, or no go command)")
	}
	info, err := buildinfo.ReadFile(filepath.Join(dir, "hermes"))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" {
		t.Errorf("CGO_ENABLED=%q, want 0", settings["CGO_ENABLED"])
	}
	tags := strings.Split(settings["-tags"], ",")
	for _, want := range buildTags() {
		if !slices.Contains(tags, want) {
			t.Errorf("tags %q lack %q", settings["-tags"], want)
		}
	}
	for _, dep := range info.Deps {
		if strings.Contains(dep.Path, "blackfriday") {
			t.Errorf("linked %s", dep.Path)
		}
	}
}

// TestScriptsHermesLinkedOnce: the scripts' hermes is linked once for a
// checkout and its tags, and kept: building it again links nothing, the
// file is still the one a build wrote.
func TestScriptsHermesLinkedOnce(t *testing.T) {
	dir, err := scriptsHermes()
	if err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		t.Skip("the scripts run the test binary (race detector, coverage, or no go command)")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(scriptsHermesLinkDir(), "hermes")
	before, err := os.Stat(linked)
	if err != nil {
		t.Fatal(err)
	}
	if err := linkScriptsHermes(goCmd, scriptsHermesLinkDir(), filepath.Join(t.TempDir(), "hermes")); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(linked)
	if err != nil {
		t.Fatal(err)
	}
	// A link writes a new file and renames it over the old one; go build
	// only touches one it finds up to date.
	if !os.SameFile(before, after) {
		t.Errorf("%s linked again", linked)
	}
}

// removeScriptsHermes removes what scriptsHermes built, once a build
// started early has ended (-skip may have left out the scripts).
func removeScriptsHermes() {
	if builtEarly {
		scriptsHermes()
	}
	if scriptsHermesDir != "" {
		os.RemoveAll(scriptsHermesDir)
	}
}
