package agent

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestEditFile(t *testing.T) {
	t.Parallel()
	const start = "alpha\nbeta\ngamma\nbeta\n"
	for _, c := range []struct {
		name, args string
		want       string // the file after the call
		out, err   string // the result, or the error it holds
	}{
		{"unique", `{"path":"f.txt","old_string":"alpha","new_string":"ALPHA"}`,
			"ALPHA\nbeta\ngamma\nbeta\n", "replaced 1 occurrence in ", ""},
		{"ambiguous", `{"path":"f.txt","old_string":"beta","new_string":"B"}`,
			start, "", "occurs 2 times"},
		{"ambiguous made unique by context", `{"path":"f.txt","old_string":"gamma\nbeta","new_string":"gamma\nB"}`,
			"alpha\nbeta\ngamma\nB\n", "replaced 1 occurrence", ""},
		{"missing", `{"path":"f.txt","old_string":"delta","new_string":"D"}`,
			start, "", "not found"},
		{"replace_all", `{"path":"f.txt","old_string":"beta","new_string":"B","replace_all":true}`,
			"alpha\nB\ngamma\nB\n", "replaced 2 occurrences", ""},
		{"empty old_string", `{"path":"f.txt","old_string":"","new_string":"x"}`,
			start, "", "old_string is empty"},
		{"no change", `{"path":"f.txt","old_string":"beta","new_string":"beta","replace_all":true}`,
			start, "", "the same"},
		{"unknown field", `{"path":"f.txt","old":"beta","new_string":"x"}`,
			start, "", "unknown field"},
		{"no file", `{"path":"nope.txt","old_string":"a","new_string":"b"}`,
			start, "", "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := toolEnv(t)
			path := filepath.Join(env.Cwd, "f.txt")
			os.WriteFile(path, []byte(start), 0o644)
			out, err := run(t, editFileTool{}, env, c.args)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("error %v, want one saying %q", err, c.err)
			case c.err == "" && (err != nil || !strings.Contains(out, c.out)):
				t.Errorf("%q, %v; want %q", out, err, c.out)
			}
			if b, _ := os.ReadFile(path); string(b) != c.want {
				t.Errorf("file %q, want %q", b, c.want)
			}
			if tmp, _ := filepath.Glob(filepath.Join(env.Cwd, tempPrefix+"*")); len(tmp) > 0 {
				t.Errorf("left in the directory: %v", tmp)
			}
		})
	}
}

func TestEditFileKeepsModeAndCRLF(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	path := filepath.Join(env.Cwd, "dos.txt")
	os.WriteFile(path, []byte("one\r\ntwo\r\nthree\r\n"), 0o600)
	os.Chmod(path, 0o751)
	// old_string and new_string as a model writes them, with LF.
	if _, err := run(t, editFileTool{}, env, `{"path":"dos.txt","old_string":"one\ntwo\n","new_string":"one\nand a half\ntwo\n"}`); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one\r\nand a half\r\ntwo\r\nthree\r\n" {
		t.Fatalf("file %q: line ends not kept CRLF", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode %v, want 0751 kept", fi.Mode().Perm())
	}
	// Given with CRLF, it matches too.
	if _, err := run(t, editFileTool{}, env, `{"path":"dos.txt","old_string":"three\r\n","new_string":"3\r\n"}`); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one\r\nand a half\r\ntwo\r\n3\r\n" {
		t.Fatalf("file %q", b)
	}
	// An LF file stays LF.
	lf := filepath.Join(env.Cwd, "unix.txt")
	os.WriteFile(lf, []byte("a\nb\n"), 0o644)
	if _, err := run(t, editFileTool{}, env, `{"path":"unix.txt","old_string":"a\n","new_string":"x\ny\n"}`); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(lf); string(b) != "x\ny\nb\n" {
		t.Fatalf("file %q", b)
	}
}

func TestEditFileRefuses(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	target := filepath.Join(env.Cwd, "target.txt")
	os.WriteFile(target, []byte("keep"), 0o644)
	os.Symlink(target, filepath.Join(env.Cwd, "link"))
	os.WriteFile(filepath.Join(env.Cwd, "bin"), []byte("ELF\x00keep"), 0o644)
	if err := syscall.Mkfifo(filepath.Join(env.Cwd, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"link": "symbolic link", "bin": "binary", "fifo": "not a regular file", ".": "not a regular file"} {
		done := make(chan error, 1)
		go func() {
			_, err := run(t, editFileTool{}, env, `{"path":"`+name+`","old_string":"keep","new_string":"lost"}`)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", name, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: edit_file blocked", name)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("written through the link: %q", b)
	}
}
