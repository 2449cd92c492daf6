package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd"
)

// TestFullDisk runs hermes on a real full disk: a 512 KiB tmpfs mounted as
// the hermes root (root only; skipped otherwise). A session is filled until
// an append fails; the failing command exits 1 saying "disk full", and the
// profile is byte-identical to a copy taken just before: documents,
// transcripts, catalog, no stray temp file. Then, with the disk filled to
// the last byte, `sessions new`, `kanban create`, `tasks run --wait` and
// `cron add`, `edit` and `run` fail the same way and leave nothing behind.
func TestFullDisk(t *testing.T) {
	mnt := mountTmpfs(t, "512k")
	home := filepath.Join(mnt, "hermes")
	profile := filepath.Join(home, "profiles", "default")

	run := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := cmd.Run(append([]string{"hermes", "--home", home}, args...), strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errs := run(stdin, args...)
		if code != 0 {
			t.Fatalf("hermes %v: exit %d: %s", args, code, errs)
		}
		return out
	}

	must("", "sessions", "new", "--id", "keep", "--title", "kept session")
	must("", "sessions", "append", "keep", "--role", "user", "--content", "hello")
	must("", "sessions", "new", "--id", "fill")
	must("", "kanban", "create", "a card")
	must("", "cron", "add", "job", "--schedule", "every 1h", "--", "true")
	// Space to give back at the end, as a user would free some.
	if err := os.WriteFile(filepath.Join(mnt, "reserve"), make([]byte, 128<<10), 0o600); err != nil {
		t.Fatal(err)
	}

	// Fill the session until an append fails. Each try is compared with a
	// snapshot of the whole root taken just before it.
	chunk := strings.Repeat("x", 6000)
	failed := false
	for i := 0; i < 200 && !failed; i++ {
		before := snapshot(t, home)
		code, _, stderr := run("", "sessions", "append", "fill", "--role", "user", "--content", chunk)
		if code == 0 {
			continue
		}
		failed = true
		t.Logf("append %d failed: exit %d: %s", i+1, code, strings.TrimSpace(stderr))
		wantDiskFull(t, "sessions append", code, stderr)
		diffSnapshots(t, "failed append", before, snapshot(t, home))
	}
	if !failed {
		t.Fatal("the disk never filled")
	}

	// Fill what is left to the last byte, outside the profile.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{64 << 10, 4 << 10, 512, 64, 1} {
		for {
			if _, err := filler.Write(make([]byte, n)); err != nil {
				break
			}
		}
	}
	filler.Close()

	// Appends that need a new page, a new session, a save, a card, a
	// task: exit 1, nothing changed.
	page := strings.Repeat("p", 8<<10)
	for _, try := range []struct {
		what  string
		stdin string
		args  []string
	}{
		{"page-sized append", "", []string{"sessions", "append", "fill", "--role", "user", "--content", page}},
		{"page-sized append to the kept session", "", []string{"sessions", "append", "keep", "--role", "user", "--content", page}},
		{"sessions new", "", []string{"sessions", "new", "--id", "fresh"}},
		{"sessions new without id", "", []string{"sessions", "new"}},
		{"sessions rename", "", []string{"sessions", "rename", "keep", "renamed"}},
		{"page-sized sessions save", `{"role":"user","content":"hello"}` + "\n" + `{"role":"user","content":"` + page + `"}` + "\n", []string{"sessions", "save", "keep"}},
		{"kanban create", "", []string{"kanban", "create", "another card"}},
		{"tasks run --wait", "", []string{"tasks", "run", "--wait", "--", "echo", "hi"}},
		{"cron add", "", []string{"cron", "add", "another", "--schedule", "every 1h", "--", "true"}},
		{"cron edit", "", []string{"cron", "edit", "job", "--schedule", "every 2h"}},
		{"cron run", "", []string{"cron", "run", "job"}},
	} {
		before := snapshot(t, home)
		code, _, stderr := run(try.stdin, try.args...)
		t.Logf("%s: exit %d: %s", try.what, code, strings.TrimSpace(stderr))
		wantDiskFull(t, try.what, code, stderr)
		diffSnapshots(t, try.what, before, snapshot(t, home))
	}

	// A small append needs no new block when the transcript's and the
	// catalog's last pages have room (an append does not rewrite the
	// session document): it either fails as above or is stored whole.
	for _, session := range []string{"fill", "keep"} {
		before := snapshot(t, home)
		code, _, stderr := run("", "sessions", "append", session, "--role", "user", "--content", "small")
		t.Logf("small append to %s: exit %d: %s", session, code, strings.TrimSpace(stderr))
		if code != 0 {
			wantDiskFull(t, "small append to "+session, code, stderr)
			diffSnapshots(t, "small append to "+session, before, snapshot(t, home))
			continue
		}
		if out := must("", "sessions", "export", session, "--format", "jsonl"); !strings.Contains(out, `"content":"small"}]`) {
			t.Errorf("small append to %s acknowledged but not the last message:\n%.300s", session, out)
		}
	}

	// Once there is room again, everything works and reads back whole.
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mnt, "reserve")); err != nil {
		t.Fatal(err)
	}
	must("", "sessions", "append", "keep", "--role", "user", "--content", "after")
	if out := must("", "sessions", "show", "keep"); !strings.Contains(out, "after") || !strings.Contains(out, "hello") {
		t.Errorf("show after the disk had room again:\n%s", out)
	}
	must("", "tasks", "run", "--wait", "--", "true")
	if code, out, errs := run("", "fsck"); code != 0 {
		t.Errorf("fsck after a full disk: exit %d\n%s%s", code, out, errs)
	}
	_ = profile
}

