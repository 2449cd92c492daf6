package agent

import (
	"context"
	"io/fs"
	"path/filepath"
)

// tree walks a directory as search_files and find_files see it: in
// lexical order, without following symbolic links, skipping .git and what
// the .gitignore files of the directory, of those below it and of those
// above it up to the repository root (the nearest .git) ignore. Below a
// root (Env.Root) nothing above the root is looked at: its top is the
// highest repository root the walk can find.
type tree struct {
	fsys fileSys
	root string // its name in fsys
	// skipped counts the directories and .gitignore files that could not
	// be read.
	skipped int
}

// walk calls visit for each regular file and directory below the root
// (not the root itself), with its path relative to the root,
// slash-separated. visit returning false, or ctx ending, stops the walk.
func (t *tree) walk(ctx context.Context, visit func(rel string, d fs.DirEntry) bool) {
	t.dir(ctx, t.root, "", t.above(ctx), visit)
}

// above reads the .gitignore files from the repository root down to the
// root's parent; none when the root is in no repository.
func (t *tree) above(ctx context.Context) []*ignoreRules {
	var dirs []string
	for dir := t.root; ; {
		if _, err := t.fsys.Lstat(filepath.Join(dir, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil // no repository
		}
		dir = parent
		dirs = append(dirs, dir)
	}
	var rules []*ignoreRules
	for i := len(dirs) - 1; i >= 0; i-- {
		below, err := filepath.Rel(dirs[i], t.root)
		if err != nil {
			continue
		}
		r, err := readIgnore(ctx, t.fsys, dirs[i], "", filepath.ToSlash(below)+"/")
		if err != nil {
			t.skipped++
		}
		if r != nil {
			rules = append(rules, r)
		}
	}
	return rules
}

func (t *tree) dir(ctx context.Context, abs, rel string, rules []*ignoreRules, visit func(string, fs.DirEntry) bool) bool {
	r, err := readIgnore(ctx, t.fsys, abs, rel, "")
	if err != nil {
		t.skipped++
	}
	if r != nil {
		rules = append(rules[:len(rules):len(rules)], r)
	}
	entries, err := readDir(t.fsys, abs)
	if err != nil {
		t.skipped++
	}
	for _, e := range entries {
		if ctx.Err() != nil {
			return false
		}
		name := e.Name()
		if name == ".git" {
			continue
		}
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		isDir := e.IsDir()
		if ignored(rules, childRel, isDir) {
			continue
		}
		switch {
		case isDir:
			if !visit(childRel, e) || !t.dir(ctx, filepath.Join(abs, name), childRel, rules, visit) {
				return false
			}
		case e.Type().IsRegular():
			if !visit(childRel, e) {
				return false
			}
		}
	}
	return true
}

// ignored asks the nearest .gitignore first: the deepest file with a rule
// for rel decides.
func ignored(rules []*ignoreRules, rel string, isDir bool) bool {
	for i := len(rules) - 1; i >= 0; i-- {
		if ign, ok := rules[i].match(rel, isDir); ok {
			return ign
		}
	}
	return false
}
