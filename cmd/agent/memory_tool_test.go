package agent

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/sessions"
)

func newMemory(t *testing.T) *memory.Store {
	t.Helper()
	return memory.NewStore(filepath.Join(t.TempDir(), "profile"), 5*time.Second, func(msg string) { t.Errorf("warning: %s", msg) })
}

func memoryCall(t *testing.T, env *Env, args string) (string, error) {
	t.Helper()
	return memoryTool{}.Run(context.Background(), env.forCall(context.Background()), json.RawMessage(args))
}

// TestMemoryTool: each action, the notice at 90%, the refusal past the
// bound (what MemoryAlert tells the user), and a memory that is off.
func TestMemoryTool(t *testing.T) {
	t.Parallel()
	mem := newMemory(t)
	mem.UserMaxChars = 20
	env := &Env{SessionID: "20261121_020734_a1b2c3", Memory: mem, MaxOutput: DefaultMaxOutput}
	out, err := memoryCall(t, env, `{"action":"add","content":"uses make"}`)
	if err != nil || out != "MEMORY.md: added (change 1); now 9 of 8000 characters" || MemoryAlert(out) != "" {
		t.Fatalf("add: %q %v", out, err)
	}
	out, err = memoryCall(t, env, `{"action":"add","target":"user","content":"likes tea and jazz"}`)
	if err != nil || !strings.Contains(out, "\nnotice: USER.md is 90% full (18 of 20 characters)") {
		t.Fatalf("add at 90%%: %q %v", out, err)
	}
	if a := MemoryAlert(out); !strings.HasPrefix(a, "USER.md is 90% full") {
		t.Errorf("alert %q", a)
	}
	_, err = memoryCall(t, env, `{"action":"add","target":"user","content":"and cats"}`)
	if err == nil || !strings.Contains(err.Error(), "over its limit of 20") {
		t.Fatalf("past the bound: %v", err)
	}
	if a := MemoryAlert("error: " + err.Error()); !strings.HasPrefix(a, "USER.md would hold") {
		t.Errorf("alert of the refusal %q", a)
	}
	if out, err = memoryCall(t, env, `{"action":"replace","old_text":"make","content":"uses make -j8"}`); err != nil || !strings.Contains(out, "replaced (change 3)") {
		t.Errorf("replace: %q %v", out, err)
	}
	out, err = memoryCall(t, env, `{"action":"view"}`)
	if err != nil || !strings.Contains(out, "MEMORY.md: 13 of 8000 characters (0%), 1 entries\nuses make -j8\n") || !strings.Contains(out, "likes tea and jazz") {
		t.Errorf("view: %q %v", out, err)
	}
	if out, err = memoryCall(t, env, `{"action":"remove","target":"user","old_text":"tea"}`); err != nil || !strings.Contains(out, "USER.md: removed (change 4)") {
		t.Errorf("remove: %q %v", out, err)
	}
	var log []memory.Change
	mem.Log(func(c memory.Change) { log = append(log, c) })
	if len(log) != 4 || log[0].By != memory.ByAgent || log[0].SessionID != env.SessionID {
		t.Errorf("log %+v", log)
	}
	for _, bad := range []string{`{"action":"drop"}`, `{"action":"add","text":"x"}`, `{"action":"add","target":"notes","content":"x"}`} {
		if _, err := memoryCall(t, env, bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := memoryCall(t, &Env{}, `{"action":"view"}`); err == nil || !strings.Contains(err.Error(), "memory is off") {
		t.Errorf("memory off: %v", err)
	}
}

// TestMemorySnapshot: a session's first turn stores the memory after the
// instructions; a later turn, after the memory changed, neither stores it
// again nor changes the copy; a compression keeps both notes.
func TestMemorySnapshot(t *testing.T) {
	t.Parallel()
	profile, cwd := project(t)
	mem := newMemory(t)
	if _, err := mem.Add(memory.Memory, "uses make", memory.Who{By: memory.ByUser}); err != nil {
		t.Fatal(err)
	}
	st := newStore(t)
	id := newSession(t, st)
	p := &scripted{t: t, replies: []sessions.Message{text("one"), text("two"), text("the gist"), text("three")}}
	e := &Engine{Sessions: st, Provider: p, Instructions: &Instructions{ProfileDir: profile}, Memory: mem}
	turn := func(id, q string) {
		t.Helper()
		if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user(q), Env: &Env{Cwd: cwd}}); err != nil {
			t.Fatal(err)
		}
	}
	turn(id, "first")
	mem.Add(memory.Memory, "later entry", memory.Who{By: memory.ByUser})
	turn(id, "second")
	msgs := stored(t, st, id)
	if !IsInstructions(msgs[0]) || !IsMemory(msgs[1]) || msgs[2].Text() != "first" {
		t.Fatalf("opening:\n%s", dumpMsgs(msgs))
	}
	if !strings.Contains(msgs[1].Text(), "--- MEMORY.md (what you noted about the work; 9 of 8000 characters) ---\nuses make") {
		t.Errorf("snapshot %q", msgs[1].Text())
	}
	n := 0
	for _, m := range msgs {
		if IsMemory(m) {
			n++
			if strings.Contains(m.Text(), "later entry") {
				t.Errorf("the snapshot changed with the memory: %q", m.Text())
			}
		}
	}
	if n != 1 || !IsMemory(p.seen[1][1]) {
		t.Errorf("snapshot stored %d times; the provider's second history:\n%s", n, dumpMsgs(p.seen[1]))
	}
	c, err := e.Compress(context.Background(), id, 1)
	if err != nil {
		t.Fatal(err)
	}
	child := stored(t, st, c.Child.ID)
	if !IsInstructions(child[0]) || !IsMemory(child[1]) || !strings.HasPrefix(child[2].Text(), "Summary of the conversation") {
		t.Fatalf("child:\n%s", dumpMsgs(child))
	}
	if strings.Contains(child[1].Text(), "later entry") {
		t.Errorf("the child's snapshot is not the parent's")
	}

	// An empty memory adds no note.
	e.Memory = newMemory(t)
	id2 := newSession(t, st)
	p.replies = []sessions.Message{text("x")}
	turn(id2, "hi")
	for _, m := range stored(t, st, id2) {
		if IsMemory(m) {
			t.Errorf("an empty memory stored a note")
		}
	}
}
