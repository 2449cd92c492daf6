package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/skills"
)

func writeSkill(t *testing.T, dir, name, desc, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n%s", name, desc, body)
	if err := os.WriteFile(filepath.Join(dir, name, skills.FileName), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSkillsNoteBounded: the note lists names and descriptions, never a
// body, cut to MaxSkillsNote with a line saying how many were left out;
// a project skill of a name the profile has is the profile's.
func TestSkillsNoteBounded(t *testing.T) {
	t.Parallel()
	st := skills.NewStore(filepath.Join(t.TempDir(), "profile"), 5*time.Second, nil)
	for i := range 300 {
		writeSkill(t, st.Dir, fmt.Sprintf("skill-%03d", i), strings.Repeat("d", 400), "BODY\n")
	}
	repo := t.TempDir()
	os.Mkdir(filepath.Join(repo, ".git"), 0o700)
	writeSkill(t, filepath.Join(repo, ".claude", "skills"), "skill-000", "the project's", "x\n")
	writeSkill(t, filepath.Join(repo, ".hermes", "skills"), "aaa-project", "a project skill", "x\n")
	var warned []string
	sk := &Skills{Store: st, Warn: func(s string) { warned = append(warned, s) }}
	m, ok := sk.Note(context.Background(), repo)
	text := m.Text()
	if !ok || !IsSkills(m) || len(text) > MaxSkillsNote || strings.Contains(text, "BODY") {
		t.Fatalf("note of %d bytes (ok %v):\n%.300s", len(text), ok, text)
	}
	if !strings.Contains(text, "- skill-000: "+strings.Repeat("d", maxNoteDescription)+"…\n") || !strings.Contains(text, "more skills: skill_view with no name lists them all]") {
		t.Errorf("note:\n%.600s", text)
	}
	refs := sk.Catalog(context.Background(), repo)
	if len(refs) != 301 || refs[0].Name != "skill-000" || refs[0].Source != skills.SourceProfile || refs[300].Name != "aaa-project" {
		t.Errorf("catalog of %d, first %+v", len(refs), refs[0])
	}
	if len(warned) > 0 {
		t.Errorf("warnings %q", warned)
	}
}

// TestSkillView: a skill's body and files, a file, a path out of the
// skill (by name or by a symbolic link) refused.
func TestSkillView(t *testing.T) {
	t.Parallel()
	st := skills.NewStore(filepath.Join(t.TempDir(), "profile"), 5*time.Second, nil)
	writeSkill(t, st.Dir, "pdf", "PDF forms", "Use forms.md.\n")
	os.WriteFile(filepath.Join(st.Dir, "pdf", "forms.md"), []byte("fill them\n"), 0o600)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret\n"), 0o600)
	os.Symlink(secret, filepath.Join(st.Dir, "pdf", "link.md"))
	env := &Env{Skills: &Skills{Store: st}, Cwd: t.TempDir(), MaxOutput: DefaultMaxOutput}
	run := func(args string) (string, error) {
		return skillViewTool{}.Run(context.Background(), env, json.RawMessage(args))
	}
	if out, err := run(`{"name":"pdf"}`); err != nil || !strings.HasSuffix(out, "Use forms.md.\n\n\nFiles of this skill (skill_view with file): forms.md") {
		t.Errorf("view: %q %v", out, err)
	}
	if out, err := run(`{"name":"pdf","file":"forms.md"}`); err != nil || out != "fill them\n" {
		t.Errorf("file: %q %v", out, err)
	}
	for _, bad := range []string{`{"name":"pdf","file":"link.md"}`, `{"name":"pdf","file":"../pdf/../../x"}`, `{"name":"../x"}`, `{"name":"nope"}`} {
		if out, err := run(bad); err == nil {
			t.Errorf("%s: %q", bad, out)
		}
	}
	if out, err := run(`{}`); err != nil || !strings.HasPrefix(out, "pdf (profile): PDF forms") {
		t.Errorf("list: %q %v", out, err)
	}
}

// TestSkillManageApproval: creating, and changing the agent's own skill,
// need no approval; changing the user's does.
func TestSkillManageApproval(t *testing.T) {
	t.Parallel()
	st := skills.NewStore(filepath.Join(t.TempDir(), "profile"), 5*time.Second, nil)
	writeSkill(t, st.Dir, "users", "the user's", "x\n")
	if _, err := st.Create("mine", "---\nname: mine\ndescription: d\n---\nx\n", skills.Who{By: skills.ByAgent}); err != nil {
		t.Fatal(err)
	}
	env := &Env{Skills: &Skills{Store: st}}
	for args, want := range map[string]bool{
		`{"action":"create","name":"new"}`:       false,
		`{"action":"patch","name":"mine"}`:       false,
		`{"action":"delete","name":"mine"}`:      false,
		`{"action":"patch","name":"users"}`:      true,
		`{"action":"delete","name":"users"}`:     true,
		`{"action":"write_file","name":"users"}`: true,
	} {
		if got := needsApproval(skillManageTool{}, env, json.RawMessage(args)); got != want {
			t.Errorf("%s: approval %v, want %v", args, got, want)
		}
	}
}

// TestCatalogIndex: the catalog's index gives a SKILL.md's frontmatter
// only while the file is as it was read; an edited skill is read again,
// a removed one leaves the index, and a damaged index is an empty one.
func TestCatalogIndex(t *testing.T) {
	t.Parallel()
	st := skills.NewStore(filepath.Join(t.TempDir(), "profile"), 5*time.Second, nil)
	writeSkill(t, st.Dir, "a", "first words", "x\n")
	writeSkill(t, st.Dir, "b", "other", "x\n")
	earlier := time.Now().Add(-time.Hour) // older than skills.RacyWindow
	for _, name := range []string{"a", "b"} {
		os.Chtimes(filepath.Join(st.Dir, name, skills.FileName), earlier, earlier)
	}
	sk := &Skills{Store: st, Warn: func(s string) { t.Error(s) }}
	cwd := t.TempDir()
	desc := func() string {
		var out []string
		for _, r := range sk.Catalog(context.Background(), cwd) {
			out = append(out, r.Name+"="+r.Description)
		}
		return strings.Join(out, ",")
	}
	if got := desc(); got != "a=first words,b=other" {
		t.Fatalf("catalog %s", got)
	}
	if _, err := os.Stat(filepath.Join(st.Dir, ".index.cache")); err != nil {
		t.Fatalf("no index: %v", err)
	}
	writeSkill(t, st.Dir, "a", "later words", "x\n")
	later := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(st.Dir, "a", skills.FileName), later, later)
	os.RemoveAll(filepath.Join(st.Dir, "b"))
	if got := desc(); got != "a=later words" {
		t.Errorf("after an edit and a removal: %s", got)
	}
	os.WriteFile(filepath.Join(st.Dir, ".index.cache"), []byte("{garbage"), 0o600)
	if got := desc(); got != "a=later words" {
		t.Errorf("with a damaged index: %s", got)
	}
}

// TestCatalogIndexSameTick: a SKILL.md rewritten in place to the same
// size within the clock tick of its last write (a coarse file clock gives
// both writes one modification time) is read again, never taken from the
// index: the index holds no file written within the last moments.
func TestCatalogIndexSameTick(t *testing.T) {
	st := skills.NewStore(filepath.Join(t.TempDir(), "profile"), 5*time.Second, nil)
	sk := &Skills{Store: st, Warn: func(s string) { t.Error(s) }}
	cwd := t.TempDir()
	path := filepath.Join(st.Dir, "a", skills.FileName)
	tick := time.Now()
	writeSkill(t, st.Dir, "a", "first words", "x\n")
	os.Chtimes(path, tick, tick)
	if got := sk.Catalog(context.Background(), cwd); len(got) != 1 || got[0].Description != "first words" {
		t.Fatalf("catalog %+v", got)
	}
	if err := os.WriteFile(path, []byte("---\nname: a\ndescription: other words\n---\nx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, tick, tick)
	if got := sk.Catalog(context.Background(), cwd); len(got) != 1 || got[0].Description != "other words" {
		t.Errorf("after a same-size edit in the same tick: %+v", got)
	}
}

// TestOpeningWarnings: the memory's snapshot is made beside the list of
// skills, yet every warning of both (a torn tail of the memory's log, a
// SKILL.md that does not parse) reaches the one Warn they share, never
// from two goroutines at once (go test -race), and the notes are there.
func TestOpeningWarnings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profile")
	var warnings []string
	warn := func(msg string) { warnings = append(warnings, msg) }
	mem := memory.NewStore(dir, 5*time.Second, warn)
	if _, err := mem.Add(memory.Memory, "one fact", memory.Who{By: memory.ByUser}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(mem.LogPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":2,"op":"ad`)
	f.Close()
	st := skills.NewStore(dir, 5*time.Second, nil)
	writeSkill(t, st.Dir, "good", "fine", "x\n")
	if err := os.MkdirAll(filepath.Join(st.Dir, "bad"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(st.Dir, "bad", skills.FileName), []byte("no frontmatter\n"), 0o600)
	e := &Engine{Memory: mem, Skills: &Skills{Store: st, Warn: warn}, Warn: warn}
	msgs := e.Opening(context.Background(), t.TempDir(), nil)
	if len(msgs) != 2 || !IsMemory(msgs[0]) || !strings.Contains(msgs[1].Text(), "- good: fine") {
		t.Errorf("notes %+v", msgs)
	}
	all := strings.Join(warnings, "\n")
	if !strings.Contains(all, "log.jsonl") || !strings.Contains(all, "skill "+filepath.Join(st.Dir, "bad")+" left out") {
		t.Errorf("warnings %q", warnings)
	}
}
