package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

func skillMD(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body
}

func TestParse(t *testing.T) {
	meta, body, err := Parse([]byte("---\nname: pdf\ndescription: Fill PDF forms. Use for PDFs.\nallowed-tools: Read, Bash\nlicense: Complete terms in LICENSE.txt\n---\n\n# PDF\n"))
	if err != nil || meta.Name != "pdf" || meta.Description != "Fill PDF forms. Use for PDFs." || strings.Join(meta.AllowedTools, ",") != "Read,Bash" || body != "\n# PDF\n" {
		t.Fatalf("Parse: %+v %q %v", meta, body, err)
	}
	if meta, _, err := Parse([]byte("---\r\nname: x\r\ndescription: d\r\nallowed-tools:\r\n  - Read\r\n---\r\n")); err != nil || strings.Join(meta.AllowedTools, ",") != "Read" {
		t.Errorf("CRLF and a list: %+v %v", meta, err)
	}
	for _, c := range []struct{ in, want string }{
		{"# no frontmatter\n", "SKILL.md line 1: a SKILL.md starts with a line of ---"},
		{"---\nname: x\ndescription: d\n", "SKILL.md line 1: the frontmatter has no closing line"},
		{"---\nname: x\ndescription: d\nc: : :\n---\n", "SKILL.md line 4: frontmatter is not YAML: mapping values are not allowed"},
		{"---\ndescription: d\n---\n", "SKILL.md line 1: the frontmatter needs a name"},
		{"---\nname: x\n---\n", "SKILL.md line 1: the frontmatter needs a description"},
		{"---\nlicense: MIT\nname: ../etc\ndescription: d\n---\n", "SKILL.md line 3: skill name \"../etc\""},
		{"---\nname: .hidden\ndescription: d\n---\n", "SKILL.md line 2: skill name \".hidden\" starts with '.'"},
		{"---\nname: x\ndescription: d\nallowed-tools: 3\n---\n", "SKILL.md line 4: allowed-tools is a list"},
		{"---\nname: x\ndescription: " + strings.Repeat("d", 1025) + "\n---\n", "SKILL.md line 3: the description is 1025 characters"},
		{"---\nname: x\ndescription: d\n---\n\xff", "SKILL.md line 1: not UTF-8"},
	} {
		_, _, err := Parse([]byte(c.in))
		if !errors.Is(err, fsstore.ErrInvalid) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Parse(%.40q): %v, want %q", c.in, err, c.want)
		}
	}
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s := NewStore(filepath.Join(t.TempDir(), "profile"), 5*time.Second, func(msg string) { t.Logf("warning: %s", msg) })
	s.Now = storetest.NewClock().Now
	return s
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	storetest.MustWrite(t, path, data)
}

var agent = Who{By: ByAgent, SessionID: "20261121_020734_a1b2c3"}

