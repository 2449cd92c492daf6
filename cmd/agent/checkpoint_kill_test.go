package agent

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/sessions"
)

// A kill -9 at each step of a checkpointed write_file and edit_file
// (before the call runs, once the before-image is stored, which edit_file
// begins before it has made its new bytes, once the pending record is
// written, before the rename, after the rename, once the result is
// stored): the file is whole, old or new; the next turn records the
// change exactly when the file holds the new bytes, with the old bytes
// restorable; fsck is clean after --repair.
func TestKilledCheckpointedWrite(t *testing.T) {
	newContent := "new\n"
	toolArgs := map[string]string{
		"write_file": args("path", "f.txt", "content", newContent),
		"edit_file":  args("path", "f.txt", "old_string", "old", "new_string", "new"),
	}
	if step := os.Getenv("HERMES_TEST_CK_KILL"); step != "" {
		block := func(s string) {
			if s == step {
				fmt.Println("at " + s)
				select {}
			}
		}
		checkpointStep = block
		beforeRename = func(string) { block("rename") }
		dir := os.Getenv("HERMES_TEST_CK_DIR")
		st := sessions.NewStore(filepath.Join(dir, "profile"), "default", time.Second, func(string) {})
		tool := os.Getenv("HERMES_TEST_CK_TOOL")
		p := &scripted{t: t, replies: []sessions.Message{calls(tool, toolArgs[tool]), text("done")}}
		e := &Engine{Sessions: st, Provider: p, Tools: []Tool{writeFileTool{}, editFileTool{}}, Approver: Fixed(true),
			Progress: func(p Progress) {
				if p.Done {
					block("ran")
				} else {
					block("start")
				}
			}}
		env := &Env{Cwd: dir, Checkpoints: checkpoints.Open(filepath.Join(dir, "profile"))}
		e.Run(context.Background(), Turn{SessionID: os.Getenv("HERMES_TEST_CK_SESSION"), Input: user("go"), Env: env})
		return
	}
	for _, tool := range []string{"write_file", "edit_file"} {
		for _, step := range []string{"start", "object", "pending", "rename", "ran", "result"} {
			t.Run(tool+"/"+step, func(t *testing.T) {
				killedWrite(t, tool, step, newContent)
			})
		}
	}
}

// killedWrite is TestKilledCheckpointedWrite's case of a kill at step of
// a call of tool.
func killedWrite(t *testing.T, tool, step, newContent string) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	os.WriteFile(path, []byte("old\n"), 0o644)
	st := sessions.NewStore(filepath.Join(dir, "profile"), "default", time.Second, func(string) {})
	id := newSession(t, st)
	killAt(t, "TestKilledCheckpointedWrite", step, "HERMES_TEST_CK_KILL="+step, "HERMES_TEST_CK_TOOL="+tool, "HERMES_TEST_CK_DIR="+dir, "HERMES_TEST_CK_SESSION="+id)

	ck := checkpoints.Open(filepath.Join(dir, "profile"))
	e := &Engine{Sessions: st, Provider: &scripted{t: t, replies: []sessions.Message{text("ok")}}, Tools: []Tool{writeFileTool{}, editFileTool{}}}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("next"), Env: &Env{Cwd: dir, Checkpoints: ck}}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	msgs := stored(t, st, id)
	var cs []checkpoints.Change
	if step != "start" {
		cs = changesOf(t, msgs, "call_"+tool+"_0")
	}
	switch string(got) {
	case newContent:
		if len(cs) != 1 || cs[0].After != checkpoints.Hash([]byte(newContent)) {
			t.Fatalf("the file changed; recorded %+v", cs)
		}
		if b, err := ck.Get(cs[0].Before); err != nil || string(b) != "old\n" {
			t.Fatalf("before-image %q, %v", b, err)
		}
	case "old\n":
		if len(cs) != 0 {
			t.Fatalf("the file did not change; recorded %+v", cs)
		}
	default:
		t.Fatalf("f.txt is %q: half-written", got)
	}
	repairedClean(t, ck, st, dir)
}