// wantDiskFull fails the test unless a command exited 1 saying the disk
// is full.
func wantDiskFull(t *testing.T, what string, code int, stderr string) {
	t.Helper()
	if code != 1 {
		t.Errorf("%s on a full disk: exit %d, want 1 (stderr %q)", what, code, stderr)
	}
	if !strings.Contains(stderr, "disk full") {
		t.Errorf("%s on a full disk: stderr %q does not say \"disk full\"", what, stderr)
	}
}

// snapshot maps every path under root to its type and content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffSnapshots fails the test if after differs from before, but for what
// a failed write may leave by design (documented in the README of the
// store, fsstore/doc.go): an empty lock sidecar (it holds no data and is
// taken before anything is known); a new directory (what it holds is
// checked on its own); and a whole
// line added to the sessions' activity catalog (made, if it was missing),
// a cache whose stray entries only bump a session's last-activity time (a
// line for a session without a document is skipped by readers); and the
// title index (sessions/.titles/), whose entries lookups check against
// the documents, dropping those the documents do not bear out; and what
// the host observed (hosts/: its clock's skew, the heartbeats it has
// watched), which a command records before it decides, and which no
// reader takes for a record (fsstore/hosts doc.go).
func diffSnapshots(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if reflect.DeepEqual(before, after) {
		return
	}
	var diffs []string
	for k, v := range after {
		old, ok := before[k]
		switch {
		case !ok && v == "" && strings.HasSuffix(k, ".lock"):
			continue // an empty lock sidecar
		case !ok && v == "dir":
			continue // a directory holds no data; what is in it is checked on its own
		case filepath.Base(k) == ".catalog.jsonl" && strings.HasPrefix(v, old) && strings.HasSuffix(v, "\n") &&
			strings.Count(v[len(old):], "\n") == 1 && strings.HasPrefix(v[len(old):], `{"session_id":`):
			continue // one more activity line in the catalog cache, maybe its first
		case strings.HasPrefix(k, filepath.Join("sessions", ".titles")+string(filepath.Separator)):
			continue // the title index, a cache whose entries are checked against the documents
		case strings.HasPrefix(k, "hosts"+string(filepath.Separator)):
			continue // what the host observed, not a record
		case !ok:
			diffs = append(diffs, "new: "+k+" ("+short(v)+")")
		case old != v:
			diffs = append(diffs, "changed: "+k+" ("+short(old)+" -> "+short(v)+")")
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diffs = append(diffs, "gone: "+k)
		}
	}
	if len(diffs) == 0 {
		return
	}
	sort.Strings(diffs)
	t.Errorf("%s changed the profile:\n  %s", what, strings.Join(diffs, "\n  "))
}

func short(s string) string {
	if len(s) > 60 {
		return s[:30] + "…" + s[len(s)-30:]
	}
	return s
}

