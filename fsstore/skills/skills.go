package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Where a skill comes from (Skill.Source), and who made a profile skill
// (Skill.Origin, Change.By).
const (
	SourceProfile = "profile"
	SourceProject = "project"
	ByAgent       = "agent"
	ByUser        = "user"
)

// Operations of a change.
const (
	OpCreate  = "create"  // the agent made a skill (skill_manage)
	OpPatch   = "patch"   // one file of a skill changed (skill_manage)
	OpDelete  = "delete"  // a skill moved aside (skill_manage, skills remove)
	OpAdd     = "add"     // a skill copied in (skills add, skills import)
	OpRestore = "restore" // a skill moved aside brought back (a revert)
)

// markerName is the file, in a skill made by the agent, that says so:
// who, in which session, and the digest of the SKILL.md hermes last wrote.
// A skill without one, or whose SKILL.md no longer has that digest
// (someone edited it), is the user's.
const markerName = ".hermes-skill.json"

type marker struct {
	CreatedBy string `json:"created_by"`
	SessionID string `json:"session_id,omitempty"`
	SHA256    string `json:"sha256"`
}

// Skill is one skill as a listing shows it.
type Skill struct {
	Meta
	Dir    string `json:"dir"`
	Source string `json:"source"`
	Origin string `json:"origin,omitempty"`
}

// Change is one line of the log. A patch holds the file's text before
// (absent: the file was made) and after; a delete the name of the copy
// it moved aside; an add the path it was copied from.
type Change struct {
	Seq       int64        `json:"seq"`
	TS        fsstore.Time `json:"ts"`
	Op        string       `json:"op"`
	Name      string       `json:"name"`
	By        string       `json:"by"`
	SessionID string       `json:"session_id,omitempty"`
	File      string       `json:"file,omitempty"`
	Before    *string      `json:"before,omitempty"`
	After     *string      `json:"after,omitempty"`
	Aside     string       `json:"aside,omitempty"`
	From      string       `json:"from,omitempty"`
	Reverts   int64        `json:"reverts,omitempty"`
}

// Who makes a change.
type Who struct {
	By        string
	SessionID string
}

// Store keeps a profile's skills in Dir:
//
//	<name>/SKILL.md     a skill, with any files beside it
//	<name>/.hermes-skill.json   in a skill the agent made: who, and the
//	                    digest of the SKILL.md it wrote
//	.log.jsonl          every change, append-only
//	.lock               the lock every change holds
//	.removed/<name>.<unix>/   a skill deleted or removed, kept
type Store struct {
	Dir         string
	LockTimeout time.Duration
	Cancel      <-chan struct{}
	Now         func() time.Time
	Warn        func(string)
}

// NewStore returns the skills store of the profile whose directory is
// profileDir. Nothing is created until the first change.
func NewStore(profileDir string, lockTimeout time.Duration, warn func(string)) *Store {
	return &Store{Dir: filepath.Join(profileDir, "skills"), LockTimeout: lockTimeout, Now: time.Now, Warn: warn}
}

// LogPath is the path of the log.
func (s *Store) LogPath() string  { return filepath.Join(s.Dir, ".log.jsonl") }
func (s *Store) lockPath() string { return filepath.Join(s.Dir, ".lock") }
func (s *Store) removedDir() string {
	return filepath.Join(s.Dir, ".removed")
}

// Path is the directory of skill name.
func (s *Store) Path(name string) string { return filepath.Join(s.Dir, name) }

func (s *Store) warn(msg string) {
	if s.Warn != nil {
		s.Warn(msg)
	}
}

// Names returns the names of the directories of Dir that hold a
// SKILL.md, in order. A missing Dir has none.
func (s *Store) Names() ([]string, error) {
	return SkillDirs(s.Dir)
}

// SkillDirs returns the names of the directories of dir that hold a
// SKILL.md (not starting with '.'), in order: the skills of a profile or
// of a project.
func SkillDirs(dir string) ([]string, error) {
	found, err := Scan(dir)
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = f.Name
	}
	return names, err
}

