package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/sessions"
)

// ckEngine is an engine running write_file and edit_file for a new
// session, with a checkpoint store, and the session's env.
func ckEngine(t *testing.T, replies ...sessions.Message) (*Engine, *Env, string) {
	t.Helper()
	st := newStore(t)
	id := newSession(t, st)
	env := &Env{Cwd: t.TempDir(), Checkpoints: checkpoints.Open(t.TempDir()), MaxOutput: DefaultMaxOutput}
	p := &scripted{t: t, replies: replies}
	return &Engine{Sessions: st, Provider: p, Tools: []Tool{writeFileTool{}, editFileTool{}}, Approver: Fixed(true)}, env, id
}

// changesOf is the changes recorded in the result of call id.
func changesOf(t *testing.T, msgs []sessions.Message, id string) []checkpoints.Change {
	t.Helper()
	for _, m := range msgs {
		if m.Role == "tool" && m.ToolCallID == id {
			cs, err := checkpoints.Changes(m)
			if err != nil {
				t.Fatal(err)
			}
			return cs
		}
	}
	t.Fatalf("no result for %s:\n%s", id, dumpMsgs(msgs))
	return nil
}

func args(kv ...string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Each write and edit stores the file's prior bytes before it changes the
// file, and its tool message records path, before, after, mode and
// whether it created the file; no pending record is left.
func TestToolChangesAreCheckpointed(t *testing.T) {
	t.Parallel()
	e, env, id := ckEngine(t,
		calls("write_file", args("path", "new.txt", "content", "one\n"),
			"edit_file", args("path", "old.bin", "old_string", "b", "new_string", "B"),
			"write_file", args("path", "old.bin", "content", "whole\n")),
		text("done"))
	old := filepath.Join(env.Cwd, "old.bin")
	prior := []byte("a\xffb\x01\n")
	if err := os.WriteFile(old, prior, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: env}); err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, e.Sessions, id)
	created := changesOf(t, msgs, "call_write_file_0")
	if len(created) != 1 || !created[0].Created || created[0].Before != "" || created[0].After != checkpoints.Hash([]byte("one\n")) || created[0].Path != filepath.Join(env.Cwd, "new.txt") {
		t.Errorf("write of a new file recorded %+v", created)
	}
	edited := changesOf(t, msgs, "call_edit_file_1")
	if len(edited) != 1 || edited[0].Before != checkpoints.Hash(prior) || edited[0].Mode != "0640" || edited[0].After != checkpoints.Hash([]byte("a\xffB\x01\n")) {
		t.Errorf("edit recorded %+v", edited)
	}
	if b, err := env.Checkpoints.Get(edited[0].Before); err != nil || string(b) != string(prior) {
		t.Errorf("before-image = %q, %v", b, err)
	}
	rewritten := changesOf(t, msgs, "call_write_file_2")
	if len(rewritten) != 1 || rewritten[0].Before != edited[0].After {
		t.Errorf("rewrite recorded %+v, want before = the edit's after", rewritten)
	}
	if p, _ := env.Checkpoints.AllPending(); len(p) != 0 {
		t.Errorf("pending records left: %v", p)
	}
}

// A file over checkpoints.max_file is changed, recorded as not
// checkpointed, and the result says so; a failed call records nothing.
func TestTooBigIsNotCheckpointed(t *testing.T) {
	t.Parallel()
	e, env, id := ckEngine(t,
		calls("write_file", args("path", "big", "content", "small"),
			"edit_file", args("path", "big", "old_string", "missing", "new_string", "x")),
		text("done"))
	env.Checkpoints.MaxFile = 10
	if err := os.WriteFile(filepath.Join(env.Cwd, "big"), []byte(strings.Repeat("x", 11)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: env}); err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, e.Sessions, id)
	if got := resultOf(t, msgs, "call_write_file_0"); !strings.Contains(got, "not checkpointed: big is larger than checkpoints.max_file (11 bytes; the limit is 10)") {
		t.Errorf("result %q does not say the file was not checkpointed", got)
	}
	cs := changesOf(t, msgs, "call_write_file_0")
	if len(cs) != 1 || cs[0].Before != "" || !strings.Contains(cs[0].NotCheckpointed, "max_file") {
		t.Errorf("recorded %+v", cs)
	}
	if cs := changesOf(t, msgs, "call_edit_file_1"); len(cs) != 0 {
		t.Errorf("a failed edit recorded %+v", cs)
	}
}

