package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With Env.Root set, the file tools keep to it: a path that leaves it by
// "..", by an absolute name or through a symbolic link, to a file that
// exists or to one a write would create, is refused, and nothing is
// written outside.
func TestFileToolsKeepToRoot(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	outside := t.TempDir()
	root := filepath.Join(env.Cwd, "root")
	for _, dir := range []string{filepath.Join(root, "sub"), filepath.Join(outside, "dir")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "in.txt"), []byte("inside\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o644)
	os.WriteFile(filepath.Join(env.Cwd, "x"), []byte("beside\n"), 0o644)
	for name, target := range map[string]string{
		"out":      filepath.Join(outside, "secret"),
		"outdir":   filepath.Join(outside, "dir"),
		"gone":     filepath.Join(outside, "missing", "dir"),
		"relout":   "../x",
		"in":       "in.txt",
		"sub/back": "..",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	env.Cwd, env.Root = root, root

	for _, path := range []string{
		"../x", filepath.Join(outside, "secret"), "out", "outdir/secret", "relout", "sub/../../x", "/etc/passwd",
	} {
		args := `{"path":"` + path + `"}`
		if got, err := run(t, readFileTool{}, env, args); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("read_file %s: %q, %v; want a refusal", path, got, err)
		}
	}
	// A link at the path itself is refused as a link, before anything
	// follows it.
	refused := func(err error) bool {
		return err != nil && (strings.Contains(err.Error(), "outside") || strings.Contains(err.Error(), "is a symbolic link"))
	}
	for _, path := range []string{"../new", "outdir/new", "outdir/deep/new", "gone/new", "out"} {
		args := `{"path":"` + path + `","content":"x"}`
		if got, err := run(t, writeFileTool{}, env, args); !refused(err) {
			t.Errorf("write_file %s: %q, %v; want a refusal", path, got, err)
		}
	}
	for _, path := range []string{"../x", "out", "outdir/secret", "relout"} {
		args := `{"path":"` + path + `","old_string":"secret","new_string":"changed"}`
		if got, err := run(t, editFileTool{}, env, args); !refused(err) {
			t.Errorf("edit_file %s: %q, %v; want a refusal", path, got, err)
		}
	}
	for _, path := range []string{"..", "outdir", "relout", outside} {
		if got, err := run(t, searchFilesTool{}, env, `{"pattern":"secret","path":"`+path+`"}`); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("search_files in %s: %q, %v; want a refusal", path, got, err)
		}
		if got, err := run(t, findFilesTool{}, env, `{"glob":"*","path":"`+path+`"}`); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("find_files in %s: %q, %v; want a refusal", path, got, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "secret\n" {
		t.Fatalf("the file outside the root was changed: %q", b)
	}
	var written []string
	filepath.Walk(outside, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && p != filepath.Join(outside, "secret") {
			written = append(written, p)
		}
		return nil
	})
	if len(written) > 0 || fileIn(filepath.Dir(env.Cwd), "new") {
		t.Fatalf("written outside the root: %v", written)
	}

	for path, want := range map[string]string{
		"in.txt": "inside\n", "in": "inside\n", "sub/../in.txt": "inside\n", filepath.Join(root, "in.txt"): "inside\n",
		"sub/back/in.txt": "inside\n",
	} {
		if got, err := run(t, readFileTool{}, env, `{"path":"`+path+`"}`); err != nil || got != want {
			t.Errorf("read_file %s: %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := run(t, writeFileTool{}, env, `{"path":"sub/deep/new.txt","content":"x"}`); err != nil {
		t.Fatalf("a new file inside the root: %v", err)
	}
}

// A root reached through a symbolic link is the directory it names: the
// files under it are inside.
func TestRootThroughSymlink(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	real := filepath.Join(env.Cwd, "real")
	os.Mkdir(real, 0o755)
	os.WriteFile(filepath.Join(real, "f"), []byte("f\n"), 0o644)
	link := filepath.Join(env.Cwd, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	env.Cwd, env.Root = link, link
	for _, path := range []string{"f", filepath.Join(link, "f"), filepath.Join(real, "f")} {
		if got, err := run(t, readFileTool{}, env, `{"path":"`+path+`"}`); err != nil || got != "f\n" {
			t.Errorf("read_file %s: %q, %v", path, got, err)
		}
	}
}

func fileIn(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}