// List returns the profile's skills, in name order. A skill whose
// SKILL.md does not parse is said through Warn and left out.
func (s *Store) List() ([]Skill, error) {
	names, err := s.Names()
	if err != nil {
		return nil, err
	}
	out := make([]Skill, 0, len(names))
	for _, name := range names {
		sk, _, err := s.Get(name)
		if err != nil {
			s.warn(err.Error())
			continue
		}
		out = append(out, sk)
	}
	return out, nil
}

// Get reads skill name: its frontmatter and its body. A missing skill is
// ErrNotFound; a SKILL.md that does not parse is ErrInvalid naming it,
// the line and the reason.
func (s *Store) Get(name string) (Skill, string, error) {
	if err := CheckName(name); err != nil {
		return Skill{}, "", err
	}
	path := filepath.Join(s.Path(name), FileName)
	data, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Skill{}, "", fsstore.NotFoundf("skill %s not found (hermes skills list)", name)
	}
	if err != nil {
		return Skill{}, "", err
	}
	meta, body, err := Parse(data)
	if err != nil {
		return Skill{}, "", fmt.Errorf("skill %s: %s: %w", name, path, err)
	}
	if meta.Name != name {
		return Skill{}, "", fsstore.Invalidf("skill %s: %s line 2: its name is %q, not its directory's %q", name, path, meta.Name, name)
	}
	return Skill{Meta: meta, Dir: s.Path(name), Source: SourceProfile, Origin: originOf(s.Path(name), data)}, body, nil
}

// Text is the SKILL.md of skill name, as it is, once it parses (see Get).
func (s *Store) Text(name string) (string, error) {
	if _, _, err := s.Get(name); err != nil {
		return "", err
	}
	b, err := readFile(filepath.Join(s.Path(name), FileName))
	return string(b), err
}

// readFile reads a regular file of a skill, at most MaxSkillFile bytes,
// without following a symbolic link; a FIFO put in its place is refused
// without waiting for a writer (the open does not block, and the opened
// file is checked).
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fsstore.Invalidf("%s is not a regular file", path)
	}
	if fi.Size() > MaxSkillFile {
		return nil, fsstore.Invalidf("%s is %d bytes; a skill's file is read up to %d", path, fi.Size(), MaxSkillFile)
	}
	return io.ReadAll(io.LimitReader(f, MaxSkillFile))
}

// Origin says who made skill name: ByAgent when the agent made it and
// its SKILL.md is as hermes last wrote it, else ByUser.
func (s *Store) Origin(name string) string {
	data, err := readFile(filepath.Join(s.Path(name), FileName))
	if err != nil {
		return ByUser
	}
	return originOf(s.Path(name), data)
}

func originOf(dir string, skillMD []byte) string {
	var m marker
	if err := fsstore.ReadDoc(filepath.Join(dir, markerName), &m); err != nil || m.CreatedBy != ByAgent || m.SHA256 != digest(skillMD) {
		return ByUser
	}
	return ByAgent
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Log calls fn with each change, oldest first.
func (s *Store) Log(fn func(Change)) error {
	_, err := fsstore.ScanRecords(s.LogPath(), s.warn, fn)
	return err
}

// change runs decide under the store's lock, and appends the change it
// returns, numbered after the log's last line (read backwards: a change
// costs the same at any length of the log), before calling its commit
// (the rename or write that makes it visible); a failure of either
// leaves both as they were.
func (s *Store) change(who Who, decide func() (Change, func() error, error)) (Change, error) {
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		return Change{}, err
	}
	unlock, err := fsstore.LockUntil(s.lockPath(), s.LockTimeout, s.Cancel)
	if err != nil {
		return Change{}, err
	}
	defer unlock()
	last, err := s.lastSeq()
	if err != nil {
		return Change{}, err
	}
	c, commit, err := decide()
	if err != nil {
		return Change{}, err
	}
	c.Seq = last + 1
	c.TS, c.By, c.SessionID = fsstore.TimeOf(s.Now()), who.By, who.SessionID
	if c.By == "" {
		c.By = ByUser
	}
	line, err := json.Marshal(c)
	if err != nil {
		return Change{}, err
	}
	f, err := fsstore.AppendLog(s.LogPath(), s.Now(), s.warn, [][]byte{append(line, '\n')}, commit)
	if err != nil {
		return Change{}, err
	}
	return c, f.Close()
}

