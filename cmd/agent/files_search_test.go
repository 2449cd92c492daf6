package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// writeTree makes the files of files (path: content) below dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSearchFilesGitignore(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	writeTree(t, env.Cwd, map[string]string{
		".git/HEAD":                "needle in .git\n",
		".gitignore":               "# comment\n*.log\n!keep.log\nbuild/\n/top.txt\ndocs/**/gen\n\\#hash\nspace\\ \n",
		"a.go":                     "package a\n\nvar needle = 1\n",
		"app.log":                  "needle in a log\n",
		"keep.log":                 "needle kept by !\n",
		"build/out.txt":            "needle in build\n",
		"build.txt":                "needle beside build/\n",
		"top.txt":                  "needle at the top\n",
		"sub/top.txt":              "needle in sub, not anchored\n",
		"docs/a/b/gen/x.md":        "needle generated\n",
		"docs/a/b/x.md":            "needle written\n",
		"#hash":                    "needle in #hash\n",
		"space ":                   "needle in a name with a space\n",
		"sub/.gitignore":           "local.txt\n!app.log\n",
		"sub/local.txt":            "needle local\n",
		"sub/app.log":              "needle re-included below\n",
		"sub/deep/local.txt":       "needle local deeper\n",
		"other/local.txt":          "needle elsewhere\n",
		"build2/inner/build/x.txt": "needle in a nested build dir\n",
	})
	got, err := run(t, searchFilesTool{}, env, `{"pattern":"needle"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"a.go:3:var needle = 1",
		"build.txt:1:needle beside build/",
		"docs/a/b/x.md:1:needle written",
		"keep.log:1:needle kept by !",
		"other/local.txt:1:needle elsewhere",
		"sub/app.log:1:needle re-included below",
		"sub/top.txt:1:needle in sub, not anchored",
	}, "\n") + "\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	// A search below the root still obeys the .gitignore files above it,
	// up to the repository's root.
	got, err = run(t, searchFilesTool{}, env, `{"pattern":"needle","path":"docs/a"}`)
	if err != nil || got != "docs/a/b/x.md:1:needle written\n" {
		t.Fatalf("below the root: %q, %v", got, err)
	}
}

func TestParseIgnore(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, path string
		isDir, match  bool
	}{
		{"*.o", "a/b/c.o", false, true},
		{"*.o", "a/b/c.oo", false, false},
		{"/a.txt", "a.txt", false, true},
		{"/a.txt", "b/a.txt", false, false},
		{"a/b", "a/b", false, true},
		{"a/b", "x/a/b", false, false},
		{"**/foo", "x/y/foo", true, true},
		{"foo/**", "foo/x/y", false, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"dir/", "dir", false, false},
		{"dir/", "x/dir", true, true},
		{"f?o", "fxo", false, true},
		{"f?o", "f/o", false, false},
		{"[ab]c", "bc", false, true},
		{"[!ab]c", "bc", false, false},
		{"[!ab]c", "xc", false, true},
	} {
		r, ok := parseIgnore(c.pattern)
		if !ok {
			t.Fatalf("%q did not parse", c.pattern)
		}
		rules := &ignoreRules{rules: []ignoreRule{r}}
		if ign, ok := rules.match(c.path, c.isDir); ign != c.match || ok != c.match {
			t.Errorf("%q against %q (dir %v): %v, want %v", c.pattern, c.path, c.isDir, ign, c.match)
		}
	}
	for _, blank := range []string{"", "   ", "# comment", "/"} {
		if _, ok := parseIgnore(blank); ok {
			t.Errorf("%q is a rule", blank)
		}
	}
}

func TestSearchFilesBinaryAndOptions(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	long := strings.Repeat("x", 5000) + "NEEDLE" + strings.Repeat("y", 5000)
	writeTree(t, env.Cwd, map[string]string{
		"bin.dat":   "needle\x00\x01\x02",
		"late.dat":  strings.Repeat("a\n", 5000) + "\x00needle\n", // a NUL past 8 KiB: text
		"text.txt":  "Needle\nneedle\r\n",
		"long.txt":  long + "\n",
		"sub/x.go":  "needle in go\n",
		"sub/y.txt": "needle in txt\n",
	})
	for _, c := range []struct{ args, want string }{
		{`{"pattern":"needle","path":"text.txt"}`, "text.txt:2:needle\n"},
		{`{"pattern":"needle","path":"text.txt","ignore_case":true}`, "text.txt:1:Needle\ntext.txt:2:needle\n"},
		{`{"pattern":"^Needle$","path":"text.txt"}`, "text.txt:1:Needle\n"},
		{`{"pattern":"needle","glob":"*.go"}`, "sub/x.go:1:needle in go\n"},
		{`{"pattern":"needle","glob":"sub/*.txt"}`, "sub/y.txt:1:needle in txt\n"},
		{`{"pattern":"needle","path":"sub","glob":"*.txt"}`, "sub/y.txt:1:needle in txt\n"},
		{`{"pattern":"needle","path":"late.dat"}`, "late.dat:5001:\x00needle\n"},
		{`{"pattern":"nothing here"}`, "no matches\n"},
	} {
		if got, err := run(t, searchFilesTool{}, env, c.args); err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.args, got, err, c.want)
		}
	}
	got, _ := run(t, searchFilesTool{}, env, `{"pattern":"needle"}`)
	if strings.Contains(got, "bin.dat") {
		t.Errorf("a binary file was searched:\n%s", got)
	}
	got, _ = run(t, searchFilesTool{}, env, `{"pattern":"NEEDLE","path":"long.txt"}`)
	text := strings.TrimPrefix(strings.TrimSuffix(got, "\n"), "long.txt:1:")
	if len(text) > maxLineText+2*len("…") || !strings.Contains(text, "NEEDLE") || !strings.HasPrefix(text, "…") {
		t.Errorf("a long line is shown as %d bytes: %q…", len(text), text[:min(len(text), 80)])
	}
	if err := syscall.Mkfifo(filepath.Join(env.Cwd, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"pattern":"("}`, `{"pattern":""}`, `{"pattern":"a","max_results":-1}`, `{"pattern":"a","path":"missing"}`, `{"pattern":"a","path":"fifo"}`, `{"pattern":"a","bad":1}`} {
		if _, err := run(t, searchFilesTool{}, env, bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	// In a tree, a FIFO is not opened, so it cannot block the search.
	if got, err := run(t, searchFilesTool{}, env, `{"pattern":"in go"}`); err != nil || got != "sub/x.go:1:needle in go\n" {
		t.Errorf("beside a FIFO: %q, %v", got, err)
	}
}

func TestSearchFilesLimits(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat("match\n", 10)
	}
	writeTree(t, env.Cwd, files)
	got, err := run(t, searchFilesTool{}, env, `{"pattern":"match","max_results":15}`)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 16 || lines[0] != "f00.txt:1:match" || lines[14] != "f01.txt:5:match" || !strings.Contains(lines[15], "stopped at 15") {
		t.Fatalf("max_results 15 gave %d lines:\n%s", len(lines), got)
	}
	got, _ = run(t, searchFilesTool{}, env, `{"pattern":"match"}`)
	if n := strings.Count(got, ":match\n"); n != defaultMaxResults {
		t.Fatalf("default limit: %d lines", n)
	}
	got, _ = run(t, searchFilesTool{}, env, `{"pattern":"match","max_results":100000}`)
	if n := strings.Count(got, ":match\n"); n != 300 {
		t.Fatalf("all 300 lines: %d", n)
	}
	env.MaxOutput = 1000
	got, _ = run(t, searchFilesTool{}, env, `{"pattern":"match","max_results":1000}`)
	if len(got) > 1000 || !strings.Contains(got, "bytes cut") {
		t.Fatalf("agent.max_tool_output not kept: %d bytes", len(got))
	}
}

