package agent

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A lone surrogate escape in the arguments is refused by write_file and
// edit_file, as by every other entry point, rather than written as U+FFFD.
func TestWriteRefusesLoneSurrogate(t *testing.T) {
	env := toolEnv(t)
	path := filepath.Join(env.Cwd, "f.txt")
	os.WriteFile(path, []byte("keep\n"), 0o644)
	for _, c := range []struct {
		tool Tool
		args string
	}{
		{writeFileTool{}, `{"path":"f.txt","content":"a\ud800b"}`},
		{writeFileTool{}, `{"path":"new.txt","content":"\udc00"}`},
		{editFileTool{}, `{"path":"f.txt","old_string":"keep","new_string":"x\ud83d"}`},
	} {
		_, err := run(t, c.tool, env, c.args)
		if err == nil || !strings.Contains(err.Error(), "lone surrogate") {
			t.Errorf("%s %s: %v, want a refusal", c.tool.Name(), c.args, err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "keep\n" {
		t.Errorf("f.txt became %q", b)
	}
	if fileIn(env.Cwd, "new.txt") {
		t.Error("new.txt was written")
	}
	// A pair is a character.
	if _, err := run(t, writeFileTool{}, env, `{"path":"f.txt","content":"\ud83d\ude00"}`); err != nil {
		t.Fatal(err)
	}
}

// A file's mode is kept exactly, setuid, setgid and sticky bits included;
// a file without its owner's write bit is refused as read-only.
func TestWriteKeepsModeOrRefuses(t *testing.T) {
	env := toolEnv(t)
	calls := map[string]func(name string) string{
		"write_file": func(name string) string { return `{"path":"` + name + `","content":"new\n"}` },
		"edit_file":  func(name string) string { return `{"path":"` + name + `","old_string":"old","new_string":"new"}` },
	}
	tools := map[string]Tool{"write_file": writeFileTool{}, "edit_file": editFileTool{}}
	for tool, args := range calls {
		for _, mode := range []fs.FileMode{0o755 | fs.ModeSetuid, 0o750 | fs.ModeSetgid, 0o644 | fs.ModeSticky, 0o600} {
			name := fmt.Sprintf("%s-%o", tool, mode)
			path := filepath.Join(env.Cwd, name)
			os.WriteFile(path, []byte("old\n"), 0o600)
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			if _, err := run(t, tools[tool], env, args(name)); err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			fi, _ := os.Stat(path)
			if b, _ := os.ReadFile(path); string(b) != "new\n" || fi.Mode() != mode {
				t.Errorf("%s: %q, mode %v; want %q, %v", name, b, fi.Mode(), "new\n", mode)
			}
		}
		for _, mode := range []fs.FileMode{0o444, 0o000, 0o555} {
			name := fmt.Sprintf("%s-ro-%o", tool, mode)
			path := filepath.Join(env.Cwd, name)
			os.WriteFile(path, []byte("old\n"), 0o600)
			os.Chmod(path, mode)
			_, err := run(t, tools[tool], env, args(name))
			if err == nil || !strings.Contains(err.Error(), "is read-only") {
				t.Errorf("%s: %v, want a read-only refusal", name, err)
			}
			fi, _ := os.Stat(path)
			if b, _ := os.ReadFile(path); string(b) != "old\n" || fi.Mode() != mode {
				t.Errorf("%s: %q, mode %v after a refusal", name, b, fi.Mode())
			}
		}
	}
}

// Occurrences are counted at every offset: "aa" in "aaa" is two, so
// ambiguous, and replace_all refuses occurrences that overlap.
func TestEditFileOverlapping(t *testing.T) {
	env := toolEnv(t)
	path := filepath.Join(env.Cwd, "f.txt")
	os.WriteFile(path, []byte("aaa"), 0o644)
	if _, err := run(t, editFileTool{}, env, `{"path":"f.txt","old_string":"aa","new_string":"b"}`); err == nil || !strings.Contains(err.Error(), "occurs 2 times") {
		t.Errorf("aa in aaa: %v", err)
	}
	if _, err := run(t, editFileTool{}, env, `{"path":"f.txt","old_string":"aa","new_string":"b","replace_all":true}`); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("aa in aaa, replace_all: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "aaa" {
		t.Errorf("f.txt became %q", b)
	}
	os.WriteFile(path, []byte("aa aa"), 0o644)
	if out, err := run(t, editFileTool{}, env, `{"path":"f.txt","old_string":"aa","new_string":"b","replace_all":true}`); err != nil || !strings.Contains(out, "2 occurrences") {
		t.Errorf("two apart, replace_all: %q, %v", out, err)
	}
}

// A write killed (kill -9) after its temp file was written and before the
// rename leaves that file, named as hermes's; the next write in the
// directory removes it, as its process is gone.
func TestKilledWriteLeavesNoTemp(t *testing.T) {
	if dir := os.Getenv("HERMES_TEST_KILLED_WRITE"); dir != "" {
		beforeRename = func(string) {
			fmt.Println("written")
			select {}
		}
		run(t, writeFileTool{}, &Env{Cwd: dir}, `{"path":"f.txt","content":"`+strings.Repeat("x", 1<<20)+`"}`)
		return
	}
	env := toolEnv(t)
	path := filepath.Join(env.Cwd, "f.txt")
	os.WriteFile(path, []byte("before\n"), 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriteLeavesNoTemp$")
	cmd.Env = append(os.Environ(), "HERMES_TEST_KILLED_WRITE="+env.Cwd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "written" {
	}
	cmd.Process.Kill()
	cmd.Wait()
	left, _ := filepath.Glob(filepath.Join(env.Cwd, ".hermes-tmp-*"))
	if len(left) != 1 {
		t.Fatalf("the killed write left %v, want its temp file", left)
	}
	if _, err := run(t, writeFileTool{}, env, `{"path":"g.txt","content":"next\n"}`); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(env.Cwd)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "f.txt g.txt" {
		t.Fatalf("after the next write: %v", names)
	}
	if b, _ := os.ReadFile(path); string(b) != "before\n" {
		t.Fatalf("f.txt became %q", b)
	}
}