// lastSeq is the seq of the log's last complete line, 0 for none. A line
// that does not parse there is an error: numbering after it could repeat
// a number.
func (s *Store) lastSeq() (int64, error) {
	f, size, err := fsstore.OpenSized(s.LogPath())
	if err != nil || f == nil {
		return 0, err
	}
	defer f.Close()
	line, off, err := fsstore.LastLine(f, size)
	if err != nil || line == nil {
		return 0, err
	}
	var c Change
	if err := json.Unmarshal(line, &c); err != nil {
		return 0, &fsstore.CorruptError{Path: s.LogPath(), Offset: off, Err: err}
	}
	return c.Seq, nil
}

// Create makes skill name from content, its SKILL.md, as made by who (the
// agent: its marker records it). A name taken is refused (ErrRefused), a
// SKILL.md that does not parse or names another skill is ErrInvalid.
func (s *Store) Create(name, content string, who Who) (Change, error) {
	if err := checkContent(name, content); err != nil {
		return Change{}, err
	}
	return s.change(who, func() (Change, func() error, error) {
		if err := s.free(name); err != nil {
			return Change{}, nil, err
		}
		after := content
		return Change{Op: OpCreate, Name: name, File: FileName, After: &after}, func() error {
			return s.install(name, func(tmp string) error {
				if err := fsstore.WriteFileAtomic(filepath.Join(tmp, FileName), []byte(content)); err != nil {
					return err
				}
				return writeMarker(tmp, who, []byte(content))
			})
		}, nil
	})
}

func checkContent(name, content string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if len(content) > MaxSkillFile {
		return fsstore.Invalidf("SKILL.md is %d bytes; the limit is %d", len(content), MaxSkillFile)
	}
	meta, _, err := Parse([]byte(content))
	if err != nil {
		return err
	}
	if meta.Name != name {
		return fsstore.Invalidf("%s line 2: its name is %q, not the skill's %q", FileName, meta.Name, name)
	}
	return nil
}

func writeMarker(dir string, who Who, skillMD []byte) error {
	if who.By != ByAgent {
		return nil
	}
	b, err := fsstore.EncodeDoc(markerName, marker{CreatedBy: ByAgent, SessionID: who.SessionID, SHA256: digest(skillMD)})
	if err != nil {
		return err
	}
	return fsstore.WriteFileAtomic(filepath.Join(dir, markerName), b)
}

// free refuses a name a skill (or anything else) has.
func (s *Store) free(name string) error {
	if _, err := os.Lstat(s.Path(name)); !errors.Is(err, os.ErrNotExist) {
		return fsstore.Refusedf("skill %s exists (%s); a skill is never replaced: remove it first (hermes skills remove %s)", name, s.Path(name), name)
	}
	return nil
}

// install fills a new directory with fill, then renames it to skill
// name's: the skill appears whole or not at all.
func (s *Store) install(name string, fill func(tmp string) error) error {
	tmp, err := os.MkdirTemp(s.Dir, ".tmp-"+name+"-")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, fsstore.DirMode); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := fill(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, s.Path(name)); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return fsstore.SyncDir(s.Dir)
}

