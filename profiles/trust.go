package profiles

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/google/shlex"

	"github.com/hermes/hermes/fsstore"
)

// instructionsFile is the profile's own project instructions
// (agent.InstructionsFile), which a session's first turn reads: it is
// configuration too.
const instructionsFile = "AGENTS.md"

// UnsafeError is a file or directory that hermes does not trust: an
// account other than the user and root owns it, or one can write it, so
// it could plant the configuration or the command that hermes then runs
// as the user. It is ErrInvalid (exit 2).
type UnsafeError struct {
	// Path is the file or directory: a file's after symlinks, and the
	// directory that holds it after them.
	Path string
	// Role is what Path is to hermes: "the profile directory",
	// "config.yaml", "exec_command", "mcp_servers.NAME.command", …
	Role string
	// Problem says what is wrong: "writable by group and others",
	// "owned by uid 1001, not you (uid 1000)".
	Problem string
	// Fix is the command that makes Path safe: chmod go-w PATH, or a
	// chown to the user.
	Fix string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("refusing the profile's configuration: %s (%s) is %s; fix with: %s", e.Path, e.Role, e.Problem, e.Fix)
}

func (e *UnsafeError) Unwrap() error { return fsstore.ErrInvalid }

// Load reads p's config.yaml, once nothing of what p's configuration is
// made of can be written by another account (Unsafe); the first such
// thing is the error, an *UnsafeError. A missing config.yaml is the zero
// Config; one that does not parse is ErrInvalid naming it, and is never
// replaced.
func Load(p Profile) (Config, error) {
	cfg, unsafe, err := check(p, true)
	if err != nil {
		return Config{}, err
	}
	if len(unsafe) > 0 {
		return Config{}, unsafe[0]
	}
	return cfg, nil
}

// Unsafe lists what makes p's configuration unsafe to load, in the order
// Load would find it: the root, profiles/ and the profile directory, then
// config.yaml, AGENTS.md, and the commands config.yaml names. A
// config.yaml that is itself unsafe is not read, and one that does not
// parse is left to the commands that read it: the commands of either are
// not checked.
func Unsafe(p Profile) ([]*UnsafeError, error) {
	_, unsafe, err := check(p, false)
	return unsafe, err
}

// check judges p's directories and files and reads its config.yaml. A
// config.yaml that does not parse is an error when strict, else the
// zero Config.
func check(p Profile, strict bool) (Config, []*UnsafeError, error) {
	unsafe, err := checkDirs(p)
	if err != nil {
		return Config{}, nil, err
	}
	// A directory is said once, though it may be both one of the
	// profile's and the one that holds config.yaml.
	add := func(u *UnsafeError) {
		if u != nil && !slices.ContainsFunc(unsafe, func(v *UnsafeError) bool { return v.Path == u.Path }) {
			unsafe = append(unsafe, u)
		}
	}
	cfg, u, err := readConfig(p.Dir(), strict)
	if err != nil {
		return Config{}, nil, err
	}
	add(u)
	u, err = checkFile(filepath.Join(p.Dir(), instructionsFile), instructionsFile)
	if err != nil {
		return Config{}, nil, err
	}
	add(u)
	// An unsafe or unparsable config.yaml is the zero Config here, which
	// names no command. Without a working directory (it was removed), a
	// command relative to it cannot run, and is not judged.
	cwd, _ := os.Getwd()
	for _, c := range commands(cfg, cwd) {
		u, err := checkFile(c.path, c.setting)
		if err != nil {
			return Config{}, nil, err
		}
		add(u)
	}
	return cfg, unsafe, nil
}

// checkDirs judges the directories that hold p's configuration, from the
// root down: whoever can write one can rename what it holds away and put
// their own in its place. The root's own parents are not judged: they are
// where the user chose to keep it (the home directory, by default), and
// any directory another account put in the root's place would be that
// account's, which judge refuses.
func checkDirs(p Profile) ([]*UnsafeError, error) {
	var unsafe []*UnsafeError
	for _, d := range []struct {
		path, role string
		stickyOK   bool
	}{
		{p.Root, "the hermes root", true},
		{filepath.Join(p.Root, "profiles"), "the profiles directory", true},
		// Sticky is no help here: another account could still add a
		// file that hermes reads, such as a scheduled job.
		{p.Dir(), "the profile directory", false},
	} {
		fi, err := os.Stat(d.path)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, err
		}
		if u := judge(d.path, d.role, fi, d.stickyOK); u != nil {
			unsafe = append(unsafe, u)
		}
	}
	return unsafe, nil
}

// readConfig reads <dir>/config.yaml as LoadConfig does, from the file it
// judges, so that what is read is what was judged. An unsafe file is not
// read: the zero Config and its *UnsafeError. A file that does not parse
// is an error when strict, else the zero Config.
func readConfig(dir string, strict bool) (Config, *UnsafeError, error) {
	path := filepath.Join(dir, "config.yaml")
	// Non-blocking, so that a FIFO planted as config.yaml is refused
	// rather than waited on.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil, nil
	}
	if err != nil {
		return Config{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Config{}, nil, err
	}
	if !fi.Mode().IsRegular() {
		return Config{}, nil, fsstore.Invalidf("%s is not a regular file", path)
	}
	u, err := judgeFile(path, "config.yaml", fi)
	if u != nil || err != nil {
		return Config{}, u, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return Config{}, nil, err
	}
	c, err := parseConfig(path, b)
	if err != nil && !strict {
		return Config{}, nil, nil
	}
	return c, nil, err
}

