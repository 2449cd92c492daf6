package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/skills"
)

// Names of the skills tools, which a front end offers beside the general
// tools.
const (
	SkillViewToolName   = "skill_view"
	SkillManageToolName = "skill_manage"
)

// Bounds of the skills note: the catalog a session starts with, and each
// description in it.
const (
	MaxSkillsNote       = 8 << 10
	maxNoteDescription  = 300
	skillsHeader        = "Skills (name: what it is for"
	skillHeadLen        = 8 << 10
	projectSkillsHermes = ".hermes/skills"
	projectSkillsClaude = ".claude/skills"
)

// Skills finds the skills a session may load: the profile's (Store), then
// the project's, read-only: .hermes/skills and .claude/skills at the root
// of the repository holding the working directory (the working directory
// outside one). A name found twice is the first one's. Every skill file
// is read through the one reader.
type Skills struct {
	Store *skills.Store
	// Warn reports a skill left out (its SKILL.md does not parse or
	// cannot be read).
	Warn func(string)
}

// SkillRef is one skill of a catalog.
type SkillRef struct {
	skills.Meta
	Dir    string `json:"dir"`
	Source string `json:"source"`
}

// Dirs are the directories whose subdirectories are skills, in the order
// a name is looked up.
func (sk *Skills) Dirs(cwd string) []string {
	var dirs []string
	if sk.Store != nil {
		dirs = append(dirs, sk.Store.Dir)
	}
	root := projectRoot(cwd)
	return append(dirs, filepath.Join(root, projectSkillsHermes), filepath.Join(root, projectSkillsClaude))
}

// projectRoot is the nearest directory at or above cwd holding a .git,
// else cwd.
func projectRoot(cwd string) string {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	for dir := cwd; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return cwd
		}
		dir = parent
	}
}

// Catalog returns every skill for cwd, each name once, in Dirs' order
// and name order within each.
//
// The frontmatter of a SKILL.md that has not changed since it was last
// read comes from the profile's index (skills.Index), so that a session's
// start with hundreds of skills reads and parses none of them.
func (sk *Skills) Catalog(ctx context.Context, cwd string) []SkillRef {
	// The index is read while the directories are listed.
	var loaded chan *skills.Index
	if sk.Store != nil {
		loaded = make(chan *skills.Index, 1)
		go func() { loaded <- skills.LoadIndex(sk.Store.Dir) }()
	}
	dirs := sk.Dirs(cwd)
	founds := make([][]skills.Found, len(dirs))
	for i, dir := range dirs {
		found, err := skills.Scan(dir)
		if err != nil {
			sk.warn(fmt.Sprintf("skills of %s left out: %v", dir, err))
		}
		founds[i] = found
	}
	var idx *skills.Index
	if loaded != nil {
		idx = <-loaded
	}
	var out []SkillRef
	seen := map[string]bool{}
	read := map[string]bool{}
	for i, found := range founds {
		source := skills.SourceProject
		if i == 0 && sk.Store != nil {
			source = skills.SourceProfile
		}
		for _, f := range found {
			read[f.Path] = true
			if seen[f.Name] {
				continue
			}
			meta, ok := skills.Meta{}, false
			if idx != nil {
				meta, ok = idx.Lookup(f.Path, f.Stamp)
			}
			if !ok {
				var err error
				meta, err = readSkillHead(ctx, f.Path)
				if err == nil && meta.Name != f.Name {
					err = fmt.Errorf("its name is %q, not its directory's", meta.Name)
				}
				if err != nil {
					sk.warn(fmt.Sprintf("skill %s left out: %v", filepath.Dir(f.Path), err))
					continue
				}
				if idx != nil {
					idx.Put(f.Path, f.Stamp, meta)
				}
			}
			seen[f.Name] = true
			out = append(out, SkillRef{Meta: meta, Dir: filepath.Dir(f.Path), Source: source})
		}
	}
	if idx != nil {
		idx.Keep(dirs, read)
		idx.Save()
	}
	return out
}

func (sk *Skills) warn(msg string) {
	if sk.Warn != nil {
		sk.Warn(msg)
	}
}

// Find returns skill name for cwd, or fs.ErrNotExist.
func (sk *Skills) Find(cwd, name string) (SkillRef, error) {
	if err := skills.CheckName(name); err != nil {
		return SkillRef{}, err
	}
	for i, dir := range sk.Dirs(cwd) {
		if fi, err := os.Lstat(filepath.Join(dir, name, skills.FileName)); err == nil && fi.Mode().IsRegular() {
			source := skills.SourceProject
			if i == 0 && sk.Store != nil {
				source = skills.SourceProfile
			}
			return SkillRef{Meta: skills.Meta{Name: name}, Dir: filepath.Join(dir, name), Source: source}, nil
		}
	}
	return SkillRef{}, fmt.Errorf("skill %s: %w (skill_view with no name lists the skills)", name, fs.ErrNotExist)
}