// Patch replaces old, found exactly once, by new in file (SKILL.md when
// empty) of skill name; an old that is empty makes or replaces the whole
// file. A SKILL.md must still parse and keep its name. The caller decides
// who may change whose skill (Origin); an agent's change keeps its
// skill's marker in step.
func (s *Store) Patch(name, file, old, new string, who Who) (Change, error) {
	if err := CheckName(name); err != nil {
		return Change{}, err
	}
	if file == "" {
		file = FileName
	}
	if err := checkFile(file); err != nil {
		return Change{}, err
	}
	return s.change(who, func() (Change, func() error, error) {
		dir := s.Path(name)
		if _, err := os.Lstat(filepath.Join(dir, FileName)); err != nil {
			return Change{}, nil, fsstore.NotFoundf("skill %s not found (hermes skills list)", name)
		}
		path := filepath.Join(dir, file)
		var before *string
		cur, err := readFile(path)
		switch {
		case err == nil:
			b := string(cur)
			before = &b
		case !errors.Is(err, os.ErrNotExist):
			return Change{}, nil, err
		}
		after := new
		if old != "" {
			if before == nil {
				return Change{}, nil, fsstore.NotFoundf("skill %s has no file %s", name, file)
			}
			switch n := strings.Count(*before, old); n {
			case 0:
				return Change{}, nil, fsstore.NotFoundf("%s of skill %s does not contain the text to replace", file, name)
			case 1:
				after = strings.Replace(*before, old, new, 1)
			default:
				return Change{}, nil, fsstore.Invalidf("%s of skill %s contains the text to replace %d times; give more of it", file, name, n)
			}
		}
		if file == FileName {
			if err := checkContent(name, after); err != nil {
				return Change{}, nil, err
			}
		}
		return Change{Op: OpPatch, Name: name, File: file, Before: before, After: &after}, func() error {
			return s.writeFile(name, file, &after, who)
		}, nil
	})
}

// checkFile refuses a file name that leaves its skill, or names a dot
// file (the marker among them).
func checkFile(file string) error {
	if !filepath.IsLocal(file) {
		return fsstore.Invalidf("file %q is not a relative path inside the skill", file)
	}
	for _, part := range strings.Split(filepath.ToSlash(file), "/") {
		if strings.HasPrefix(part, ".") {
			return fsstore.Invalidf("file %q has a part starting with '.'", file)
		}
	}
	return nil
}

// writeFile writes text to file of skill name (removes it when nil),
// never through a symbolic link, and keeps the marker of a skill the
// agent made in step with its SKILL.md, whoever changes it; a skill the
// user made or edited stays the user's.
func (s *Store) writeFile(name, file string, text *string, who Who) error {
	dir := s.Path(name)
	agents := s.Origin(name) == ByAgent
	path := filepath.Join(dir, file)
	for d := filepath.Dir(path); d != dir; d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fsstore.Refusedf("%s is a symlink; refusing to write through it", d)
		}
	}
	if text == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return fsstore.SyncDir(filepath.Dir(path))
	}
	if err := fsstore.EnsureDir(filepath.Dir(path)); err != nil {
		return err
	}
	if err := fsstore.WriteFileAtomic(path, []byte(*text)); err != nil {
		return err
	}
	if file != FileName || !agents {
		return nil
	}
	var m marker
	if err := fsstore.ReadDoc(filepath.Join(dir, markerName), &m); err != nil {
		return err
	}
	return writeMarker(dir, Who{By: ByAgent, SessionID: m.SessionID}, []byte(*text))
}

// Delete moves skill name aside to .removed/<name>.<unix>: nothing is
// lost, and Revert brings it back.
func (s *Store) Delete(name string, who Who) (Change, error) {
	return s.delete(name, who, 0)
}

// delete is Delete, for a revert of change reverts when not 0.
func (s *Store) delete(name string, who Who, reverts int64) (Change, error) {
	if err := CheckName(name); err != nil {
		return Change{}, err
	}
	return s.change(who, func() (Change, func() error, error) {
		if _, err := os.Lstat(s.Path(name)); err != nil {
			return Change{}, nil, fsstore.NotFoundf("skill %s not found (hermes skills list)", name)
		}
		aside := s.asideName(name)
		return Change{Op: OpDelete, Name: name, Aside: aside, Reverts: reverts}, func() error {
			if err := fsstore.EnsureDir(s.removedDir()); err != nil {
				return err
			}
			if err := os.Rename(s.Path(name), filepath.Join(s.Dir, aside)); err != nil {
				return err
			}
			return errors.Join(fsstore.SyncDir(s.Dir), fsstore.SyncDir(s.removedDir()))
		}, nil
	})
}

