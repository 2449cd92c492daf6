package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/sessions"
)

// restoreStep runs after each durable step of a restore ("pending",
// "file N", "note"); a test kills the process there.
var restoreStep = func(string) {}

// Skipped is a file a restore left as it is, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Restored is what a restore did: the changes it made (its record, which
// can itself be taken back), the files that were already as wanted, the
// conflicts it left (files changed since the agent's last write there),
// and the files it could not restore (never checkpointed, or an object
// lost).
type Restored struct {
	Changes   []checkpoints.Change `json:"changes"`
	Already   []string             `json:"already"`
	Conflicts []Skipped            `json:"conflicts"`
	Lost      []Skipped            `json:"lost"`
}

// Restore puts the files of targets back (checkpoints.Plan) for session
// sid and records it there with a note (RestoreNote), unless dryRun. A
// file is written only where it holds what the agent last wrote there
// (Target.Expect); any other is a conflict, left as it is, unless force.
// A symbolic link or anything but a regular file where a file is to be
// restored is always left. In order:
//
//  1. Each file to write has its present bytes stored (so the restore
//     can be taken back), and the restore's changes are written as the
//     session's pending restore record, synced.
//  2. Each file is written atomically with its recorded mode, or
//     removed (one the agent created), its directory synced.
//  3. The note recording the changes is appended to the session, synced,
//     and the pending record removed.
//
// A crash in 2 leaves each file whole, either as it was or restored; the
// same restore run again finds the restored ones already as wanted
// (Already) and the others to do, and its record holds the changes of
// both runs (the pending record's). An error names the files done.
func Restore(ctx context.Context, st *sessions.Store, store *checkpoints.Store, sid string, targets []checkpoints.Target, force, dryRun bool, text string) (Restored, error) {
	var res Restored
	type job struct {
		t      checkpoints.Target
		data   []byte
		change checkpoints.Change
	}
	var jobs []job
	prior, _, err := store.PendingOf(sid, checkpoints.RestoreCall)
	if err != nil {
		return res, err
	}
	in, done, err := sessionFiles(st, sid)
	if err != nil {
		return res, err
	}
	defer done()
	for _, t := range targets {
		if t.Lost != "" {
			res.Lost = append(res.Lost, Skipped{t.Path, "not checkpointed: " + t.Lost})
			continue
		}
		var data []byte
		if !t.Absent {
			if data, err = store.Get(t.Want); err != nil {
				res.Lost = append(res.Lost, Skipped{t.Path, err.Error()})
				continue
			}
		}
		fsys, name := in.of(t.Path)
		h, fi, err := present(ctx, fsys, name, t.Want, t.Expect)
		var out *outsideError
		if errors.As(err, &out) {
			res.Conflicts = append(res.Conflicts, Skipped{t.Path, fmt.Sprintf(
				"a directory of its path now leads out of %s, the session's directory (a symbolic link): not written through", out.dir)})
			continue
		}
		if err != nil {
			res.Conflicts = append(res.Conflicts, Skipped{t.Path, err.Error()})
			continue
		}
		switch {
		case t.Absent && fi == nil, !t.Absent && fi != nil && h.Is(t.Want):
			res.Already = append(res.Already, t.Path)
			for _, c := range prior.Changes {
				if c.Path == t.Path {
					res.Changes = append(res.Changes, c)
				}
			}
			continue
		case t.ExpectAbsent && fi == nil, !t.ExpectAbsent && fi != nil && h.Is(t.Expect):
		case !force && fi == nil:
			res.Conflicts = append(res.Conflicts, Skipped{t.Path, "removed since the agent's last change"})
			continue
		case !force:
			res.Conflicts = append(res.Conflicts, Skipped{t.Path, "changed since the agent's last change (--force takes it back, after storing its present bytes)"})
			continue
		}
		c := checkpoints.Change{Path: t.Path, After: t.Want, Removed: t.Absent, Created: fi == nil}
		if fi != nil {
			c.Mode = checkpoints.ModeText(fi.Mode())
			c.Before = h.Hash
		}
		jobs = append(jobs, job{t, data, c})
	}
	if dryRun {
		for _, j := range jobs {
			res.Changes = append(res.Changes, j.change)
		}
		return res, nil
	}
	for _, j := range jobs {
		if j.change.Before == "" {
			continue
		}
		fsys, name := in.of(j.t.Path)
		b, _, err := readRegular(ctx, fsys, name, j.t.Path, syscall.O_NOFOLLOW, maxRestoreRead, func(size int64) error {
			return fmt.Errorf("%s has %d bytes, more than a restore stores", j.t.Path, size)
		})
		if err == nil && checkpoints.Hash(b) != j.change.Before {
			err = fmt.Errorf("%s changed while it was being restored", j.t.Path)
		}
		if err == nil {
			_, err = store.Put(b)
		}
		if err != nil {
			return res, fmt.Errorf("store the present bytes of %s: %w; nothing restored", j.t.Path, err)
		}
	}
	all := append([]checkpoints.Change{}, res.Changes...)
	for _, j := range jobs {
		all = append(all, j.change)
	}
	if len(jobs) > 0 {
		if err := store.SetPending(checkpoints.Pending{SessionID: sid, CallID: checkpoints.RestoreCall, Changes: all}); err != nil {
			return res, fmt.Errorf("record the restore: %w; nothing restored", err)
		}
	}
	restoreStep("pending")
	// The files are written by a few workers at once, whose syncs the
	// disk can take together, and each directory is synced once at the
	// end, before the note: a crash before that may show a file old
	// again, whole, which the same restore run again puts back.
	errs := make([]error, len(jobs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(restoreWorkers, len(jobs)) {
		wg.Go(func() {
			for i := range work {
				fsys, name := in.of(jobs[i].t.Path)
				errs[i] = restoreFile(fsys, name, jobs[i].t, jobs[i].data)
				restoreStep(fmt.Sprint("file ", i+1))
			}
		})
	}
	for i := range jobs {
		work <- i
	}
	close(work)
	wg.Wait()
	dirs := map[string]bool{}
	var failed []string
	for i, j := range jobs {
		if errs[i] != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", j.t.Path, errs[i]))
			continue
		}
		res.Changes = append(res.Changes, j.change)
		dirs[filepath.Dir(j.t.Path)] = true
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := syncDir(hostFiles{}, d); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return res, fmt.Errorf("restore: %s (%d of %d files restored; run the same restore again to finish it)", strings.Join(failed, "; "), len(res.Changes), len(jobs))
	}
	if len(res.Changes) == 0 {
		return res, nil
	}
	m := note(sessions.Message{Role: "system", Content: sessions.TextContent(text)})
	checkpoints.Attach(&m, res.Changes)
	if _, err := st.Append(sid, []sessions.Message{m}); err != nil {
		return res, fmt.Errorf("record the restore in session %s: %w (the files are restored; run the same restore again to record it)", sid, err)
	}
	restoreStep("note")
	return res, store.ClearPending(sid, checkpoints.RestoreCall)
}

// restoreFile puts one file back, name in fsys (sessionFiles): t's bytes
// (data) with its mode, atomically, or removes it; its directory is left
// to sync.
func restoreFile(fsys fileSys, name string, t checkpoints.Target, data []byte) error {
	if t.Absent {
		if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := fsys.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		return err
	}
	c := checkpoints.Change{Mode: t.Mode}
	return replaceUnsynced(fsys, name, t.Path, data, modeInfo{filepath.Base(t.Path), c.FileMode()}, nil)
}

// restoreFS is where a restore reads and writes its files (sessionFiles).
type restoreFS struct {
	root *rootFiles // the session's directory; nil when it has none
	// dirs holds, for a file outside the session's directory, its own
	// directory's file system (nil: the whole file system), opened once.
	mu   *sync.Mutex
	dirs map[string]fileSys
}

// of is the file system and name of path: beneath the session's
// directory, that directory's os.Root and the path in it; elsewhere (a
// file the agent was let write outside it), an os.Root of the file's own
// directory and its name, so that this directory swapped for a symbolic
// link since is refused, never followed (linkedDir). A directory that is
// gone is made again where it was: the whole file system, and the path.
func (r restoreFS) of(path string) (fileSys, string) {
	if r.root != nil {
		if rel, ok := beneath(r.root.dir, path); ok {
			return *r.root, rel
		}
	}
	dir := filepath.Dir(path)
	r.mu.Lock()
	defer r.mu.Unlock()
	fsys, ok := r.dirs[dir]
	if !ok {
		fsys = openDir(dir)
		r.dirs[dir] = fsys
	}
	if fsys == nil {
		return hostFiles{}, path
	}
	return fsys, filepath.Base(path)
}

// close closes the directories of opened.
func (r restoreFS) close() {
	if r.root != nil {
		r.root.root.Close()
	}
	for _, fsys := range r.dirs {
		if rf, ok := fsys.(rootFiles); ok {
			rf.root.Close()
		}
	}
}

// openDir is the os.Root of dir, checked to be the directory dir names
// without following a symbolic link at its end (os.OpenRoot would): a
// link there is a linkedDir; nil when dir is gone, or cannot be opened
// (the whole file system, whose errors then say why).
func openDir(dir string) fileSys {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		dest, _ := os.Readlink(dir)
		return linkedDir{dir, dest}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil
	}
	if opened, err := root.Stat("."); err != nil || !os.SameFile(fi, opened) {
		// Swapped between the two looks.
		root.Close()
		dest, _ := os.Readlink(dir)
		return linkedDir{dir, dest}
	}
	return rootFiles{root, dir}
}

