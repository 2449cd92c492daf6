package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// peakRSS runs hermes on home with stdin and env, and returns its exit
// code, its stderr and its peak resident memory in bytes (rusage Maxrss).
// hermes runs under peak-rss (peakRSSMain), not as this process's child:
// os/exec starts a child in this process's address space (vfork), and
// Linux counts the peak of the address space an exec replaces in the new
// program's Maxrss, so a child of a test process grown large by other
// tests would report that size, not its own.
func peakRSS(t *testing.T, home string, stdin io.Reader, env []string, args ...string) (int, string, int64) {
	t.Helper()
	runner, err := exec.LookPath("peak-rss")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "rss")
	cmd := exec.Command(runner, append([]string{"hermes", "--home", home}, args...)...)
	cmd.Env = append(os.Environ(), append([]string{"HERMES_PROFILE=default", "HERMES_PROVIDER=echo", "HERMES_MODEL=", "PEAK_RSS_FILE=" + out}, env...)...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("peak-rss wrote no figure: %v: %s", err, stderr.String())
	}
	rss, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String(), rss
}

// peakRSSMain runs its arguments as a command with its own streams, writes
// the command's peak resident memory in bytes to $PEAK_RSS_FILE, and exits
// with the command's exit code. It is small, so the Maxrss of the command
// it starts is the command's own.
func peakRSSMain() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "peak-rss:", err)
		os.Exit(1)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	if runtime.GOOS == "linux" || runtime.GOOS == "freebsd" {
		rss <<= 10 // kilobytes there, bytes on macOS
	}
	if err := os.WriteFile(os.Getenv("PEAK_RSS_FILE"), []byte(strconv.FormatInt(rss, 10)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "peak-rss:", err)
		os.Exit(1)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}

// repeatReader is n bytes of c, between a head and a tail.
func repeatReader(head string, c byte, n int64, tail string) io.Reader {
	return io.MultiReader(strings.NewReader(head), io.LimitReader(byteReader(c), n), strings.NewReader(tail))
}

type byteReader byte

func (b byteReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

const mib = 1 << 20

// readFileAgent calls read_file on $READ_PATH, then replies with the
// result's length.
const readFileAgent = `in=$(cat)
case "$(printf '%s\n' "$in" | tail -n 1)" in
*'"role":"tool"'*) echo '{"role":"assistant","content":"read"}' ;;
*) printf '{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\\"path\\":\\"%s\\"}"}}]}\n' "$READ_PATH" ;;
esac
`

// read_file holds a bounded amount of memory whatever the file (issue 27
// item 5: a 1 GiB sparse file with 9,000 text bytes before its zeros took
// hermes to 3.1 GB, a 400 MB single-line file to 1.2 GB).
func TestReadFileMemory(t *testing.T) {
	skipUnlessLong(t, "writes a 400 MB file")
	if raceEnabled {
		t.Skip("the race detector's memory is not the program's: go test . (without -race) runs it")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "hermes")
	agent := filepath.Join(dir, "agent.sh")
	os.WriteFile(agent, []byte(readFileAgent), 0o600)

	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Repeat("text line\n", 900))
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()

	line := filepath.Join(dir, "line")
	f, err = os.Create(line)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, repeatReader("", 'a', 400*mib, "\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()

	for _, path := range []string{sparse, line} {
		env := []string{"HERMES_PROVIDER=exec", "HERMES_EXEC_COMMAND=sh " + agent, "READ_PATH=" + path}
		code, stderr, rss := peakRSS(t, home, nil, env, "chat", "--tools", "read_file", "-q", "read it")
		t.Logf("%s: exit %d, peak RSS %d MiB", filepath.Base(path), code, rss/mib)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", path, code, stderr)
		}
		if rss > 64*mib {
			t.Errorf("%s: peak RSS %d MiB, want at most 64", path, rss/mib)
		}
	}
}

// sessions append and import refuse a line past sessions.max_line (64 MiB
// by default) with exit 2, and their memory does not follow the line's
// size (issue 27 item 5: a 100 MB line through sessions append took
// 1.04 GB).
func TestLongLineMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's memory is not the program's: go test . (without -race) runs it")
	}
	home := filepath.Join(t.TempDir(), "hermes")
	if code, stderr, _ := peakRSS(t, home, nil, nil, "sessions", "new", "--id", "s"); code != 0 {
		t.Fatal(stderr)
	}
	message := func(n int64) io.Reader {
		return repeatReader(`{"role":"user","content":"`, 'a', n, "\"}\n")
	}
	for _, c := range []struct {
		name   string
		config string
		stdin  io.Reader
		args   []string
		want   string
		max    int64
	}{
		{"append, default limit", "", message(100 * mib), []string{"sessions", "append", "s"},
			"hermes: stdin: line 1 is longer than sessions.max_line (67108864 bytes)", 200 * mib},
		{"import, default limit", "", repeatReader(`{"id":"imp","messages":[{"role":"user","content":"`, 'a', 100*mib, "\"}]}\n"), []string{"sessions", "import", "-"},
			"hermes: read input: stdin: line 1 is longer than sessions.max_line (67108864 bytes)", 200 * mib},
		{"append, 1 MiB limit", "sessions:\n  max_line: 1048576\n", message(100 * mib), []string{"sessions", "append", "s"},
			"hermes: stdin: line 1 is longer than sessions.max_line (1048576 bytes)", 48 * mib},
	} {
		if err := os.WriteFile(filepath.Join(home, "profiles", "default", "config.yaml"), []byte(c.config), 0o600); err != nil {
			t.Fatal(err)
		}
		code, stderr, rss := peakRSS(t, home, c.stdin, nil, c.args...)
		t.Logf("%s: exit %d, peak RSS %d MiB", c.name, code, rss/mib)
		if code != 2 || strings.TrimSpace(stderr) != c.want {
			t.Errorf("%s: exit %d, %q; want exit 2, %q", c.name, code, stderr, c.want)
		}
		if rss > c.max {
			t.Errorf("%s: peak RSS %d MiB, want at most %d", c.name, rss/mib, c.max/mib)
		}
	}
	transcript, _ := os.ReadFile(filepath.Join(home, "profiles", "default", "sessions", "s.jsonl"))
	if len(transcript) != 0 {
		t.Fatalf("a refused append wrote %d bytes", len(transcript))
	}
}
