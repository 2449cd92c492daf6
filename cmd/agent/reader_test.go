package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs call, failing the test if it has not returned after a
// minute: a read that blocks would otherwise hang the whole test binary.
func within(t *testing.T, what string, call func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		call()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s has not returned: it blocks", what)
	}
}

// mkfifo makes a FIFO at path, in place of what was there.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A .gitignore that is a FIFO, in the searched tree or above it at the
// repository root, is skipped and reported as a file that could not be
// read; search_files and find_files still return.
func TestFIFOGitignore(t *testing.T) {
	env := toolEnv(t)
	writeTree(t, env.Cwd, map[string]string{
		".git/HEAD":        "ref\n",
		"sub/a.txt":        "needle\n",
		"sub/deep/b.txt":   "needle\n",
		"sub/deep/c.other": "needle\n",
	})
	for _, fifo := range []string{".gitignore", "sub/deep/.gitignore"} {
		mkfifo(t, filepath.Join(env.Cwd, fifo))
	}
	for _, c := range []struct {
		tool Tool
		args string
		want []string
	}{
		{searchFilesTool{}, `{"pattern":"needle","path":"sub"}`, []string{"sub/a.txt:1:needle", "sub/deep/b.txt:1:needle", "[2 files or directories could not be read]"}},
		{findFilesTool{}, `{"glob":"*.txt","path":"sub"}`, []string{"sub/a.txt", "sub/deep/b.txt", "[2 files or directories could not be read]"}},
	} {
		var got string
		var err error
		within(t, c.tool.Name(), func() { got, err = run(t, c.tool, env, c.args) })
		if err != nil {
			t.Fatalf("%s: %v", c.tool.Name(), err)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.tool.Name(), got, w)
			}
		}
	}
}

// blockReads makes every read of the reader block until the test ends,
// as a read of /proc/kmsg or of a file on a hung mount does, and makes the
// reader's time bound short.
func blockReads(t *testing.T, stall time.Duration) {
	t.Helper()
	release := make(chan struct{})
	fileRead = func(*os.File, []byte) (int, error) {
		<-release
		return 0, os.ErrClosed
	}
	readStall = stall
	t.Cleanup(func() {
		close(release)
		fileRead, readStall = (*os.File).Read, 5*time.Second
	})
}

// A regular file whose reads do not answer: every place that reads a file
// gives up on it after the time bound, or at once when its context ends,
// saying which; nothing waits for the read.
func TestBlockingRead(t *testing.T) {
	env := toolEnv(t)
	writeTree(t, env.Cwd, map[string]string{
		".git/HEAD": "ref\n",
		"a.txt":     "needle\n",
		"AGENTS.md": "rules\n",
	})
	blockReads(t, 100*time.Millisecond)
	calls := []struct {
		tool Tool
		args string
	}{
		{readFileTool{}, `{"path":"a.txt"}`},
		{editFileTool{}, `{"path":"a.txt","old_string":"needle","new_string":"pin"}`},
		{searchFilesTool{}, `{"pattern":"needle","path":"a.txt"}`},
	}
	for _, c := range calls {
		var err error
		within(t, c.tool.Name(), func() { _, err = run(t, c.tool, env, c.args) })
		if err == nil || !strings.Contains(err.Error(), "reading a.txt: timed out") {
			t.Errorf("%s: %v, want a time-out", c.tool.Name(), err)
		}
	}
	var got string
	within(t, "search_files", func() { got, _ = run(t, searchFilesTool{}, env, `{"pattern":"needle"}`) })
	if !strings.Contains(got, "no matches") || !strings.Contains(got, "[2 files or directories could not be read]") {
		t.Errorf("search_files over the tree: %q", got)
	}
	var warned []string
	in := &Instructions{Warn: func(s string) { warned = append(warned, s) }}
	within(t, "instructions", func() { in.Note(context.Background(), env.Cwd) })
	if len(warned) != 1 || !strings.Contains(warned[0], "timed out") {
		t.Errorf("instructions: warnings %q", warned)
	}
	if b, _ := os.ReadFile(filepath.Join(env.Cwd, "a.txt")); string(b) != "needle\n" {
		t.Errorf("a.txt became %q", b)
	}

	// A cancelled call is not kept waiting for the time bound.
	readStall = time.Hour
	for _, c := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Millisecond, cancel)
		var err error
		within(t, c.tool.Name(), func() { _, err = c.tool.Run(ctx, env, []byte(c.args)) })
		if err == nil || !strings.Contains(err.Error(), "cancelled") {
			t.Errorf("%s cancelled: %v", c.tool.Name(), err)
		}
	}
}

// /proc/kmsg says it is a regular file, and its read waits for the
// kernel's next message: read_file gives up on it after the time bound.
func TestReadProcKmsg(t *testing.T) {
	f, err := os.Open("/proc/kmsg")
	if err != nil {
		t.Skipf("needs root on Linux (/proc/kmsg readable): sudo go test ./cmd/agent/ -run TestReadProcKmsg: %v", err)
	}
	f.Close()
	readStall = 200 * time.Millisecond
	defer func() { readStall = 5 * time.Second }()
	env := toolEnv(t)
	var err2 error
	within(t, "read_file /proc/kmsg", func() { _, err2 = run(t, readFileTool{}, env, `{"path":"/proc/kmsg"}`) })
	if err2 == nil || !strings.Contains(err2.Error(), "reading /proc/kmsg: timed out") {
		t.Fatalf("read_file /proc/kmsg: %v", err2)
	}
}
