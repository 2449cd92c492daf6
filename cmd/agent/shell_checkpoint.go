package agent

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hermes/hermes/fsstore/checkpoints"
)

// snapFile is a file of a work tree as a snapshot found it: the hash of
// its bytes (an object of the store) and its mode, or why it was not
// stored.
type snapFile struct {
	hash string
	mode fs.FileMode
	skip string
}

// shellSnapshot is what checkpoints.shell: git keeps before a terminal
// command: the files of the git work tree the command runs in.
type shellSnapshot struct {
	top   string
	files map[string]snapFile
}

// gitFiles lists the files of the work tree top that git knows of or
// would add: tracked, and untracked but not ignored, as absolute paths.
func gitFiles(ctx context.Context, top string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", top, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	seen := map[string]bool{}
	var paths []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" && !seen[p] {
			seen[p] = true
			paths = append(paths, filepath.Join(top, p))
		}
	}
	return paths, nil
}

// snapshotShell stores the files of the git work tree around the
// session's directory before a terminal command (checkpoints.shell: git)
// and writes them as the call's pending record, so that a crash during
// the command is settled as any other (fsstore/checkpoints). note says
// why there is none: not in a git work tree, or git failed. Each file is
// read once more than the command needs; files over checkpoints.max_file
// are listed, not stored.
func (env *Env) snapshotShell(ctx context.Context) (snap *shellSnapshot, note string, err error) {
	cc := env.call
	if cc == nil || !env.ShellGit {
		return nil, "", nil
	}
	cmd := exec.CommandContext(ctx, "git", "-C", env.Cwd, "rev-parse", "--show-toplevel")
	out, gitErr := cmd.Output()
	if gitErr != nil {
		return nil, fmt.Sprintf("\n(not checkpointed: %s is not in a git work tree, which checkpoints.shell: git needs)", env.Cwd), nil
	}
	top := strings.TrimSpace(string(out))
	paths, err := gitFiles(ctx, top)
	if err != nil {
		return nil, "\n(not checkpointed: " + err.Error() + ")", nil
	}
	snap = &shellSnapshot{top: top, files: map[string]snapFile{}}
	var pending []checkpoints.Change
	limit := cc.store.Limit()
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue // a deleted tracked file, a symbolic link, a submodule
		}
		f := snapFile{mode: fi.Mode()}
		if fi.Size() > limit {
			f.skip = errTooBig{fi.Size(), limit}.Error()
		} else if b, _, err := readRegular(ctx, hostFiles{}, p, p, 0, limit, func(size int64) error { return errTooBig{size, limit} }); err != nil {
			f.skip = "unreadable (" + err.Error() + ")"
		} else if f.hash, err = cc.store.Put(b); err != nil {
			return nil, "", fmt.Errorf("the snapshot of %s could not be stored (%w); the command was not run", top, err)
		}
		snap.files[p] = f
		if f.skip == "" {
			pending = append(pending, checkpoints.Change{Path: p, Before: f.hash, Mode: checkpoints.ModeText(f.mode)})
		}
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if err := cc.store.SetPending(checkpoints.Pending{SessionID: cc.session, CallID: cc.call, Changes: append(slicesClone(cc.list), pending...)}); err != nil {
		return nil, "", fmt.Errorf("the snapshot of %s could not be recorded (%w); the command was not run", top, err)
	}
	return snap, "", nil
}

// settleShell compares the work tree after the command with the
// snapshot and adds a change for each file the command changed, created
// or removed to the call's record; note names the changed files that
// could not be checkpointed.
func (env *Env) settleShell(ctx context.Context, snap *shellSnapshot) (note string) {
	cc := env.call
	now := map[string]bool{}
	if paths, err := gitFiles(ctx, snap.top); err == nil {
		for _, p := range paths {
			now[p] = true
		}
	}
	for p := range snap.files {
		now[p] = true
	}
	all := make([]string, 0, len(now))
	for p := range now {
		all = append(all, p)
	}
	sort.Strings(all)
	var changes []checkpoints.Change
	var lost []string
	for _, p := range all {
		was, had := snap.files[p]
		h, fi, err := present(ctx, hostFiles{}, p)
		if err != nil {
			if had {
				lost = append(lost, p+": "+err.Error())
			}
			continue
		}
		c := checkpoints.Change{Path: p, After: h.Hash}
		switch {
		case had && fi != nil && was.skip == "" && h.Is(was.hash):
			continue
		case had && fi == nil:
			c.Removed = true
		case !had && fi == nil:
			continue
		case !had:
			c.Created = true
		}
		if had {
			c.Before, c.Mode = was.hash, checkpoints.ModeText(was.mode)
			if was.skip != "" {
				c.Before, c.NotCheckpointed = "", was.skip
				lost = append(lost, p+" is "+was.skip)
			}
		}
		changes = append(changes, c)
	}
	cc.mu.Lock()
	cc.list = append(cc.list, changes...)
	list := slicesClone(cc.list)
	cc.mu.Unlock()
	// The pending record is the snapshot's, which settles a crash from
	// here to the result as well; this one is exact.
	_ = cc.store.SetPending(checkpoints.Pending{SessionID: cc.session, CallID: cc.call, Changes: list})
	if len(lost) > 0 {
		return "\n(not checkpointed, so these changes cannot be taken back: " + strings.Join(lost, "; ") + ")"
	}
	return ""
}

func slicesClone(cs []checkpoints.Change) []checkpoints.Change {
	return append([]checkpoints.Change(nil), cs...)
}
