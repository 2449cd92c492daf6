package fsstore_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
)

// Hostile names (invariant 7): every id that could leave the store
// directory, hide a file, smuggle a control character into a listing, or is
// not a valid file name, is refused with ErrInvalid by every store before
// it touches a path, and nothing is written.
//
// Decision on Unicode look-alikes of '/' and '.': CheckID accepts them.
// U+2215 DIVISION SLASH, U+FF0F FULLWIDTH SOLIDUS, U+2044 FRACTION SLASH,
// U+FF0E FULLWIDTH FULL STOP and U+2024 ONE DOT LEADER are ordinary bytes to
// the kernel (only 0x2F and NUL are special in a Linux file name, and no
// normalization happens on ext4/xfs/tmpfs), so they cannot traverse. The
// test proves it: each such id round-trips through Create, Append, Get and
// Resolve, and the only files that appear anywhere under the root are
// <sessions>/<id>.json, .jsonl, .lock and the store's own dot-files, with
// exactly the id's bytes as the name.

// hostileIDs are the ids that must be refused, with why.
func hostileIDs() []struct{ name, id string } {
	return []struct{ name, id string }{
		{"dotdot", ".."},
		{"dot", "."},
		{"dotdot-slash-x", "../x"},
		{"nested-traversal", "a/../../b"},
		{"deep-traversal", "../../../../../../tmp/pwned"},
		{"dot-slash", "./x"},
		{"trailing-slash", "a/"},
		{"slash", "/"},
		{"absolute", "/etc/passwd"},
		{"absolute-tmp", "/tmp/x"},
		{"inner-slash", "a/b"},
		{"backslash", `a\b`},
		{"backslash-traversal", `..\..\x`},
		{"lone-backslash", `\`},
		{"nul", "a\x00b"},
		{"nul-only", "\x00"},
		{"nul-then-traversal", "x\x00/../../y"},
		{"soh", "a\x01b"},
		{"tab", "a\tb"},
		{"newline", "a\nb"},
		{"carriage-return", "a\rb"},
		{"escape", "a\x1b[31mred"},
		{"unit-separator", "a\x1fb"},
		{"del", "a\x7fb"},
		{"c1-nel", "a\u0085b"},
		{"c1-first", "a\u0080b"},
		{"c1-last", "a\u009fb"},
		{"c1-csi", "a\u009b31mred"},
		{"double-dot-inside", "x..y"},
		{"leading-dot", ".hidden"},
		{"leading-dot-catalog", ".catalog"},
		{"lookalike-then-dotdot", "\u2215..\u2215x"},
		{"1kb", strings.Repeat("a", 1024)},
		{"97-bytes", strings.Repeat("a", 97)},
		{"96-bytes-plus-multibyte", strings.Repeat("a", 95) + "é"},
		{"invalid-utf8-ff", "a\xffb"},
		{"invalid-utf8-truncated", "a\xe2\x88"},
		{"invalid-utf8-overlong-slash", "a\xc0\xafb"},
		{"invalid-utf8-overlong-dot", "\xc0\xae\xc0\xae"},
		{"invalid-utf8-surrogate", "a\xed\xa0\x80b"},
		{"invalid-utf8-lone-continuation", "\x80"},
	}
}

// lookalikeIDs are accepted by CheckID; each must stay inside the store.
var lookalikeIDs = []struct{ name, id string }{
	{"division-slash", "a\u2215b"},
	{"fullwidth-solidus", "a\uff0fb"},
	{"fraction-slash", "a\u2044b"},
	{"fullwidth-dots", "\uff0e\uff0e"},
	{"one-dot-leaders", "\u2024\u2024"},
	{"fullwidth-full-stop-lead", "\uff0ex"},
	{"lookalike-traversal", "\uff0e\uff0e\u2215\uff0e\uff0e\u2215etc\u2215passwd"},
	{"fullwidth-traversal", "\uff0e\uff0e\uff0f\uff0e\uff0e\uff0fx"},
	{"fullwidth-backslash", "a\uff3cb"},
	{"set-minus", "a\u2216b"},
	{"big-solidus", "a\u29f8b"},
	{"line-separator", "a\u2028b"},
	{"rtl-override", "a\u202eb"},
	{"zero-width-space", "a\u200bb"},
}

// treeSnapshot maps every path under root (relative) to its mode and, for
// files, content; symlinks to their target.
func treeSnapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if _, err := os.Lstat(root); errors.Is(err, os.ErrNotExist) {
		return out
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			v += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hostileStores returns the three record stores of a profile under root.
func hostileStores(profileDir string) (*sessions.Store, *tasks.Store, *kanban.Board) {
	warn := func(string) {}
	s := sessions.NewStore(profileDir, "default", time.Second, warn)
	s.Now = func() time.Time { return storetest.Epoch }
	ts := tasks.NewStore(profileDir, time.Second, warn)
	ts.Now = s.Now
	b := kanban.NewBoard(profileDir, time.Second, warn)
	b.Now = s.Now
	return s, ts, b
}

// refused reports whether err is the refusal of id by op: ErrInvalid, or
// for Resolve, which takes a ref that cannot be an id as a title only and
// never as a path, ErrNotFound when id can be a title.
func refused(op, id string, err error) bool {
	if op == "SessionStore.Resolve" && fsstore.CheckTitle(id) == nil {
		return errors.Is(err, fsstore.ErrNotFound)
	}
	return errors.Is(err, fsstore.ErrInvalid)
}

// tryAll runs every id-taking entry point of the stores with id and
// returns the errors by operation.
func tryAll(s *sessions.Store, ts *tasks.Store, b *kanban.Board, id string) map[string]error {
	errs := map[string]error{}
	_, _, errs["SessionStore.Create"] = s.Create(sessions.Session{ID: id, Source: "test"})
	_, errs["SessionStore.Append"] = s.Append(id, []sessions.Message{textMsg("user", "evil")})
	_, errs["SessionStore.Get"] = s.Get(id)
	_, errs["SessionStore.Resolve"] = s.Resolve(id)
	_, errs["SessionStore.Save"] = s.Save(id, []sessions.Message{textMsg("user", "evil")}, true)
	_, errs["SessionStore.Rename"] = s.Rename(id, "t")
	_, errs["SessionStore.Delete"] = s.Delete(id, false)
	_, errs["TaskStore.Create"] = ts.Create(tasks.Task{ID: id, Command: []string{"true"}})
	_, errs["TaskStore.Get"] = ts.Get(id)
	_, errs["Board.Create"] = b.Create(kanban.Task{ID: id, Title: "evil"})
	_, errs["Board.Get"] = b.Get(id)
	_, errs["Board.AddComment"] = b.AddComment(id, "me", "evil")
	return errs
}

func TestHostileIDsRefused(t *testing.T) {
	ids := hostileIDs()
	if len(ids) < 30 {
		t.Fatalf("only %d hostile ids", len(ids))
	}
	// Each id gets stores of its own in a directory of its own: they run
	// in parallel.
	for _, tc := range ids {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := fsstore.CheckID("session id", tc.id); !errors.Is(err, fsstore.ErrInvalid) {
				t.Fatalf("CheckID(%q) = %v, want fsstore.ErrInvalid", tc.id, err)
			}

			// A fresh root: nothing at all is created, not even the
			// profile directory. The root sits two levels down so that a
			// traversal that escaped would land inside base, where the
			// snapshot sees it.
			base := t.TempDir()
			root := filepath.Join(base, "a", "b")
			if err := os.MkdirAll(root, 0o700); err != nil {
				t.Fatal(err)
			}
			s, ts, b := hostileStores(filepath.Join(root, "profiles", "default"))
			before := treeSnapshot(t, base)
			for op, err := range tryAll(s, ts, b, tc.id) {
				if !refused(op, tc.id, err) {
					t.Errorf("fresh store: %s(%q) = %v, want fsstore.ErrInvalid", op, tc.id, err)
				}
			}
			if after := treeSnapshot(t, base); !reflect.DeepEqual(before, after) {
				t.Errorf("fresh store: files changed:\nbefore %v\nafter  %v", before, after)
			}

			// A populated profile: its listing and contents are unchanged.
			mustCreate(t, s, "good")
			mustAppend(t, s, "good", textMsg("user", "hello"))
			if _, err := ts.Create(tasks.Task{ID: "goodtask", Command: []string{"true"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Create(kanban.Task{ID: "goodcard", Title: "fine"}); err != nil {
				t.Fatal(err)
			}
			before = treeSnapshot(t, base)
			for op, err := range tryAll(s, ts, b, tc.id) {
				if !refused(op, tc.id, err) {
					t.Errorf("populated store: %s(%q) = %v, want fsstore.ErrInvalid", op, tc.id, err)
				}
			}
			if after := treeSnapshot(t, base); !reflect.DeepEqual(before, after) {
				t.Errorf("populated store: files changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestHostileLookalikeIDsStayInside(t *testing.T) {
	for _, tc := range lookalikeIDs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := fsstore.CheckID("session id", tc.id); err != nil {
				t.Fatalf("CheckID(%q) = %v; look-alikes are plain file-name bytes and are accepted", tc.id, err)
			}
			base := t.TempDir()
			root := filepath.Join(base, "a", "b")
			profileDir := filepath.Join(root, "profiles", "default")
			s, ts, b := hostileStores(profileDir)

			sess, created, err := s.Create(sessions.Session{ID: tc.id, Source: "test"})
			if err != nil || !created || sess.ID != tc.id {
				t.Fatalf("Create(%q) = %+v, %v, %v", tc.id, sess, created, err)
			}
			if n, err := s.Append(tc.id, []sessions.Message{textMsg("user", "one"), textMsg("assistant", "two")}); err != nil || n != 2 {
				t.Fatalf("Append(%q) = %d, %v", tc.id, n, err)
			}
			got, err := s.Get(tc.id)
			if err != nil || got.ID != tc.id || got.MessageCount != 2 {
				t.Fatalf("Get(%q) = %+v, %v", tc.id, got, err)
			}
			if r, err := s.Resolve(tc.id); err != nil || r != tc.id {
				t.Fatalf("Resolve(%q) = %q, %v", tc.id, r, err)
			}
			msgs, err := s.Messages(tc.id)
			if err != nil || len(msgs) != 2 || msgs[0].Text() != "one" || msgs[1].Text() != "two" {
				t.Fatalf("transcript of %q: %v, %v", tc.id, msgs, err)
			}
			if _, err := ts.Create(tasks.Task{ID: tc.id, Command: []string{"true"}}); err != nil {
				t.Fatalf("TaskStore.Create(%q): %v", tc.id, err)
			}
			if _, err := b.Create(kanban.Task{ID: tc.id, Title: "t"}); err != nil {
				t.Fatalf("Board.Create(%q): %v", tc.id, err)
			}

			// The files carry exactly the id's bytes, in the sessions dir.
			names := storetest.DirNames(t, s.Dir)
			for _, want := range []string{tc.id + ".json", tc.id + ".jsonl", tc.id + ".lock"} {
				found := false
				for _, n := range names {
					if n == want {
						found = true
					}
				}
				if !found {
					t.Errorf("sessions dir %v lacks %q", names, want)
				}
			}
			if fi, err := os.Lstat(filepath.Join(s.Dir, tc.id+".jsonl")); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("transcript: %v %v", fi, err)
			}
			// Nothing outside the profile's three store directories, and
			// every file is directly inside one of them (or the stores'
			// known subdirectories).
			allowed := map[string]bool{
				s.Dir: true, filepath.Join(s.Dir, ".titles"): true, ts.Dir: true, filepath.Join(ts.Dir, ".running"): true,
				filepath.Join(b.Dir, "tasks"): true, filepath.Join(b.Dir, "open"): true,
			}
			err = filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					return nil
				}
				if !allowed[filepath.Dir(path)] {
					t.Errorf("file outside the stores: %s", path)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Symlinks inside a profile pointing outside it (invariant 8): writes do
// not go through them. Each case makes an outside target, links to it from
// inside the profile, tries the writes, and checks the target is
// byte-identical afterwards. Where a write is not refused, the test says
// what happens instead and why it is safe.
func TestHostileSymlinks(t *testing.T) {
	type env struct {
		base, profileDir, outside string
		s                         *sessions.Store
		ts                        *tasks.Store
		b                         *kanban.Board
	}
	setup := func(t *testing.T) *env {
		base := t.TempDir()
		e := &env{base: base, profileDir: filepath.Join(base, "root", "profiles", "default"), outside: filepath.Join(base, "outside")}
		if err := os.MkdirAll(e.outside, 0o700); err != nil {
			t.Fatal(err)
		}
		e.s, e.ts, e.b = hostileStores(e.profileDir)
		return e
	}
	// link replaces path with a symlink to target.
	link := func(t *testing.T, target, path string) {
		t.Helper()
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	// moveOut moves a store directory outside and links it back.
	moveOut := func(t *testing.T, e *env, dir string) string {
		t.Helper()
		dst := filepath.Join(e.outside, filepath.Base(dir))
		if err := os.Rename(dir, dst); err != nil {
			t.Fatal(err)
		}
		link(t, dst, dir)
		return dst
	}
	wantRefused := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, fsstore.ErrRefused) {
			t.Errorf("%s: %v, want fsstore.ErrRefused", what, err)
		} else if !strings.Contains(err.Error(), "symlink") {
			t.Errorf("%s: %v, want a message naming the symlink", what, err)
		}
	}
	msg := []sessions.Message{textMsg("user", "evil")}

	t.Run("sessions-dir", func(t *testing.T) {
		e := setup(t)
		mustCreate(t, e.s, "s1")
		mustAppend(t, e.s, "s1", textMsg("user", "hi"))
		moveOut(t, e, e.s.Dir)
		before := treeSnapshot(t, e.outside)
		_, _, err := e.s.Create(sessions.Session{ID: "s2"})
		wantRefused(t, "Create", err)
		_, err = e.s.Append("s1", msg)
		wantRefused(t, "Append", err)
		_, err = e.s.Save("s1", msg, true)
		wantRefused(t, "Save --force", err)
		_, err = e.s.Rename("s1", "x")
		wantRefused(t, "Rename", err)
		_, err = e.s.Delete("s1", false)
		if err == nil {
			t.Errorf("Delete through a symlinked sessions dir succeeded")
		}
		if after := treeSnapshot(t, e.outside); !reflect.DeepEqual(before, after) {
			t.Errorf("outside changed:\nbefore %v\nafter  %v", before, after)
		}
	})

	t.Run("transcript", func(t *testing.T) {
		e := setup(t)
		mustCreate(t, e.s, "s1")
		mustAppend(t, e.s, "s1", textMsg("user", "hi"))
		target := filepath.Join(e.outside, "victim.jsonl")
		storetest.MustWrite(t, target, storetest.MustRead(t, filepath.Join(e.s.Dir, "s1.jsonl")))
		link(t, target, filepath.Join(e.s.Dir, "s1.jsonl"))
		before := treeSnapshot(t, e.outside)
		_, err := e.s.Append("s1", msg)
		wantRefused(t, "Append", err)
		// An extending save appends the tail: refused like Append.
		_, err = e.s.Save("s1", []sessions.Message{textMsg("user", "hi"), textMsg("user", "evil")}, false)
		wantRefused(t, "Save (extending)", err)
		if after := treeSnapshot(t, e.outside); !reflect.DeepEqual(before, after) {
			t.Errorf("outside changed:\nbefore %v\nafter  %v", before, after)
		}
		// Create of a session whose document is gone but whose transcript
		// is a link: refused, nothing written.
		if err := os.Remove(filepath.Join(e.s.Dir, "s1.json")); err != nil {
			t.Fatal(err)
		}
		_, _, err = e.s.Create(sessions.Session{ID: "s1"})
		wantRefused(t, "Create over a linked transcript", err)
		if _, err := os.Lstat(filepath.Join(e.s.Dir, "s1.json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Create over a linked transcript wrote a document: %v", err)
		}
		if after := treeSnapshot(t, e.outside); !reflect.DeepEqual(before, after) {
			t.Errorf("outside changed:\nbefore %v\nafter  %v", before, after)
		}
	})

	t.Run("transcript-save-force", func(t *testing.T) {
		// Documented behaviour: save --force replaces the transcript by
		// rename. The rename replaces the link itself, not its target, so
		// the target is untouched; the copy kept aside (.replaced-<unix>)
		// holds what the link pointed to, as a regular file inside the
		// profile (it was readable by the same user anyway).
		e := setup(t)
		mustCreate(t, e.s, "s1")
		mustAppend(t, e.s, "s1", textMsg("user", "hi"), textMsg("user", "there"))
		target := filepath.Join(e.outside, "victim.jsonl")
		storetest.MustWrite(t, target, storetest.MustRead(t, filepath.Join(e.s.Dir, "s1.jsonl")))
		link(t, target, filepath.Join(e.s.Dir, "s1.jsonl"))
		before := treeSnapshot(t, e.outside)
		res, err := e.s.Save("s1", []sessions.Message{textMsg("user", "new")}, true)
		if err != nil {
			t.Fatalf("Save --force: %v", err)
		}
		if after := treeSnapshot(t, e.outside); !reflect.DeepEqual(before, after) {
			t.Errorf("outside changed:\nbefore %v\nafter  %v", before, after)
		}
		fi, err := os.Lstat(filepath.Join(e.s.Dir, "s1.jsonl"))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("transcript after save --force: %v, %v; want a regular file", fi, err)
		}
		if fi, err := os.Lstat(res.Replaced); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("kept copy %q: %v, %v", res.Replaced, fi, err)
		}
	})

	t.Run("document", func(t *testing.T) {
		// Documented behaviour: documents are rewritten by rename, which
		// replaces a symlinked document with a regular file and never
		// writes through it. The target is untouched. (Reads do follow
		// the link: invariant 8 is about writes.)
		e := setup(t)
		mustCreate(t, e.s, "s1")
		target := filepath.Join(e.outside, "victim.json")
		storetest.MustWrite(t, target, storetest.MustRead(t, filepath.Join(e.s.Dir, "s1.json")))
		link(t, target, filepath.Join(e.s.Dir, "s1.json"))
		before := treeSnapshot(t, e.outside)
		if _, err := e.s.Append("s1", msg); err != nil {
			t.Fatalf("Append: %v", err)
		}
		if _, err := e.s.Rename("s1", "renamed"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		if after := treeSnapshot(t, e.outside); !reflect.DeepEqual(before, after) {
			t.Errorf("outside changed:\nbefore %v\nafter  %v", before, after)
		}
		if fi, err := os.Lstat(filepath.Join(e.s.Dir, "s1.json")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("document after rewrite: %v, %v; want a regular file", fi, err)
		}
		// A linked document whose target does not parse is quarantined:
		// the link is moved aside, the target is not touched.
		bad := filepath.Join(e.outside, "garbage.json")
		storetest.MustWrite(t, bad, []byte("not json"))
		link(t, bad, filepath.Join(e.s.Dir, "s1.json"))
		if _, err := e.s.Get("s1"); err == nil {
			t.Errorf("Get of a linked garbage document succeeded")
		}
		if got := string(storetest.MustRead(t, bad)); got != "not json" {
			t.Errorf("quarantine changed the target: %q", got)
		}
	})

	t.Run("lock-file", func(t *testing.T) {
		e := setup(t)
		mustCreate(t, e.s, "s1")
		target := filepath.Join(e.outside, "victim.lock")
		storetest.MustWrite(t, target, []byte("precious"))
		link(t, target, filepath.Join(e.s.Dir, "s1.lock"))
		_, err := e.s.Append("s1", msg)
		wantRefused(t, "Append with a linked lock", err)
		if got := string(storetest.MustRead(t, target)); got != "precious" {
			t.Errorf("target changed: %q", got)
		}
	})

	t.Run("catalog", func(t *testing.T) {
		e := setup(t)
		mustCreate(t, e.s, "s1")
		target := filepath.Join(e.outside, "victim.catalog")
		storetest.MustWrite(t, target, storetest.MustRead(t, filepath.Join(e.s.Dir, ".catalog.jsonl")))
		link(t, target, filepath.Join(e.s.Dir, ".catalog.jsonl"))
		before := treeSnapshot(t, e.outside)
		_, _, err := e.s.Create(sessions.Session{ID: "s2"})
		wantRefused(t, "Create with a linked catalog", err)
		_, err = e.s.Append("s1", msg)
		wantRefused(t, "Append with a linked catalog", err)
		if after := treeSnapshot(t, e.outside); !reflect.DeepEqual(before, after) {
			t.Errorf("outside changed:\nbefore %v\nafter  %v", before, after)
		}
	})

	// The tasks directory, or its index of running tasks, moved out and
	// replaced by a link.
	for name, dir := range map[string]func(*tasks.Store) string{
		"tasks-dir":         func(ts *tasks.Store) string { return ts.Dir },
		"tasks-running-dir": func(ts *tasks.Store) string { return filepath.Join(ts.Dir, ".running") },
	} {
		t.Run(name, func(t *testing.T) {
			e := setup(t)
			if _, err := e.ts.Create(tasks.Task{ID: "t1", Command: []string{"true"}}); err != nil {
				t.Fatal(err)
			}
			moveOut(t, e, dir(e.ts))
			before := treeSnapshot(t, e.outside)
			_, err := e.ts.Create(tasks.Task{ID: "t2", Command: []string{"true"}})
			wantRefused(t, "TaskStore.Create", err)
			_, err = e.ts.Update("t1", func(t *tasks.Task) { t.PID = 42 })
			wantRefused(t, "TaskStore.Update", err)
			_, _, err = e.ts.Finish("t1", func(t *tasks.Task) { t.Status = tasks.Lost })
			wantRefused(t, "TaskStore.Finish", err)
			if after := treeSnapshot(t, e.outside); !reflect.DeepEqual(before, after) {
				t.Errorf("outside changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}

	t.Run("task-log", func(t *testing.T) {
		// A log that exists as a link before the task is created: the
		// create is exclusive and fails; the target is untouched.
		e := setup(t)
		if _, err := e.ts.Create(tasks.Task{ID: "t1", Command: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(e.outside, "victim.log")
		storetest.MustWrite(t, target, []byte("precious"))
		if err := os.Symlink(target, e.ts.LogPath("t2")); err != nil {
			t.Fatal(err)
		}
		if _, err := e.ts.Create(tasks.Task{ID: "t2", Command: []string{"true"}}); err == nil {
			t.Errorf("TaskStore.Create over a linked log succeeded")
		}
		if got := string(storetest.MustRead(t, target)); got != "precious" {
			t.Errorf("target changed: %q", got)
		}
	})

	for _, sub := range []string{"kanban", "kanban/tasks", "kanban/open"} {
		t.Run("board-"+strings.ReplaceAll(sub, "/", "-")+"-dir", func(t *testing.T) {
			e := setup(t)
			if _, err := e.b.Create(kanban.Task{ID: "k1", Title: "one"}); err != nil {
				t.Fatal(err)
			}
			moveOut(t, e, filepath.Join(e.profileDir, sub))
			before := treeSnapshot(t, e.outside)
			_, err := e.b.Create(kanban.Task{ID: "k2", Title: "two"})
			wantRefused(t, "Board.Create", err)
			_, err = e.b.Update("k1", func(t *kanban.Task, _ time.Time) ([]kanban.Event, error) {
				t.Status = kanban.Done
				return []kanban.Event{{Type: "done"}}, nil
			})
			wantRefused(t, "Board.Update", err)
			_, err = e.b.AddComment("k1", "me", "evil")
			wantRefused(t, "Board.AddComment", err)
			if after := treeSnapshot(t, e.outside); !reflect.DeepEqual(before, after) {
				t.Errorf("outside changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}

	t.Run("board-comments-log", func(t *testing.T) {
		e := setup(t)
		if _, err := e.b.Create(kanban.Task{ID: "k1", Title: "one"}); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(e.outside, "victim.jsonl")
		storetest.MustWrite(t, target, []byte("precious\n"))
		link(t, target, filepath.Join(e.b.Dir, "tasks", "k1"+".comments.jsonl"))
		_, err := e.b.AddComment("k1", "me", "evil")
		wantRefused(t, "AddComment", err)
		if got := string(storetest.MustRead(t, target)); got != "precious\n" {
			t.Errorf("target changed: %q", got)
		}
	})
}

// textMsg is a chat message with string content.
func textMsg(role, text string) sessions.Message {
	return sessions.Message{Role: role, Content: sessions.TextContent(text)}
}

// mustCreate creates session id (or fails the test).
func mustCreate(t testing.TB, s *sessions.Store, id string) {
	t.Helper()
	if _, _, err := s.Create(sessions.Session{ID: id, Source: "test"}); err != nil {
		t.Fatalf("Create(%q): %v", id, err)
	}
}

// mustAppend appends msgs to id, one call per message.
func mustAppend(t testing.TB, s *sessions.Store, id string, msgs ...sessions.Message) {
	t.Helper()
	for _, m := range msgs {
		if _, err := s.Append(id, []sessions.Message{m}); err != nil {
			t.Fatalf("Append(%s): %v", id, err)
		}
	}
}

// TestCreateRefusesFileKindParts: every store's create refuses an id with
// a part that is a kind of file (issue 27 item 1: abc.jsonl.keep), exit 2
// and nothing written, while the other entry points still take it, so a
// record made before the rule stays reachable.
func TestCreateRefusesFileKindParts(t *testing.T) {
	for _, id := range []string{"abc.jsonl.keep", "abc.json", "abc.LOCK", "abc.log.x"} {
		base := t.TempDir()
		s, ts, b := hostileStores(filepath.Join(base, "profiles", "default"))
		before := treeSnapshot(t, base)
		errs := map[string]error{}
		_, _, errs["SessionStore.Create"] = s.Create(sessions.Session{ID: id, Source: "test"})
		_, _, errs["SessionStore.CreateWith"] = s.CreateWith(sessions.Session{ID: id, Source: "test"}, []sessions.Message{textMsg("user", "hi")})
		_, errs["TaskStore.Create"] = ts.Create(tasks.Task{ID: id, Command: []string{"true"}})
		_, errs["Board.Create"] = b.Create(kanban.Task{ID: id, Title: "card"})
		for op, err := range errs {
			if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), id) {
				t.Errorf("%s(%q) = %v, want fsstore.ErrInvalid naming the id", op, id, err)
			}
		}
		if after := treeSnapshot(t, base); !reflect.DeepEqual(before, after) {
			t.Errorf("%q: files written: %v", id, after)
		}
		if _, err := s.Get(id); !errors.Is(err, fsstore.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want fsstore.ErrNotFound: the id is still read", id, err)
		}
	}
}