// linkedDir is a directory that is now a symbolic link (to dest): every
// operation in it is refused.
type linkedDir struct{ dir, dest string }

func (l linkedDir) err() error {
	return fmt.Errorf("its directory %s is now a symbolic link (to %s): not followed", l.dir, l.dest)
}
func (l linkedDir) OpenFile(string, int, fs.FileMode) (*os.File, error) { return nil, l.err() }
func (l linkedDir) Stat(string) (fs.FileInfo, error)                    { return nil, l.err() }
func (l linkedDir) Lstat(string) (fs.FileInfo, error)                   { return nil, l.err() }
func (l linkedDir) MkdirAll(string, fs.FileMode) error                  { return l.err() }
func (l linkedDir) Rename(string, string) error                         { return l.err() }
func (l linkedDir) Remove(string) error                                 { return l.err() }

// sessionFiles is the restoreFS of session sid: a file beneath its
// working directory is read and written through that directory, as
// confined file tools use it, so that a directory of its path swapped for
// a symbolic link that leads out of it (after the agent wrote there) is
// refused, never written through; a file elsewhere through its own
// directory (restoreFS.of). done closes the directories.
func sessionFiles(st *sessions.Store, sid string) (_ restoreFS, done func(), _ error) {
	sess, err := st.Get(sid)
	if err != nil {
		return restoreFS{}, nil, err
	}
	r := restoreFS{mu: &sync.Mutex{}, dirs: map[string]fileSys{}}
	if sess.Cwd != "" {
		// A directory gone, or not a directory now: its files are put
		// back where they were, their directories made again.
		if root, err := os.OpenRoot(sess.Cwd); err == nil {
			r.root = &rootFiles{root, sess.Cwd}
		}
	}
	return r, r.close, nil
}

// maxRestoreRead bounds the present bytes a restore reads to store them
// first (a file that large is refused, nothing restored).
const maxRestoreRead = 1 << 36

// restoreWorkers is how many files a restore writes at once.
const restoreWorkers = 8

// modeInfo is the FileInfo replace keeps the mode of: a restored file
// gets the mode it was recorded with.
type modeInfo struct {
	name string
	mode fs.FileMode
}

func (m modeInfo) Name() string       { return m.name }
func (m modeInfo) Size() int64        { return 0 }
func (m modeInfo) Mode() fs.FileMode  { return m.mode }
func (m modeInfo) ModTime() time.Time { return time.Time{} }
func (m modeInfo) IsDir() bool        { return false }
func (m modeInfo) Sys() any           { return nil }
