// Package profiles resolves where hermes keeps its state: the root
// directory, the active profile inside it, and the profile's config.yaml.
//
// The root is --home, else $HERMES_HOME, else ~/.hermes. The profile is
// -p/--profile, else $HERMES_PROFILE, else the one line of
// <root>/active_profile, else "default". A profile's directory is
// <root>/profiles/<name>/, made on the first write. Names match
// ^[a-z0-9][a-z0-9_-]{0,63}$ and are checked before they touch a path.
//
// Durations, on the command line and in config.yaml, are of two kinds. A
// cutoff (prune's --older-than, retention.sessions, tasks history
// --since) and the lock wait read with ParseDuration, which takes zero: a
// cutoff of 0s is now, a lock wait of 0 one try. A period (a timeout, an
// interval, a TTL) reads with ParsePeriod, which refuses zero: no call
// fits in a zero timeout, and a zero interval would spin. Either refusal
// names the text as typed; the command line adds the flag or setting.
//
// # Permissions
//
// Configuration is code (DESIGN.md invariant 20): hermes runs what
// config.yaml names as the user, so Load reads it only when no account
// but the user and root could have written it, as ssh does with its keys.
// Load judges, and refuses with an *UnsafeError (exit 2) naming the path,
// what is wrong and the command that fixes it (chmod go-w PATH, or a
// chown to the user):
//
//  1. the root, profiles/ and the profile directory: each owned by the
//     user or root and writable by no one else. A sticky directory (as
//     /tmp is) is accepted for the root and profiles/, where others can
//     add entries but not rename the user's away; not for the profile
//     directory, where a file they add (a scheduled job) would be read.
//     The root's own parents are not judged: they are where the user
//     chose to keep it, and a directory someone put in the root's place
//     would be theirs, which is refused.
//  2. config.yaml and the profile's AGENTS.md (project instructions),
//     after symlinks, and the directory that holds each (sticky
//     accepted): whoever can write that directory can replace the file.
//     config.yaml is judged and read through one open file.
//  3. each command config.yaml names by a path, a word with a '/'
//     (exec_command, gateway.models' exec_command and kanban.worker_command
//     from the working directory; an MCP server's command from its cwd),
//     and its directory, as for config.yaml; for a command that is not
//     there, the directory where one could be put. A command named bare is
//     looked up in $PATH, which is the user's, and is not judged, nor are
//     a command's arguments, nor a command given on the command line or
//     in the environment ($HERMES_EXEC_COMMAND); the working tree's
//     AGENTS.md files are the project's, not the profile's, and are not
//     judged either.
//
// Unsafe lists every problem, for fsck, which reports each and leaves it
// to the user: a chmod would make what another account planted look like
// the user's own. hermes makes directories 0700 and files 0600, so a
// profile it made is never refused; nor is one in a temporary directory
// (a test's), whose parents are not judged.
package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/hermes/hermes/fsstore"
)

// DefaultName is the profile used when nothing names one.
const DefaultName = "default"

// CheckName reports whether name can name a profile: whether it matches
// ^[a-z0-9][a-z0-9_-]{0,63}$. It is written out rather than a regexp,
// whose compilation at start-up every command would pay.
func CheckName(name string) error {
	ok := len(name) >= 1 && len(name) <= 64
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '_' || c == '-')
	}
	if !ok {
		return fsstore.Invalidf("profile name %q must match ^[a-z0-9][a-z0-9_-]{0,63}$", name)
	}
	return nil
}

// Root returns the root directory: flag, else $HERMES_HOME, else ~/.hermes.
func Root(flag string) (string, error) {
	root := flag
	if root == "" {
		root = os.Getenv("HERMES_HOME")
	}
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no --home, no $HERMES_HOME and no home directory: %w", err)
		}
		root = filepath.Join(home, ".hermes")
	}
	return filepath.Abs(root)
}

// Profile is a resolved profile.
type Profile struct {
	Root string
	Name string
	// From says where the name came from: flag, env, active_profile or
	// default.
	From string
}

// Dir is the profile's directory.
func (p Profile) Dir() string { return Dir(p.Root, p.Name) }

// Dir is the directory of profile name under root.
func Dir(root, name string) string { return filepath.Join(root, "profiles", name) }

// Resolve finds the profile: flag, else $HERMES_PROFILE, else the one line
// of <root>/active_profile, else "default". A name from any source that is
// not a valid profile name is an error, never a fallback.
func Resolve(root, flag string) (Profile, error) {
	p := Profile{Root: root}
	switch {
	case flag != "":
		p.Name, p.From = flag, "flag"
	case os.Getenv("HERMES_PROFILE") != "":
		p.Name, p.From = os.Getenv("HERMES_PROFILE"), "env"
	default:
		b, err := os.ReadFile(filepath.Join(root, "active_profile"))
		switch {
		case err == nil:
			p.Name, p.From = string(bytes.TrimSpace(b)), "active_profile"
		case errors.Is(err, os.ErrNotExist):
			p.Name, p.From = DefaultName, "default"
		default:
			return p, err
		}
	}
	if err := CheckName(p.Name); err != nil {
		return p, fmt.Errorf("%w (from %s)", err, p.From)
	}
	return p, nil
}

// List returns the names of the profiles that have a directory, sorted.
func List(root string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "profiles"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && CheckName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Use makes name the active profile: <root>/active_profile is written
// atomically, and the profile's directory is made.
func Use(root, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if err := fsstore.EnsureDir(Dir(root, name)); err != nil {
		return err
	}
	return fsstore.WriteFileAtomic(filepath.Join(root, "active_profile"), []byte(name+"\n"))
}