// A store that cannot be written refuses the change: never a change
// without its checkpoint.
func TestUnwritableStoreRefusesTheWrite(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	bad := filepath.Join(t.TempDir(), "checkpoints")
	if err := os.WriteFile(bad, nil, 0o600); err != nil { // a file where the store's directory goes
		t.Fatal(err)
	}
	env.Checkpoints = &checkpoints.Store{Dir: bad}
	env = env.withCall("c1")
	path := filepath.Join(env.Cwd, "f")
	os.WriteFile(path, []byte("keep"), 0o644)
	for _, c := range []struct {
		tool Tool
		args string
	}{
		{writeFileTool{}, args("path", "f", "content", "new")},
		{editFileTool{}, args("path", "f", "old_string", "keep", "new_string", "new")},
		{writeFileTool{}, args("path", "g", "content", "new")},
	} {
		if _, err := run(t, c.tool, env, c.args); err == nil || !strings.Contains(err.Error(), "checkpoint could not be") {
			t.Errorf("%s: %v, want a refusal", c.args, err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "keep" {
		t.Errorf("f became %q", b)
	}
	if fileIn(env.Cwd, "g") {
		t.Error("g was created")
	}
}

// A crash after the pending record and before the result: the next turn
// answers the call as interrupted, recording the changes that happened
// (the file holds what the call wrote, or neither) and not those that did
// not (the file holds its prior bytes, or is absent where it was to be
// created).
func TestPendingChangesAreSettledAfterACrash(t *testing.T) {
	t.Parallel()
	e, env, id := ckEngine(t, text("resumed"))
	if _, err := e.Sessions.Append(id, append(user("go"), calls("write_file", `{}`))); err != nil {
		t.Fatal(err)
	}
	file := func(name, content string) string {
		p := filepath.Join(env.Cwd, name)
		if content != "" {
			os.WriteFile(p, []byte(content), 0o644)
		}
		return p
	}
	h := func(s string) string { return checkpoints.Hash([]byte(s)) }
	for _, s := range []string{"a0", "b0", "c0"} {
		if _, err := env.Checkpoints.Put([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	all := []checkpoints.Change{
		{Path: file("made", "a1"), Before: h("a0"), After: h("a1")},
		{Path: file("unmade", "b0"), Before: h("b0"), After: h("b1")},
		{Path: file("since", "user"), Before: h("c0"), After: h("c1")},
		{Path: file("created", "n1"), Created: true, After: h("n1")},
		{Path: file("never-created", ""), Created: true, After: h("x")},
	}
	if err := env.Checkpoints.SetPending(checkpoints.Pending{SessionID: id, CallID: "call_write_file_0", Changes: all}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go on"), Env: env}); err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, e.Sessions, id)
	if got := resultOf(t, msgs, "call_write_file_0"); got != interruptedResult {
		t.Fatalf("result %q", got)
	}
	got := checkpoints.Paths(changesOf(t, msgs, "call_write_file_0"))
	want := []string{all[3].Path, all[0].Path, all[2].Path}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("recorded %v, want %v", got, want)
	}
	if p, _ := env.Checkpoints.AllPending(); len(p) != 0 {
		t.Errorf("pending records left: %v", p)
	}
}

// A symbolic link swapped in where a restore is to write, or a file that
// cannot be read, is a conflict, listed and left, even with force: the
// link's target is never written through.
func TestRestoreLeavesASwappedSymlink(t *testing.T) {
	t.Parallel()
	e, env, id := ckEngine(t, calls("write_file", args("path", "f", "content", "agent\n")), text("done"))
	path := filepath.Join(env.Cwd, "f")
	os.WriteFile(path, []byte("mine\n"), 0o644)
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: env}); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("agent\n"), 0o644)
	os.Remove(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	recs, err := checkpoints.Records(id, stored(t, e.Sessions, id))
	if err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		res, err := Restore(context.Background(), e.Sessions, env.Checkpoints, id, checkpoints.Plan(recs), force, false, "restored")
		if err != nil || len(res.Conflicts) != 1 || !strings.Contains(res.Conflicts[0].Reason, "symbolic link") || len(res.Changes) != 0 {
			t.Fatalf("force %v: %+v, %v", force, res, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "agent\n" {
		t.Fatalf("the link's target became %q", b)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v, %v", fi, err)
	}
}

// The before-image of each edit is the file's bytes as the edit found
// them, whether they are what the agent's previous edit wrote (whose
// hash the store remembers) or what the user wrote over them since, of
// the same size, in place.
func TestBeforeImageAfterTheUsersEdit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(path, []byte("v aaaa\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{SessionID: "s", Cwd: dir, Checkpoints: checkpoints.Open(t.TempDir())}
	edit := func(call, old, repl string) checkpoints.Change {
		t.Helper()
		cenv := env.withCall(call)
		if _, err := (editFileTool{}).Run(context.Background(), cenv, []byte(args("path", "f.txt", "old_string", old, "new_string", repl))); err != nil {
			t.Fatal(err)
		}
		cs := cenv.call.changes()
		if len(cs) != 1 {
			t.Fatalf("%s recorded %+v", call, cs)
		}
		return cs[0]
	}
	for _, step := range []struct{ old, repl, before, user string }{
		{"aaaa", "bbbb", "v aaaa\n", ""},
		{"cccc", "dddd", "v cccc\n", "v cccc\n"},
		{"dddd", "eeee", "v dddd\n", ""},
	} {
		if step.user != "" {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(step.user)
			f.Close()
		}
		c := edit("call_"+step.old, step.old, step.repl)
		if c.Before != checkpoints.Hash([]byte(step.before)) {
			t.Fatalf("edit of %s: before %s, want the hash of %q", step.old, c.Before, step.before)
		}
		if b, err := env.Checkpoints.Get(c.Before); err != nil || string(b) != step.before {
			t.Fatalf("edit of %s: before-image %q, %v; want %q", step.old, b, err, step.before)
		}
	}
}

// edit_file begins storing a file's before-image as soon as it has read
// the file, beside its search and replace: an edit refused after that
// (old_string not found) leaves the object stored (the before-image of
// the file's next change), nothing recorded and no pending record. And
// the refused edit returns only once the object's storing is over, never
// leaving it to run on (a process that exits next would cut it short; a
// test's directory was removed under it): the object's step waits up to
// half a second for the tool to return, which a tool that waits for it
// cannot do, and one that does not does at once. Not parallel: it sets
// checkpointStep.
func TestBeforeImageStoredWhileTheEditIsMade(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("v aaaa\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{SessionID: "s", Cwd: dir, Checkpoints: checkpoints.Open(t.TempDir())}
	returned := make(chan struct{})
	var stored, after atomic.Bool
	checkpointStep = func(step string) {
		if step == "object" {
			select {
			case <-returned:
				after.Store(true)
			case <-time.After(500 * time.Millisecond):
			}
			stored.Store(true)
		}
	}
	defer func() { checkpointStep = func(string) {} }()
	cenv := env.withCall("call_1")
	_, err := (editFileTool{}).Run(context.Background(), cenv, []byte(args("path", "f.txt", "old_string", "nowhere", "new_string", "x")))
	close(returned)
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("edit of a missing string: %v", err)
	}
	if !stored.Load() || after.Load() {
		t.Fatalf("the refused edit returned before its before-image was stored (stored by its return: %v)", stored.Load())
	}
	if b, err := env.Checkpoints.Get(checkpoints.Hash([]byte("v aaaa\n"))); err != nil || string(b) != "v aaaa\n" {
		t.Fatalf("before-image of the refused edit: %q, %v", b, err)
	}
	if cs := cenv.call.changes(); len(cs) != 0 {
		t.Fatalf("a refused edit recorded %+v", cs)
	}
	if _, found, err := env.Checkpoints.PendingOf("s", "call_1"); err != nil || found {
		t.Fatalf("a refused edit left a pending record: %v, %v", found, err)
	}
}