// readSkillHead reads the frontmatter of a SKILL.md, from its first
// bytes, through the one reader.
func readSkillHead(ctx context.Context, path string) (skills.Meta, error) {
	f, err := openRegular(ctx, hostFiles{}, path, path, 0)
	if err != nil {
		return skills.Meta{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, skillHeadLen))
	if err != nil {
		return skills.Meta{}, err
	}
	return skills.ParseHead(b)
}

// Note returns the system message, marked as hermes's note, that lists
// the skills of a session working in cwd, each with its description
// (cut to 300 characters), the whole cut to MaxSkillsNote: stored once
// at a session's start, like the instructions. ok is false when there
// are none.
func (sk *Skills) Note(ctx context.Context, cwd string) (sessions.Message, bool) {
	refs := sk.Catalog(ctx, cwd)
	if len(refs) == 0 {
		return sessions.Message{}, false
	}
	var b strings.Builder
	b.WriteString(skillsHeader + "). Before a task one of them fits, load it with skill_view (name), and the files it names with skill_view (name, file):\n")
	for i, r := range refs {
		line := fmt.Sprintf("- %s: %s\n", r.Name, clipRunes(strings.Join(strings.Fields(r.Description), " "), maxNoteDescription))
		if b.Len()+len(line) > MaxSkillsNote-100 {
			fmt.Fprintf(&b, "[… %d more skills: skill_view with no name lists them all]\n", len(refs)-i)
			break
		}
		b.WriteString(line)
	}
	return note(sessions.Message{Role: "system", Content: sessions.TextContent(strings.TrimRight(b.String(), "\n"))}), true
}

