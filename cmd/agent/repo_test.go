package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/sessions"
)

// gitRepo makes a git repository of n files, committed, and returns its
// directory.
func gitRepo(t *testing.T, n int) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: apt-get install git")
	}
	dir := t.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("pkg%d", i%5), fmt.Sprintf("f%02d.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg\n\n// file %d\nvar x%d = %d\n", i, i, i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// filesOf is every file under dir but .git, by relative path.
func filesOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

func sameTree(t *testing.T, got, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			t.Errorf("%s = %q (present %v), want %q", p, g, ok, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s exists, and did not then", p)
		}
	}
}

// A real project: a scripted model edits the 50 files of a git repository
// over 10 turns (and creates some), one turn also through the terminal
// with checkpoints.shell: git (a sed -i, and a file the command makes and
// one it removes); rewinding to turn 3 gives the tree as the test
// recorded it just before turn 3, and rewinding that rewind gives the
// tree as it was after turn 10.
func TestRewindARealRepository(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t, 50)
	st := newStore(t)
	id := newSession(t, st)
	env := &Env{Cwd: dir, Checkpoints: checkpoints.Open(t.TempDir()), ShellGit: true, MaxOutput: DefaultMaxOutput, TerminalTimeout: DefaultTerminalTimeout}
	p := &scripted{t: t}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{editFileTool{}, writeFileTool{}, terminalTool{}}, Approver: Fixed(true), MaxSteps: 100}
	truth := map[int]map[string]string{}
	var userSeq []int64
	for turn := 1; turn <= 10; turn++ {
		truth[turn] = filesOf(t, dir)
		var pairs []string
		for k := range 5 {
			i := (turn*5 + k*7) % 50
			path := fmt.Sprintf("pkg%d/f%02d.go", i%5, i)
			cur, _ := os.ReadFile(filepath.Join(dir, path))
			line := strings.Split(string(cur), "\n")[3]
			pairs = append(pairs, "edit_file", args("path", path, "old_string", line, "new_string", line+fmt.Sprintf(" + %d", turn)))
		}
		pairs = append(pairs, "write_file", args("path", fmt.Sprintf("new/t%d.go", turn), "content", "package new\n"))
		if turn == 6 {
			pairs = append(pairs, "terminal", args("command", "sed -i 's/package pkg/package changed/' pkg1/*.go && echo made > shell.txt && rm pkg3/f03.go && echo x > ignored.log"))
		}
		p.replies = []sessions.Message{calls(pairs...), text("ok")}
		msgs := stored(t, st, id)
		userSeq = append(userSeq, int64(len(msgs)+1))
		if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user(fmt.Sprint("turn ", turn)), Env: env}); err != nil {
			t.Fatal(err)
		}
		for _, m := range stored(t, st, id) {
			if m.Role == "tool" && strings.HasPrefix(m.Text(), "error") {
				t.Fatalf("turn %d: %s", turn, m.Text())
			}
		}
	}
	if !strings.Contains(filesOf(t, dir)["pkg1/f01.go"], "package changed") {
		t.Fatal("the sed did not run")
	}
	end := filesOf(t, dir)
	recs, err := checkpoints.Records(id, stored(t, st, id))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Restore(context.Background(), st, env.Checkpoints, id, checkpoints.Plan(checkpoints.After(recs, userSeq[2])), false, false, "rewound")
	if err != nil || len(res.Conflicts) > 0 || len(res.Lost) > 0 {
		t.Fatalf("restore: %+v, %v", res, err)
	}
	want := truth[3]
	want["ignored.log"] = "x\n" // ignored by git: not covered, left as it is
	sameTree(t, filesOf(t, dir), want)
	msgs := stored(t, st, id)
	last, _ := checkpoints.Records(id, msgs[len(msgs)-1:])
	if _, err := Restore(context.Background(), st, env.Checkpoints, id, checkpoints.Plan(last), false, false, "undone"); err != nil {
		t.Fatal(err)
	}
	sameTree(t, filesOf(t, dir), end)
}