// TestAgentSkillPatchedAndReverted: the agent makes a skill, patches it,
// deletes it; each change is in the log and each is taken back by a
// revert, in turn.
func TestAgentSkillPatchedAndReverted(t *testing.T) {
	s := newStore(t)
	v1 := skillMD("deploy", "How to deploy. Use when asked to ship.", "Run make deploy.\n")
	if _, err := s.Create("deploy", v1, agent); err != nil {
		t.Fatal(err)
	}
	if o := s.Origin("deploy"); o != ByAgent {
		t.Errorf("origin %s", o)
	}
	if _, err := s.Create("deploy", v1, agent); !errors.Is(err, fsstore.ErrRefused) {
		t.Errorf("create again: %v", err)
	}
	c, err := s.Patch("deploy", "", "make deploy", "make deploy ENV=prod", agent)
	if err != nil || c.Seq != 2 {
		t.Fatalf("patch: %+v %v", c, err)
	}
	if o := s.Origin("deploy"); o != ByAgent {
		t.Errorf("origin after the agent's patch: %s", o)
	}
	if _, err := s.Patch("deploy", "notes/env.md", "", "prod is eu-west\n", agent); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Patch("deploy", "", "name: deploy", "name: other", agent); !errors.Is(err, fsstore.ErrInvalid) {
		t.Errorf("a patch renaming the skill: %v", err)
	}
	for _, bad := range []string{"../x", ".hermes-skill.json", "/etc/passwd", "a/.git/config"} {
		if _, err := s.Patch("deploy", bad, "", "x", agent); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("file %q: %v", bad, err)
		}
	}
	if _, err := s.Revert(2, Who{By: ByUser}); err != nil {
		t.Fatal(err)
	}
	if _, body, _ := s.Get("deploy"); body != "Run make deploy.\n" {
		t.Errorf("after reverting the patch: %q", body)
	}
	if _, err := s.Revert(3, Who{By: ByUser}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(s.Path("deploy"), "notes", "env.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file a reverted patch made is there: %v", err)
	}
	if _, err := s.Revert(2, Who{By: ByUser}); !errors.Is(err, fsstore.ErrRefused) {
		t.Errorf("reverting a patch twice: %v", err)
	}
	d, err := s.Delete("deploy", agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get("deploy"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if _, err := s.Revert(d.Seq, Who{By: ByUser}); err != nil {
		t.Fatal(err)
	}
	if sk, body, err := s.Get("deploy"); err != nil || body != "Run make deploy.\n" || sk.Origin != ByAgent {
		t.Errorf("restored: %+v %q %v", sk, body, err)
	}
	var ops []string
	s.Log(func(c Change) { ops = append(ops, c.Op) })
	if strings.Join(ops, ",") != "create,patch,patch,patch,patch,delete,restore" {
		t.Errorf("log %q", ops)
	}
	if f, err := s.Check(false, t.TempDir()); err != nil || len(f) != 0 {
		t.Errorf("check %+v %v", f, err)
	}
}

// TestUserSkill: a skill added by the user, or an agent's skill the user
// edited, is the user's.
func TestUserSkill(t *testing.T) {
	s := newStore(t)
	src := filepath.Join(t.TempDir(), "review")
	mustWrite(t, filepath.Join(src, FileName), []byte(skillMD("review", "Review a change.", "Look.\n")))
	os.MkdirAll(filepath.Join(src, "examples"), 0o755)
	mustWrite(t, filepath.Join(src, "examples", "a.md"), []byte("example\n"))
	os.Symlink("/etc/passwd", filepath.Join(src, "link"))
	if _, err := s.Add(src, Who{By: ByUser}); err != nil {
		t.Fatal(err)
	}
	if o := s.Origin("review"); o != ByUser {
		t.Errorf("origin %s", o)
	}
	if got := string(storetest.MustRead(t, filepath.Join(s.Path("review"), "examples", "a.md"))); got != "example\n" {
		t.Errorf("file beside it %q", got)
	}
	if _, err := os.Lstat(filepath.Join(s.Path("review"), "link")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a symlink was copied")
	}
	if _, err := s.Add(src, Who{By: ByUser}); !errors.Is(err, fsstore.ErrRefused) {
		t.Errorf("add again: %v", err)
	}
	s.Create("mine", skillMD("mine", "d", "x\n"), agent)
	mustWrite(t, filepath.Join(s.Path("mine"), FileName), []byte(skillMD("mine", "d", "edited by hand\n")))
	if o := s.Origin("mine"); o != ByUser {
		t.Errorf("an agent's skill edited by hand: origin %s", o)
	}
}

// TestImport: both layouts, a skill the profile has kept as it is, a
// malformed one reported with its line.
func TestImport(t *testing.T) {
	s := newStore(t)
	src := t.TempDir()
	mustWrite(t, filepath.Join(src, "one", FileName), []byte(skillMD("one", "first", "1\n")))
	mustWrite(t, filepath.Join(src, "devops", "two", FileName), []byte(skillMD("two", "second", "2\n")))
	mustWrite(t, filepath.Join(src, "bad", FileName), []byte("no frontmatter\n"))
	s.Create("one", skillMD("one", "mine", "kept\n"), agent)
	got, err := s.Import(src, Who{By: ByUser})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, im := range got {
		status[im.Name] = im.Status
		if im.Status == "invalid" && !strings.Contains(im.Reason, "line 1") {
			t.Errorf("reason %q", im.Reason)
		}
	}
	if status["one"] != "exists" || status["two"] != "added" || status["bad"] != "invalid" || len(got) != 3 {
		t.Errorf("import %+v", got)
	}
	if _, body, _ := s.Get("one"); body != "kept\n" {
		t.Errorf("an import replaced a skill: %q", body)
	}
}

func TestCheckMalformed(t *testing.T) {
	s := newStore(t)
	s.Create("x", skillMD("x", "d", "b\n"), agent)
	mustWrite(t, filepath.Join(s.Path("x"), FileName), []byte("---\nname: x\n---\n"))
	mustWrite(t, filepath.Join(s.Path("x"), "data.json"), []byte("not json"))
	f, err := s.Check(true, t.TempDir())
	if err != nil || len(f) != 1 || !strings.Contains(f[0].What, "needs a description") || f[0].Repaired {
		t.Fatalf("check %+v %v", f, err)
	}
	if got := string(storetest.MustRead(t, filepath.Join(s.Path("x"), "data.json"))); got != "not json" {
		t.Errorf("a skill's file was touched")
	}
}

// TestFIFORefused: a SKILL.md that is a FIFO is refused at once, never
// waited on.
func TestFIFORefused(t *testing.T) {
	s := newStore(t)
	if err := os.MkdirAll(s.Path("x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(s.Path("x"), FileName), 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := s.Get("x"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("reading a FIFO SKILL.md still waits for a writer")
	}
}
