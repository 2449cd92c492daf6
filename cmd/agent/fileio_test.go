package agent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// runOrHang runs a read_file call, failing the test if it blocks.
func runOrHang(t *testing.T, env *Env, args string) (out string, err error) {
	t.Helper()
	within(t, "read_file "+args, func() { out, err = run(t, readFileTool{}, env, args) })
	return out, err
}

// A FIFO, a socket and devices are refused at once, without opening them
// for reading (a FIFO's open waits for a writer, forever), and so is a
// path that was a regular file when looked at and is a FIFO when opened.
func TestReadFileRefusesSpecialFiles(t *testing.T) {
	env := toolEnv(t)
	fifo := filepath.Join(env.Cwd, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A socket path must fit in sun_path (104 bytes on macOS).
	sockDir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for path, kind := range map[string]string{
		fifo:        "a named pipe (FIFO)",
		sock:        "a socket",
		"/dev/zero": "a character device",
		"/dev/null": "a character device",
		env.Cwd:     "a directory",
	} {
		_, err := runOrHang(t, env, `{"path":"`+path+`"}`)
		if want := path + " is " + kind + ", not a regular file"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}

	swapped := filepath.Join(env.Cwd, "swapped")
	os.WriteFile(swapped, []byte("text\n"), 0o600)
	beforeOpen = func(path string) {
		os.Remove(path)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Error(err)
		}
	}
	defer func() { beforeOpen = func(string) {} }()
	if _, err := runOrHang(t, env, `{"path":"swapped"}`); err == nil || !strings.Contains(err.Error(), "swapped is a named pipe (FIFO)") {
		t.Fatalf("a FIFO swapped in after the stat: %v", err)
	}
}

// Lines longer than read_file's buffer are counted and cut right, a NUL
// byte past the first buffer still makes the file binary, and a cancelled
// call stops.
func TestReadFileLongLines(t *testing.T) {
	env := toolEnv(t)
	env.MaxOutput = 1 << 20
	line := func(c string) string { return strings.Repeat(c, 3*readChunk/2) + "\n" }
	os.WriteFile(filepath.Join(env.Cwd, "long.txt"), []byte(line("a")+line("b")+line("c")), 0o600)
	if got, err := run(t, readFileTool{}, env, `{"path":"long.txt","offset":2,"limit":1}`); err != nil || got != line("b") {
		t.Fatalf("line 2: %d bytes, %v", len(got), err)
	}

	env.MaxOutput = 1000
	got, err := run(t, readFileTool{}, env, `{"path":"long.txt"}`)
	if err != nil || len(got) > 1000 || !strings.HasPrefix(got, "aaa") || !strings.HasSuffix(got, "ccc\n") || !strings.Contains(got, "bytes cut") {
		t.Fatalf("cut: %q, %v", got, err)
	}

	os.WriteFile(filepath.Join(env.Cwd, "late-nul"), []byte(line("a")+"\x00"), 0o600)
	if _, err := run(t, readFileTool{}, env, `{"path":"late-nul"}`); err == nil || !strings.Contains(err.Error(), "binary file (a NUL byte at offset 98305)") {
		t.Fatalf("a NUL after the first buffer: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (readFileTool{}).Run(ctx, env, []byte(`{"path":"long.txt"}`)); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("a cancelled call: %v", err)
	}
}