// A kill -9 at each step of a restore of five files (its pending record
// written, after each file, its note stored): every file is whole, before
// or after; the same restore run again finishes it, its note records all
// five files, and fsck is clean.
func TestKilledRestore(t *testing.T) {
	setup := func(dir string) (*sessions.Store, *checkpoints.Store, []checkpoints.Record) {
		st := sessions.NewStore(filepath.Join(dir, "profile"), "default", time.Second, func(string) {})
		ck := checkpoints.Open(filepath.Join(dir, "profile"))
		msgs, err := st.Messages(os.Getenv("HERMES_TEST_RS_SESSION"))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := checkpoints.Records(os.Getenv("HERMES_TEST_RS_SESSION"), msgs)
		if err != nil {
			t.Fatal(err)
		}
		return st, ck, recs
	}
	if step := os.Getenv("HERMES_TEST_RS_KILL"); step != "" {
		restoreStep = func(s string) {
			if s == step {
				fmt.Println("at " + s)
				select {}
			}
		}
		st, ck, recs := setup(os.Getenv("HERMES_TEST_RS_DIR"))
		Restore(context.Background(), st, ck, os.Getenv("HERMES_TEST_RS_SESSION"), checkpoints.Plan(recs), false, false, "restored")
		return
	}
	for _, step := range []string{"pending", "file 1", "file 3", "file 5", "note"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			st := sessions.NewStore(filepath.Join(dir, "profile"), "default", time.Second, func(string) {})
			ck := checkpoints.Open(filepath.Join(dir, "profile"))
			id := newSession(t, st)
			var changes []checkpoints.Change
			for i := range 5 {
				p := filepath.Join(dir, fmt.Sprintf("f%d", i))
				h, err := ck.Put([]byte(fmt.Sprintf("before %d\n", i)))
				if err != nil {
					t.Fatal(err)
				}
				after := fmt.Sprintf("after %d\n", i)
				os.WriteFile(p, []byte(after), 0o644)
				changes = append(changes, checkpoints.Change{Path: p, Before: h, After: checkpoints.Hash([]byte(after)), Mode: "0644"})
			}
			m := sessions.Message{Role: "system", Content: sessions.TextContent("changes")}
			checkpoints.Attach(&m, changes)
			if _, err := st.Append(id, []sessions.Message{m}); err != nil {
				t.Fatal(err)
			}
			killAt(t, "TestKilledRestore", step, "HERMES_TEST_RS_KILL="+step, "HERMES_TEST_RS_DIR="+dir, "HERMES_TEST_RS_SESSION="+id)
			for i := range 5 {
				b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%d", i)))
				if s := string(b); s != fmt.Sprintf("before %d\n", i) && s != fmt.Sprintf("after %d\n", i) {
					t.Fatalf("f%d is %q: half-written", i, s)
				}
			}
			if step != "note" {
				t.Setenv("HERMES_TEST_RS_SESSION", id)
				_, _, recs := setup(dir)
				res, err := Restore(context.Background(), st, ck, id, checkpoints.Plan(recs[:1]), false, false, "restored")
				if err != nil || len(res.Conflicts) > 0 || len(res.Lost) > 0 {
					t.Fatalf("the restore again: %+v, %v", res, err)
				}
			}
			for i := range 5 {
				if b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%d", i))); string(b) != fmt.Sprintf("before %d\n", i) {
					t.Fatalf("f%d is %q after the restore was finished", i, b)
				}
			}
			msgs := stored(t, st, id)
			last, _ := checkpoints.Records(id, msgs[len(msgs)-1:])
			if len(last) != 1 || len(last[0].Changes) != 5 {
				t.Fatalf("the restore's note records %+v, want the 5 files", last)
			}
			repairedClean(t, ck, st, dir)
		})
	}
}

// killAt runs test again in a process of its own with env added, and
// kills it (SIGKILL) once it prints "at step": the moment it stands
// before that step.
func killAt(t *testing.T, test, step string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "at "+step {
	}
	reached := sc.Text() == "at "+step
	cmd.Process.Kill()
	cmd.Wait()
	if !reached {
		t.Fatalf("%s did not reach step %s", test, step)
	}
}

// repairedClean runs fsck --repair over the checkpoints of the profile
// under dir, then fsck, which must find no problem left.
func repairedClean(t *testing.T, ck *checkpoints.Store, st *sessions.Store, dir string) {
	t.Helper()
	lostFound := filepath.Join(dir, "profile", "lost+found")
	if _, err := ck.Check(st, true, lostFound); err != nil {
		t.Fatal(err)
	}
	findings, err := ck.Check(st, false, lostFound)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Problem {
			t.Errorf("fsck after repair: %s: %s", f.Path, f.What)
		}
	}
}