// asideName is where a skill deleted now goes, relative to Dir.
func (s *Store) asideName(name string) string {
	base := fmt.Sprintf("%s.%d", name, s.Now().Unix())
	aside := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(filepath.Join(s.removedDir(), aside)); errors.Is(err, os.ErrNotExist) {
			return filepath.Join(".removed", aside)
		}
		aside = fmt.Sprintf("%s.%d", base, i)
	}
}

// Add copies the skill at src (a directory holding a SKILL.md, or a
// SKILL.md alone) into the profile, as the user's. Its name is its
// frontmatter's; a name taken is refused: a skill is never replaced.
func (s *Store) Add(src string, who Who) (Change, error) {
	name, dir, err := source(src)
	if err != nil {
		return Change{}, err
	}
	return s.change(who, func() (Change, func() error, error) {
		if err := s.free(name); err != nil {
			return Change{}, nil, err
		}
		return Change{Op: OpAdd, Name: name, From: src}, func() error {
			return s.install(name, func(tmp string) error {
				if dir == "" {
					return copyFile(src, filepath.Join(tmp, FileName))
				}
				skipped, err := copyTree(dir, tmp)
				for _, p := range skipped {
					s.warn(fmt.Sprintf("%s: not copied (not a regular file or directory)", p))
				}
				return err
			})
		}, nil
	})
}

// source checks the skill at src and returns its name, and its directory
// ("" for a SKILL.md alone).
func source(src string) (name, dir string, err error) {
	fi, err := os.Stat(src)
	if err != nil {
		return "", "", fsstore.NotFoundf("%s: %v", src, errors.Unwrap(err))
	}
	path := src
	if fi.IsDir() {
		dir, path = src, filepath.Join(src, FileName)
	}
	data, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", fsstore.Invalidf("%s holds no %s", src, FileName)
	}
	if err != nil {
		return "", "", err
	}
	meta, _, err := Parse(data)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", path, err)
	}
	if dir != "" && meta.Name != filepath.Base(filepath.Clean(dir)) {
		return "", "", fsstore.Invalidf("%s line 2: its name is %q, not its directory's %q", path, meta.Name, filepath.Base(filepath.Clean(dir)))
	}
	return meta.Name, dir, nil
}

// copyTree copies the regular files and directories under src into dst
// (which exists), files 0600 (0700 when their owner may run them),
// directories 0700, each file synced; a .git directory and a marker are
// not copied, and what is neither file nor directory (a symbolic link) is
// skipped and returned.
func copyTree(src, dst string) (skipped []string, err error) {
	err = filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel == "." {
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case e.IsDir() && e.Name() == ".git":
			return filepath.SkipDir
		case e.IsDir():
			return os.Mkdir(target, fsstore.DirMode)
		case e.Name() == markerName:
			return nil
		case e.Type().IsRegular():
			return copyFile(path, target)
		}
		skipped = append(skipped, path)
		return nil
	})
	if err != nil {
		return skipped, err
	}
	return skipped, syncDirs(dst)
}