// TestFullDiskEveryPage runs the verbs that write several files on a full
// disk with every number of free pages from 0 to 12: `kanban create`,
// `kanban dispatch --once` (a claim, its worker's task record, the
// outcome), `sessions import` and `tasks run`. Each either succeeds whole
// or exits 1 saying "disk full" with its profile as it was (but for lock
// sidecars, empty directories and a line of the catalog cache); and once
// the disk has room, fsck finds nothing half-made: no task, no empty
// session, no task stuck running.
func TestFullDiskEveryPage(t *testing.T) {
	rig := newDiskRig(t, "1m")
	home, hermes, must, fill, unfill := rig.home, rig.hermes, rig.must, rig.fill, rig.unfill

	var transcript strings.Builder
	transcript.WriteString(`{"id":"imp","title":"imported","source":"elsewhere","messages":[`)
	for i := range 12 {
		if i > 0 {
			transcript.WriteString(",")
		}
		role := []string{"user", "assistant"}[i%2]
		fmt.Fprintf(&transcript, `{"role":%q,"content":"message %d %s"}`, role, i, strings.Repeat("w", 700))
	}
	transcript.WriteString("]}\n")
	importFile := filepath.Join(t.TempDir(), "import.jsonl")
	if err := os.WriteFile(importFile, []byte(transcript.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	type verb struct {
		name    string
		prepare func(profile string)
		args    []string
		// done checks what an exit 0 stored, once the disk has room, and
		// waits for what it started.
		done func(profile, stdout string)
		// nothing checks, once the disk has room, that an exit 1 left no
		// record behind.
		nothing func(profile string)
	}
	noTasks := func(profile string) {
		t.Helper()
		if out := must(profile, "--json", "kanban", "list"); out != "" {
			t.Errorf("-p %s: a failed command left a board task: %s", profile, out)
		}
	}
	verbs := []verb{
		{
			name: "kanban create",
			args: []string{"kanban", "create", "a card"},
			done: func(profile, stdout string) {
				id := strings.TrimSpace(stdout)
				if out := must(profile, "--json", "kanban", "show", id); !strings.Contains(out, `"status":"ready"`) || !strings.Contains(out, `"type":"created"`) {
					t.Errorf("-p %s: kanban create exited 0, but the task is %s", profile, out)
				}
			},
			nothing: noTasks,
		},
		{
			name: "kanban dispatch --once",
			prepare: func(profile string) {
				dir := filepath.Join(home, "profiles", profile)
				must(profile, "kanban", "create", "a card")
				if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("kanban:\n  worker_command: \"true\"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			args: []string{"kanban", "dispatch", "--once"},
			done: func(profile, stdout string) {
				out := must(profile, "--json", "kanban", "list")
				switch {
				case strings.Contains(out, `"status":"running"`):
					worker := regexp.MustCompile(`"worker_task_id":"([^"]+)"`).FindStringSubmatch(out)
					if worker == nil {
						t.Errorf("-p %s: a running task without its worker: %s", profile, out)
						return
					}
					hermes(profile, "tasks", "wait", worker[1])
				case strings.Contains(out, `"status":"blocked"`) && strings.Contains(out, "spawn_failed"):
				default:
					t.Errorf("-p %s: dispatch exited 0, but the task is neither running nor blocked by a failed spawn: %s", profile, out)
				}
			},
			nothing: func(profile string) {
				if out := must(profile, "--json", "kanban", "list"); !strings.Contains(out, `"status":"ready"`) || strings.Contains(out, `"runs":[{`) {
					t.Errorf("-p %s: a failed dispatch left the task %s", profile, out)
				}
				if out := must(profile, "tasks", "list"); strings.Contains(out, "running") {
					t.Errorf("-p %s: a failed dispatch left a worker task: %s", profile, out)
				}
			},
		},
		{
			name: "sessions import",
			args: []string{"sessions", "import", importFile},
			done: func(profile, stdout string) {
				if out := must(profile, "--json", "sessions", "show", "imp"); !strings.Contains(out, `"message_count":12`) {
					t.Errorf("-p %s: import exited 0, but the session is %s", profile, out)
				}
			},
			nothing: func(profile string) {
				if out := must(profile, "--json", "sessions", "list"); out != "" {
					t.Errorf("-p %s: a failed import left a session: %s", profile, out)
				}
			},
		},
		{
			name: "tasks run",
			args: []string{"tasks", "run", "--name", "job", "--", "true"},
			done: func(profile, stdout string) {
				hermes(profile, "tasks", "wait", strings.TrimSpace(stdout))
			},
			nothing: func(profile string) {
				if out := must(profile, "--json", "tasks", "list"); out != "" {
					t.Errorf("-p %s: a failed tasks run left a task: %s", profile, out)
				}
			},
		},
	}
	for vi, v := range verbs {
		failed, succeeded := 0, 0
		for pages := 0; pages <= 12; pages++ {
			profile := fmt.Sprintf("v%dp%d", vi, pages)
			dir := filepath.Join(home, "profiles", profile)
			if v.prepare != nil {
				v.prepare(profile)
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			fill(pages)
			before := snapshot(t, dir)
			code, stdout, stderr := hermes(profile, v.args...)
			var after map[string]string
			if code != 0 {
				// Taken before the disk has room again; after a success a
				// worker may still be writing.
				after = snapshot(t, dir)
			}
			unfill()
			what := fmt.Sprintf("%s with %d free pages", v.name, pages)
			if code == 0 {
				succeeded++
				v.done(profile, stdout)
			} else {
				failed++
				t.Logf("%s: exit %d: %s", what, code, strings.TrimSpace(stderr))
				wantDiskFull(t, what, code, stderr)
				diffSnapshots(t, what, before, after)
				v.nothing(profile)
			}
			if code, out, errs := hermes(profile, "fsck"); code != 0 {
				t.Errorf("%s: fsck afterwards: exit %d\n%s%s", what, code, out, errs)
			}
		}
		t.Logf("%s: %d failed, %d succeeded", v.name, failed, succeeded)
		if failed == 0 || succeeded == 0 {
			t.Errorf("%s: %d failed, %d succeeded: the free pages did not span its needs", v.name, failed, succeeded)
		}
	}
}

// TestFullDiskChatEveryPage runs `chat -q` (the echo provider) on a disk
// with every number of free pages from 0 to 16, in a new session and in a
// resumed one, failing at each write in turn (issue 27 item 7: a full
// disk left a session whose catalog said ended and whose document said
// active with no message, and the message "session X keeps your message"
// was false). Once the disk has room: fsck finds nothing, the catalog and
// the documents agree (stats and list count the same states), and what
// stderr said is true: no session was made, the message was not stored,
// or it was, with the reply or not.
func TestFullDiskChatEveryPage(t *testing.T) {
	rig := newDiskRig(t, "1m")
	type state struct {
		ID           string `json:"id"`
		State        string `json:"state"`
		MessageCount int64  `json:"message_count"`
	}
	list := func(profile string) []state {
		t.Helper()
		var out []state
		for _, line := range strings.Split(strings.TrimSpace(rig.must(profile, "--json", "sessions", "list")), "\n") {
			if line == "" {
				continue
			}
			var st state
			if err := json.Unmarshal([]byte(line), &st); err != nil {
				t.Fatalf("-p %s: sessions list: %v: %s", profile, err, line)
			}
			out = append(out, st)
		}
		return out
	}
	for _, resume := range []bool{false, true} {
		kinds := map[string]int{}
		for pages := 0; pages <= 16; pages++ {
			profile := fmt.Sprintf("r%vp%d", resume, pages)
			args := []string{"chat", "-q", "hello " + strings.Repeat("w", 3000)}
			before := int64(0)
			if resume {
				rig.must(profile, "sessions", "new", "--id", "r")
				rig.must(profile, "sessions", "append", "r", "--role", "user", "--content", "earlier")
				rig.must(profile, "sessions", "end", "r")
				args = append(args, "--resume", "r")
				before = 1
			} else if err := os.MkdirAll(filepath.Join(rig.home, "profiles", profile), 0o700); err != nil {
				t.Fatal(err)
			}
			rig.fill(pages)
			code, stdout, stderr := rig.hermes(profile, args...)
			rig.unfill()
			what := fmt.Sprintf("chat -q (resume %v) with %d free pages: exit %d: %s", resume, pages, code, strings.TrimSpace(stderr))
			t.Log(what)
			sessions := list(profile)
			var sess *state
			for i := range sessions {
				sess = &sessions[i]
			}
			if len(sessions) > 1 {
				t.Errorf("%s: %d sessions: %+v", what, len(sessions), sessions)
			}
			kind := "ok"
			switch {
			case code == 0:
				if sess == nil || sess.MessageCount != before+2 || !strings.Contains(stdout, "echo:") {
					t.Errorf("%s: exit 0, but the session is %+v and stdout %q", what, sess, stdout)
				}
			case strings.Contains(stderr, "no session was made"):
				kind = "no session"
				if sess != nil {
					t.Errorf("%s: said no session was made, but there is %+v", what, *sess)
				}
			case strings.Contains(stderr, "your message was not stored"):
				kind = "not stored"
				if sess == nil || sess.MessageCount != before {
					t.Errorf("%s: said the message was not stored, but the session is %+v", what, sess)
				}
			case strings.Contains(stderr, "keeps your message"):
				kind = "stored, no reply"
				if sess == nil || sess.MessageCount != before+1 {
					t.Errorf("%s: said the session keeps the message, but it is %+v", what, sess)
				}
			case strings.Contains(stderr, "ending session"):
				kind = "replied, not ended"
				if sess == nil || sess.MessageCount != before+2 || sess.State != "active" || !strings.Contains(stdout, "echo:") {
					t.Errorf("%s: said only the end failed, but the session is %+v and stdout %q", what, sess, stdout)
				}
			default:
				t.Errorf("%s: stderr says nothing of the session", what)
			}
			if code != 0 {
				wantDiskFull(t, what, code, stderr)
			}
			kinds[kind]++
			if code, out, errs := rig.hermes(profile, "fsck"); code != 0 {
				t.Errorf("%s: fsck afterwards: exit %d\n%s%s", what, code, out, errs)
			}
			var stats struct {
				ByState map[string]int `json:"by_state"`
			}
			if err := json.Unmarshal([]byte(rig.must(profile, "--json", "sessions", "stats")), &stats); err != nil {
				t.Fatal(err)
			}
			listed := map[string]int{}
			for _, st := range sessions {
				listed[st.State]++
			}
			if !maps.Equal(stats.ByState, listed) && !(len(stats.ByState) == 0 && len(listed) == 0) {
				t.Errorf("%s: stats counts %v, list shows %v", what, stats.ByState, listed)
			}
		}
		t.Logf("resume %v: %v", resume, kinds)
		if kinds["ok"] == 0 || len(kinds) < 2 {
			t.Errorf("resume %v: outcomes %v: the free pages did not span the chat's needs", resume, kinds)
		}
	}
}

// diskRig runs the real binary on a small tmpfs whose free pages a test
// sets.
type diskRig struct {
	t    *testing.T
	mnt  string
	home string
}

func newDiskRig(t *testing.T, size string) *diskRig {
	mnt := mountTmpfs(t, size)
	return &diskRig{t: t, mnt: mnt, home: filepath.Join(mnt, "hermes")}
}

// hermes runs the real binary: the dispatcher and tasks run start
// supervisors, which run it again.
func (r *diskRig) hermes(profile string, args ...string) (int, string, string) {
	r.t.Helper()
	c := exec.Command("hermes", append([]string{"--home", r.home, "-p", profile}, args...)...)
	c.Env = append(os.Environ(), quickRaceExit())
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), errb.String()
	}
	r.t.Fatalf("hermes %v: %v", args, err)
	return 0, "", ""
}

func (r *diskRig) must(profile string, args ...string) string {
	r.t.Helper()
	code, out, errs := r.hermes(profile, args...)
	if code != 0 {
		r.t.Fatalf("hermes -p %s %v: exit %d: %s", profile, args, code, errs)
	}
	return out
}

// fill leaves exactly pages free pages on the tmpfs.
func (r *diskRig) fill(pages int) {
	r.t.Helper()
	spacer := filepath.Join(r.mnt, "spacer")
	if err := os.WriteFile(spacer, make([]byte, pages*4096), 0o600); err != nil {
		r.t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(r.mnt, "filler"))
	if err != nil {
		r.t.Fatal(err)
	}
	for _, n := range []int{64 << 10, 4 << 10, 512, 64, 1} {
		for {
			if _, err := f.Write(make([]byte, n)); err != nil {
				break
			}
		}
	}
	f.Close()
	if err := os.Remove(spacer); err != nil {
		r.t.Fatal(err)
	}
}

// unfill gives the disk its room back.
func (r *diskRig) unfill() {
	r.t.Helper()
	if err := os.Remove(filepath.Join(r.mnt, "filler")); err != nil {
		r.t.Fatal(err)
	}
}

// mountTmpfs mounts a tmpfs of size (mount's -o size=) for the rest of the
// test and returns where. It skips the test where it cannot: not root, -short,
// or mount refused.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs: sudo go test . -run TestFullDisk")
	}
	if testing.Short() {
		t.Skip("-short: mounts a tmpfs; go test . (without -short) runs it")
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (root without CAP_SYS_ADMIN, as in a container: run it on a host or a privileged container): %v: %s", err, out)
	}
	t.Cleanup(func() {
		// A detached process the test started (a task's runner, a
		// worker) can still be exiting after the state it wrote says it
		// is done, its files open on the mount: umount says busy until
		// it is gone, which a loaded machine can make take seconds.
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := exec.Command("umount", mnt).CombinedOutput()
			if err == nil {
				return
			}
			if !bytes.Contains(out, []byte("busy")) || time.Now().After(deadline) {
				t.Errorf("umount %s: %v: %s", mnt, err, out)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return mnt
}