// checkFile judges the file at path, which hermes reads or runs as role.
// When there is none (or it cannot be reached), nothing is read or run
// from it, but whoever can write the directory it would be in could put
// one there: that directory is judged.
func checkFile(path, role string) (*UnsafeError, error) {
	fi, err := os.Stat(path)
	if err != nil {
		dir := filepath.Dir(path)
		di, err := os.Stat(dir)
		if err != nil {
			return nil, nil
		}
		return judge(dir, "the directory of "+role, di, true), nil
	}
	return judgeFile(path, role, fi)
}

// judgeFile judges fi, the file at path (after symlinks), and then the
// directory that holds it after symlinks: whoever can write that
// directory can replace the file. A sticky directory (/tmp) is safe for a
// file that is there: others cannot rename or remove it.
func judgeFile(path, role string, fi fs.FileInfo) (*UnsafeError, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if u := judge(real, role, fi, false); u != nil {
		return u, nil
	}
	dir := filepath.Dir(real)
	di, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	return judge(dir, "the directory of "+role, di, true), nil
}

// judge says what is wrong with fi, at path: nil when the user or root
// owns it and no one else can write it. stickyOK accepts a directory that
// others can write when its sticky bit is set, as /tmp's is: they can add
// entries there, but not rename or remove the user's.
func judge(path, role string, fi fs.FileInfo, stickyOK bool) *UnsafeError {
	var problems, fixes []string
	uid := os.Geteuid()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != uid {
		problems = append(problems, fmt.Sprintf("owned by uid %d, not you (uid %d)", st.Uid, uid))
		fixes = append(fixes, fmt.Sprintf("sudo chown %d %s", uid, shellQuote(path)))
	}
	sticky := stickyOK && fi.IsDir() && fi.Mode()&fs.ModeSticky != 0
	if w := fi.Mode().Perm() & 0o022; w != 0 && !sticky {
		who := map[fs.FileMode]string{0o020: "group", 0o002: "others", 0o022: "group and others"}[w]
		problems = append(problems, "writable by "+who)
		fixes = append(fixes, "chmod go-w "+shellQuote(path))
	}
	if len(problems) == 0 {
		return nil
	}
	return &UnsafeError{Path: path, Role: role, Problem: strings.Join(problems, ", and "), Fix: strings.Join(fixes, " && ")}
}

// command is a file that hermes runs, and the setting that names it.
type command struct{ setting, path string }

// commands are the commands cfg names by a path (a word with a /), made
// absolute: a relative one starts where hermes starts it, cwd for
// exec_command and kanban.worker_command, an MCP server's cwd for its
// command. A command named bare is looked up in $PATH, the user's own,
// and is not among them.
func commands(cfg Config, cwd string) []command {
	var out []command
	add := func(setting, word, dir string) {
		if !strings.Contains(word, "/") {
			return
		}
		if !filepath.IsAbs(word) {
			if !filepath.IsAbs(dir) {
				return
			}
			word = filepath.Join(dir, word)
		}
		out = append(out, command{setting, word})
	}
	add("exec_command", shellCommand(cfg.ExecCommand), cwd)
	for _, name := range sortedKeys(cfg.Gateway.Models) {
		add("gateway.models."+name+".exec_command", shellCommand(cfg.Gateway.Models[name].ExecCommand), cwd)
	}
	if fields, err := shlex.Split(cfg.Kanban.WorkerCommand); err == nil && len(fields) > 0 {
		add("kanban.worker_command", fields[0], cwd)
	}
	for _, name := range sortedKeys(cfg.MCPServers) {
		s := cfg.MCPServers[name]
		dir := s.Cwd
		if !filepath.IsAbs(dir) && cwd != "" {
			dir = filepath.Join(cwd, dir)
		}
		add("mcp_servers."+name+".command", s.Command, dir)
	}
	for _, set := range []struct {
		setting string
		hooks   Hooks
	}{{"hooks", cfg.Hooks}, {"gateway.hooks", cfg.Gateway.Hooks}} {
		for _, event := range sortedKeys(set.hooks) {
			for i, m := range set.hooks[event] {
				at := fmt.Sprintf("%s.%s[%d]", set.setting, event, i)
				add(at+".command", shellCommand(m.Command), cwd)
				for j, c := range m.Hooks {
					add(fmt.Sprintf("%s.hooks[%d].command", at, j), shellCommand(c.Command), cwd)
				}
			}
		}
	}
	return out
}

// shellCommand is the program a `sh -c` line runs: its first word after
// any VAR=value assignments, "" when the line does not split.
func shellCommand(line string) string {
	words, err := shlex.Split(line)
	if err != nil {
		return ""
	}
	for _, w := range words {
		if name, _, ok := strings.Cut(w, "="); !ok || !isVarName(name) {
			return w
		}
	}
	return ""
}

func isVarName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// shellQuote quotes s for a shell when it holds anything but the
// characters of a plain path.
func shellQuote(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%=", r))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