func syncDirs(root string) error {
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		return fsstore.SyncDir(path)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	mode := os.FileMode(fsstore.FileMode)
	if fi.Mode()&0o100 != 0 {
		mode = 0o700
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(mode); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Imported is what Import did with one skill it found.
type Imported struct {
	Name   string `json:"name"`
	From   string `json:"from"`
	Seq    int64  `json:"seq,omitempty"`
	Status string `json:"status"` // added, exists, invalid
	Reason string `json:"reason,omitempty"`
}

// Import adds every skill found in src: <src>/<name>/SKILL.md (Claude
// Code's ~/.claude/skills) and <src>/<category>/<name>/SKILL.md (the
// Python hermes's skills). A skill whose name the profile has already is
// left as it is, both there and here: an import never replaces or deletes
// a skill. One that does not parse is reported and skipped.
func (s *Store) Import(src string, who Who) ([]Imported, error) {
	found, err := findSkills(src)
	if err != nil {
		return nil, err
	}
	var out []Imported
	for _, dir := range found {
		im := Imported{Name: filepath.Base(dir), From: dir}
		c, err := s.Add(dir, who)
		switch {
		case err == nil:
			im.Status, im.Seq = "added", c.Seq
		case errors.Is(err, fsstore.ErrRefused):
			im.Status, im.Reason = "exists", err.Error()
		case errors.Is(err, fsstore.ErrInvalid):
			im.Status, im.Reason = "invalid", err.Error()
		default:
			return out, err
		}
		out = append(out, im)
	}
	return out, nil
}

// findSkills returns the skill directories under src, at depth one or
// two, in order.
func findSkills(src string) ([]string, error) {
	top, err := SkillDirs(src)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, fsstore.NotFoundf("%s: %v", src, errors.Unwrap(err))
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if slices.Contains(top, name) {
			out = append(out, filepath.Join(src, name))
			continue
		}
		if strings.HasPrefix(name, ".") || !e.IsDir() {
			continue
		}
		inner, err := SkillDirs(filepath.Join(src, name))
		if err != nil {
			return nil, err
		}
		for _, n := range inner {
			out = append(out, filepath.Join(src, name, n))
		}
	}
	return out, nil
}

// Revert undoes change seq with a new change: a create or an add is
// deleted (moved aside), a delete restored, a patch taken back. It is
// refused when what it undoes has changed since (ErrRefused).
func (s *Store) Revert(seq int64, who Who) (Change, error) {
	var c Change
	if err := s.Log(func(l Change) {
		if l.Seq == seq {
			c = l
		}
	}); err != nil {
		return Change{}, err
	}
	if c.Seq == 0 {
		return Change{}, fsstore.NotFoundf("skills change %d not found (hermes skills log lists them)", seq)
	}
	switch c.Op {
	case OpCreate, OpAdd, OpRestore:
		return s.delete(c.Name, who, seq)
	case OpDelete:
		return s.restore(c, who)
	case OpPatch:
		return s.unpatch(c, who)
	}
	return Change{}, fsstore.Invalidf("skills change %d has unknown operation %q", seq, c.Op)
}

func (s *Store) restore(c Change, who Who) (Change, error) {
	return s.change(who, func() (Change, func() error, error) {
		if err := s.free(c.Name); err != nil {
			return Change{}, nil, err
		}
		if _, err := os.Lstat(filepath.Join(s.Dir, c.Aside)); err != nil {
			return Change{}, nil, fsstore.NotFoundf("skill %s's copy %s is gone", c.Name, c.Aside)
		}
		return Change{Op: OpRestore, Name: c.Name, Aside: c.Aside, Reverts: c.Seq}, func() error {
			if err := os.Rename(filepath.Join(s.Dir, c.Aside), s.Path(c.Name)); err != nil {
				return err
			}
			return errors.Join(fsstore.SyncDir(s.Dir), fsstore.SyncDir(s.removedDir()))
		}, nil
	})
}

func (s *Store) unpatch(c Change, who Who) (Change, error) {
	return s.change(who, func() (Change, func() error, error) {
		cur, err := readFile(filepath.Join(s.Path(c.Name), c.File))
		if err != nil || c.After == nil || string(cur) != *c.After {
			return Change{}, nil, fsstore.Refusedf("%s of skill %s has changed since change %d; revert the later changes first", c.File, c.Name, c.Seq)
		}
		return Change{Op: OpPatch, Name: c.Name, File: c.File, Before: c.After, After: c.Before, Reverts: c.Seq}, func() error {
			return s.writeFile(c.Name, c.File, c.Before, who)
		}, nil
	})
}