// IsSkills reports whether m is the note Skills.Note makes.
func IsSkills(m sessions.Message) bool {
	return m.Role == "system" && IsNote(m) && strings.HasPrefix(m.Text(), skillsHeader)
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// skillViewTool loads a skill: its SKILL.md and the names of the files
// beside it, or one of those files; with no name, the whole catalog.
type skillViewTool struct{}

func (skillViewTool) Name() string { return SkillViewToolName }

func (skillViewTool) Schema() json.RawMessage {
	return schema(SkillViewToolName,
		"Load a skill: its instructions (SKILL.md) and the list of files beside it; with file, one of those files. With no name, list every skill with its description.",
		map[string]any{
			"name": prop("string", "the skill's name, as the skills list gives it"),
			"file": prop("string", "a file of the skill, relative to its directory (default: SKILL.md)"),
		})
}

func (skillViewTool) NeedsApproval(json.RawMessage) bool { return false }

func (skillViewTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Name string `json:"name"`
		File string `json:"file"`
	}
	if err := decodeArgs(SkillViewToolName, raw, &args); err != nil {
		return "", err
	}
	sk := env.Skills
	if sk == nil {
		return "", errors.New("skills are off for this session")
	}
	limit := max(env.MaxOutput, 256)
	if args.Name == "" {
		var b strings.Builder
		for _, r := range sk.Catalog(ctx, env.Cwd) {
			fmt.Fprintf(&b, "%s (%s): %s\n", r.Name, r.Source, strings.Join(strings.Fields(r.Description), " "))
		}
		if b.Len() == 0 {
			return "no skills", nil
		}
		return cut(b.String(), limit), nil
	}
	ref, err := sk.Find(env.Cwd, args.Name)
	if err != nil {
		return "", err
	}
	file := args.File
	if file == "" {
		file = skills.FileName
	}
	if !filepath.IsLocal(file) || slices.ContainsFunc(strings.Split(filepath.ToSlash(file), "/"), func(p string) bool { return strings.HasPrefix(p, ".") }) {
		return "", fmt.Errorf("skill_view: file %q is not a file of the skill (a relative path, no part starting with '.')", args.File)
	}
	root, err := os.OpenRoot(ref.Dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	fsys := rootFiles{root: root, dir: ref.Dir}
	b, _, err := readRegular(ctx, fsys, file, file, 0, skills.MaxSkillFile, func(size int64) error {
		return fmt.Errorf("skill_view: %s of skill %s is %d bytes; the limit is %d", file, ref.Name, size, skills.MaxSkillFile)
	})
	if err != nil {
		return "", err
	}
	text := strings.ToValidUTF8(string(b), "\uFFFD")
	if file == skills.FileName {
		if files := skillFiles(ref.Dir); len(files) > 0 {
			text += "\n\nFiles of this skill (skill_view with file): " + strings.Join(files, ", ")
		}
	}
	return cut(text, limit), nil
}

// skillFiles lists the files of a skill beside its SKILL.md (at most 200),
// without dot files.
func skillFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || len(out) >= 200 {
			return filepath.SkipDir
		}
		if path != dir && strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if rel, _ := filepath.Rel(dir, path); e.Type().IsRegular() && rel != skills.FileName {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// skillManageTool lets the agent write skills of its own in the profile.
type skillManageTool struct{}

func (skillManageTool) Name() string { return SkillManageToolName }

func (skillManageTool) Schema() json.RawMessage {
	return schema(SkillManageToolName,
		"Write your own skills, kept in the profile for later sessions. create makes skill name from content, a whole SKILL.md (frontmatter with name and description, then instructions); "+
			"patch replaces old_string (found exactly once) with new_string in SKILL.md or in file; write_file writes content to file beside SKILL.md; delete removes the skill (kept aside; the user can bring it back). "+
			"A skill the user wrote or installed changes only with the user's approval. Project skills cannot be changed.",
		map[string]any{
			"action":     map[string]any{"type": "string", "enum": []string{"create", "patch", "write_file", "delete"}},
			"name":       prop("string", "the skill's name: lowercase letters, digits and hyphens"),
			"content":    prop("string", "create: the whole SKILL.md; write_file: the file's text"),
			"old_string": prop("string", "patch: the exact text to replace"),
			"new_string": prop("string", "patch: the text to put in its place"),
			"file":       prop("string", "patch, write_file: a file of the skill, relative to its directory (default SKILL.md)"),
		}, "action", "name")
}

func (skillManageTool) NeedsApproval(json.RawMessage) bool { return false }

// NeedsApprovalIn asks for approval before a change of a skill the user
// wrote or installed.
func (skillManageTool) NeedsApprovalIn(env *Env, raw json.RawMessage) bool {
	var args struct {
		Action string `json:"action"`
		Name   string `json:"name"`
	}
	if json.Unmarshal(raw, &args) != nil || args.Action == "create" || env.Skills == nil || env.Skills.Store == nil {
		return false
	}
	if skills.CheckName(args.Name) != nil {
		return false
	}
	if _, err := os.Lstat(env.Skills.Store.Path(args.Name)); err != nil {
		return false
	}
	return env.Skills.Store.Origin(args.Name) == skills.ByUser
}

func (skillManageTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Action    string `json:"action"`
		Name      string `json:"name"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		File      string `json:"file"`
	}
	if err := decodeArgs(SkillManageToolName, raw, &args); err != nil {
		return "", err
	}
	if env.Skills == nil || env.Skills.Store == nil {
		return "", errors.New("skills are off for this session")
	}
	st := env.Skills.Store
	who := skills.Who{By: skills.ByAgent, SessionID: env.SessionID}
	if args.Action != "create" {
		if _, err := os.Lstat(st.Path(args.Name)); err != nil && skills.CheckName(args.Name) == nil {
			if ref, ferr := env.Skills.Find(env.Cwd, args.Name); ferr == nil && ref.Source == skills.SourceProject {
				return "", fmt.Errorf("skill_manage: skill %s is a project skill (%s), read-only", args.Name, ref.Dir)
			}
		}
	}
	var c skills.Change
	var err error
	switch args.Action {
	case "create":
		c, err = st.Create(args.Name, args.Content, who)
	case "patch":
		if args.OldString == "" {
			return "", errors.New("skill_manage: patch needs old_string (write_file replaces a whole file)")
		}
		c, err = st.Patch(args.Name, args.File, args.OldString, args.NewString, who)
	case "write_file":
		if args.File == "" || args.File == skills.FileName {
			return "", errors.New("skill_manage: write_file needs a file beside SKILL.md (patch changes SKILL.md)")
		}
		c, err = st.Patch(args.Name, args.File, "", args.Content, who)
	case "delete":
		c, err = st.Delete(args.Name, who)
	default:
		return "", fmt.Errorf("skill_manage: unknown action %q (use create, patch, write_file or delete)", args.Action)
	}
	if err != nil {
		return "", fmt.Errorf("skill_manage: %w", err)
	}
	return fmt.Sprintf("skill %s: %s done (change %d; the user can revert it: hermes skills revert %d)", c.Name, args.Action, c.Seq, c.Seq), nil
}

// envApprover is a Tool whose need for approval depends on what the call
// would change, not only on its arguments.
type envApprover interface {
	NeedsApprovalIn(env *Env, args json.RawMessage) bool
}

// needsApproval asks tool, with env when it can use it.
func needsApproval(tool Tool, env *Env, args json.RawMessage) bool {
	if a, ok := tool.(envApprover); ok {
		return a.NeedsApprovalIn(env, args)
	}
	return tool.NeedsApproval(args)
}
