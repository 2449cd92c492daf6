package fsstore

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestOpenIsOneCall counts, with strace, the system calls beside the open
// itself that the opens of a turn make (a log opened to append, a log
// opened to be read): os.OpenFile made four fcntl and an epoll_ctl for
// each, which a regular file does not need (OpenFile). The helper process
// opens n files of each kind; the calls of a run of none are taken from a
// run of 200, which leaves the opens' own.
func TestOpenIsOneCall(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace is not installed")
	}
	calls := func(n int) map[string]int {
		dir := t.TempDir()
		out := filepath.Join(dir, "strace.txt")
		helper := storetest.HelperCommand(t, "TestHelperOpener", storetest.HelperRoleEnv+"=opener",
			storetest.HelperDirEnv+"="+dir, storetest.HelperNEnv+"="+strconv.Itoa(n))
		cmd := exec.Command("strace", append([]string{"-f", "-qq", "-c", "-o", out, "-e", "trace=fcntl,epoll_ctl,openat"}, helper.Args...)...)
		cmd.Env = helper.Env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		// strace -c: "% time seconds usecs/call calls [errors] syscall".
		got := map[string]int{}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 5 {
				continue
			}
			if c, err := strconv.Atoi(f[3]); err == nil {
				got[f[len(f)-1]] = c
			}
		}
		return got
	}
	const n = 200
	base, run := calls(0), calls(n)
	opens := run["openat"] - base["openat"]
	if opens < 2*n {
		t.Fatalf("%d opens counted, want at least %d: %v against %v", opens, 2*n, run, base)
	}
	for _, name := range []string{"fcntl", "epoll_ctl"} {
		per := float64(run[name]-base[name]) / float64(2*n)
		t.Logf("%s: %.2f an open", name, per)
		if want := map[string]float64{"fcntl": 1, "epoll_ctl": 0}[name]; per > want+0.1 {
			t.Errorf("%s: %.2f calls an open, want at most %v", name, per, want)
		}
	}
}

// TestHelperOpener is the process TestOpenIsOneCall traces: it opens
// FSSTORE_TEST_N logs to append and as many to read.
func TestHelperOpener(t *testing.T) {
	if os.Getenv(storetest.HelperRoleEnv) != "opener" {
		t.Skip("helper process of TestOpenIsOneCall, which runs it")
	}
	dir := os.Getenv(storetest.HelperDirEnv)
	n, err := strconv.Atoi(os.Getenv(storetest.HelperNEnv))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "log.jsonl")
	if err := os.WriteFile(path, []byte("{}\n"), FileMode); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f, _, err := OpenAppend(path, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		r, size, err := OpenSizedFlag(path, os.O_RDONLY|syscall.O_NOFOLLOW)
		if err != nil || r == nil || size != 3 {
			t.Fatal(fmt.Sprint(i), r, size, err)
		}
		r.Close()
	}
}