func TestSearchFileChunks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Lines across the chunk boundaries, and one longer than a chunk.
	var b strings.Builder
	want := []string{}
	for i := 1; b.Len() < 3*searchChunk; i++ {
		if i%997 == 0 {
			fmt.Fprintf(&b, "hit %d\n", i)
			want = append(want, fmt.Sprintf("f:%d:hit %d", i, i))
			continue
		}
		if i == 5000 {
			b.WriteString(strings.Repeat("z", searchChunk+10) + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d of filler text\n", i)
	}
	b.WriteString("hit at the end without a newline")
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte(b.String()), 0o644)
	got, err := searchFile(context.Background(), hostFiles{}, p, "f", regexpMust(t, "hit"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(b.String(), "\n") + 1
	want = append(want, fmt.Sprintf("f:%d:hit at the end without a newline", lines))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %d lines, want %d\n%v\n%v", len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
	}
}

func TestFindFiles(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	writeTree(t, env.Cwd, map[string]string{
		".gitignore":          "vendor/\n",
		"main.go":             "",
		"cmd/a.go":            "",
		"cmd/a_test.go":       "",
		"cmd/sub/b_test.go":   "",
		"vendor/x/y_test.go":  "",
		".git/objects/z.go":   "",
		"notes/readme_go.txt": "",
	})
	for _, c := range []struct{ args, want string }{
		{`{"glob":"*_test.go"}`, "cmd/a_test.go\ncmd/sub/b_test.go\n"},
		{`{"glob":"cmd/*.go"}`, "cmd/a.go\ncmd/a_test.go\n"},
		{`{"glob":"cmd/**/*.go"}`, "cmd/a.go\ncmd/a_test.go\ncmd/sub/b_test.go\n"},
		{`{"glob":"*.go","path":"cmd/sub"}`, "cmd/sub/b_test.go\n"},
		{`{"glob":"sub"}`, "cmd/sub/\n"},
		{`{"glob":"*.rs"}`, "no matches\n"},
	} {
		if got, err := run(t, findFilesTool{}, env, c.args); err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.args, got, err, c.want)
		}
	}
	if _, err := run(t, findFilesTool{}, env, `{"glob":"*","path":"main.go"}`); err == nil {
		t.Error("a file was walked as a directory")
	}
}

func regexpMust(t *testing.T, expr string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile("(?m)" + expr)
	if err != nil {
		t.Fatal(err)
	}
	return re
}
