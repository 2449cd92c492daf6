package agent

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A directory inside the root is swapped, over and over, with a symbolic
// link to a directory outside it while read_file, search_files,
// find_files, write_file and edit_file work through it: not one call
// reads the outside file, and not one writes outside. A check of the path
// followed by its open had a window there; the root's os.Root has none.
func TestConfinedSymlinkSwapRace(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	root := filepath.Join(env.Cwd, "root")
	outside := filepath.Join(env.Cwd, "outside")
	writeTree(t, env.Cwd, map[string]string{
		"root/d/f":            "inside\n",
		"outside/f":           "secret\n",
		"outside/secret-name": "",
		"root/d2/keep":        "",
	})
	env.Cwd, env.Root = root, root
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// d is the real directory, then a link out, then the real one
		// again: d always names one of them.
		d, link := filepath.Join(root, "d"), filepath.Join(root, "link")
		os.Symlink(outside, link)
		for swaps := 0; ; swaps++ {
			select {
			case <-stop:
				if swaps%2 == 1 {
					exchange(d, link)
				}
				return
			default:
			}
			if err := exchange(d, link); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()
	const tries = 10000
	leaks := 0
	for i := range tries {
		var tool Tool
		var args string
		switch i % 5 {
		case 0:
			tool, args = readFileTool{}, `{"path":"d/f"}`
		case 1:
			tool, args = searchFilesTool{}, `{"pattern":"secret","path":"d"}`
		case 2:
			tool, args = findFilesTool{}, `{"glob":"*","path":"d"}`
		case 3:
			tool, args = writeFileTool{}, `{"path":"d/new","content":"written\n"}`
		case 4:
			tool, args = editFileTool{}, `{"path":"d/f","old_string":"secret","new_string":"edited"}`
		}
		got, _ := run(t, tool, env, args)
		if strings.Contains(got, "secret") {
			leaks++
			t.Logf("%s %s: %q", tool.Name(), args, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "secret\n" {
		t.Errorf("outside/f became %q", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 2 {
		t.Errorf("written outside: %v", entries)
	}
	if leaks > 0 {
		t.Errorf("%d of %d calls read outside the root", leaks, tries)
	}
}
