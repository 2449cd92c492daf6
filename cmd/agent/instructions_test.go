package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes/hermes/fsstore/sessions"
)

// project makes a repository with AGENTS.md at its root, in sub and in
// sub/deep (the working directory), one above the repository (not read),
// and one in the profile.
func project(t *testing.T) (profile, cwd string) {
	t.Helper()
	top := t.TempDir()
	writeTree(t, top, map[string]string{
		"AGENTS.md":                   "above the repository\n",
		"repo/.git/HEAD":              "ref: refs/heads/main\n",
		"repo/AGENTS.md":              "repository root\n",
		"repo/sub/AGENTS.md":          "sub\n",
		"repo/sub/deep/AGENTS.md":     "deep\n",
		"repo/sub/deep/x/placeholder": "",
		"profile/AGENTS.md":           "profile\n",
	})
	return filepath.Join(top, "profile"), filepath.Join(top, "repo", "sub", "deep")
}

func TestInstructionsOrder(t *testing.T) {
	t.Parallel()
	profile, cwd := project(t)
	in := &Instructions{ProfileDir: profile}
	m, ok := in.Note(context.Background(), cwd)
	if !ok || !IsInstructions(m) || !IsNote(m) {
		t.Fatalf("note %+v, %v", m, ok)
	}
	text := m.Text()
	var order []string
	for _, want := range []string{"profile", "repository root", "sub", "deep"} {
		i := strings.Index(text, "\n"+want+"\n")
		if i < 0 && strings.HasSuffix(text, "\n"+want) {
			i = len(text) - len(want)
		}
		if i < 0 {
			t.Fatalf("%q missing from\n%s", want, text)
		}
		order = append(order, text[i:])
	}
	for i := 1; i < len(order); i++ {
		if len(order[i]) >= len(order[i-1]) {
			t.Fatalf("not from the profile and the root down:\n%s", text)
		}
	}
	if strings.Contains(text, "above the repository") {
		t.Fatalf("read above the repository root:\n%s", text)
	}
	// Outside a repository: the working directory's alone (and the profile's).
	os.RemoveAll(filepath.Join(cwd, "..", "..", ".git"))
	m, _ = in.Note(context.Background(), cwd)
	if strings.Contains(m.Text(), "\nsub\n") || !strings.Contains(m.Text(), "deep") {
		t.Fatalf("outside a repository:\n%s", m.Text())
	}
}

func TestInstructionsBounded(t *testing.T) {
	t.Parallel()
	profile, cwd := project(t)
	os.WriteFile(filepath.Join(profile, InstructionsFile), []byte(strings.Repeat("p", 3*MaxInstructions)), 0o644)
	var warned []string
	in := &Instructions{ProfileDir: profile, Warn: func(s string) { warned = append(warned, s) }}
	// A FIFO is left out, with a warning, without blocking.
	fifo := filepath.Join(cwd, "..", InstructionsFile)
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	m, ok := in.Note(context.Background(), cwd)
	text := m.Text()
	if !ok || len(text) > MaxInstructions || !strings.Contains(text, "bytes cut") {
		t.Fatalf("note of %d bytes, want at most %d with a marker", len(text), MaxInstructions)
	}
	if !strings.HasSuffix(text, "deep") {
		t.Fatalf("the nearest file was cut: …%s", text[len(text)-40:])
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "not a regular file") {
		t.Fatalf("warnings %q", warned)
	}
	if _, ok := (&Instructions{}).Note(context.Background(), t.TempDir()); ok {
		t.Fatal("a note without any AGENTS.md")
	}
}

func TestInstructionsStoredOnceAtTheFirstTurn(t *testing.T) {
	t.Parallel()
	profile, cwd := project(t)
	st := newStore(t)
	id := newSession(t, st)
	p := &scripted{t: t, replies: []sessions.Message{text("one"), text("two")}}
	e := &Engine{Sessions: st, Provider: p, Instructions: &Instructions{ProfileDir: profile}}
	for _, q := range []string{"first", "second"} {
		if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user(q), Env: &Env{Cwd: cwd}}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := stored(t, st, id)
	n := 0
	for _, m := range msgs {
		if IsInstructions(m) {
			n++
		}
	}
	if n != 1 || !IsInstructions(msgs[0]) || msgs[1].Text() != "first" {
		t.Fatalf("instructions stored %d times, want once, first:\n%s", n, dumpMsgs(msgs))
	}
	if !IsInstructions(p.seen[0][0]) || !IsInstructions(p.seen[1][0]) {
		t.Fatalf("the provider did not get them:\n%s", dumpMsgs(p.seen[1]))
	}
}

// A compression keeps the instructions as the child's first message, not
// in the summary alone: no later turn would store them again.
func TestInstructionsSurviveCompression(t *testing.T) {
	t.Parallel()
	profile, cwd := project(t)
	st := newStore(t)
	id := newSession(t, st)
	p := &scripted{t: t, replies: []sessions.Message{text("a1"), text("a2"), text("the gist"), text("a3"), text("a4"), text("gist 2")}}
	e := &Engine{Sessions: st, Provider: p, Instructions: &Instructions{ProfileDir: profile}}
	turn := func(id, q string) {
		t.Helper()
		if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user(q), Env: &Env{Cwd: cwd}}); err != nil {
			t.Fatal(err)
		}
	}
	turn(id, "one")
	turn(id, "two")
	for range 2 {
		c, err := e.Compress(context.Background(), id, 1)
		if err != nil {
			t.Fatal(err)
		}
		id = c.Child.ID
		child := stored(t, st, id)
		if !IsInstructions(child[0]) || !strings.HasPrefix(child[1].Text(), "Summary of the conversation") {
			t.Fatalf("child:\n%s", dumpMsgs(child))
		}
		turn(id, "more")
		n := 0
		for _, m := range stored(t, st, id) {
			if IsInstructions(m) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("instructions %d times in the child", n)
		}
	}
}
