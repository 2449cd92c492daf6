package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hermes/hermes/fsstore"
)

// tempPrefix starts the name of every temp file write_file and edit_file
// make beside the file they replace:
// .hermes-tmp-<pid>-<random>-<the file's name, cut to 64 bytes>. A process
// killed between the temp file's creation and its rename (kill -9, a power
// cut) leaves one; the next write in that directory removes those whose
// process is gone (removeStale).
const tempPrefix = ".hermes-tmp-"

// keptMode is what of an existing file's mode a write keeps: its
// permission bits and its setuid, setgid and sticky bits.
const keptMode = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// beforeRename runs between the temp file's close and its rename; a test
// kills the process there.
var beforeRename = func(string) {}

// replace writes data to path in fsys atomically (name is the path as the
// model gave it, for messages): a temp file beside it (created 0666, which
// the kernel cuts by the umask), write; for an existing file (old), its
// owner and group when they differ (as root), then its mode exactly,
// setuid, setgid and sticky bits included, checked by fstat; sync, close,
// rename, sync of the directory. A mode that cannot be kept (a setuid or
// setgid file whose owner or group the new file cannot take) refuses the
// write: nothing is replaced, rather than a file silently changed. The
// mode is set on the temp file before the rename, so that the file is
// never seen with another. ready, when set, is waited for before the
// rename, and its error refuses the write: the checkpoint of the file's
// prior bytes, stored while the temp file is written (checkpoint.go).
func replace(fsys fileSys, path, name string, data []byte, old fs.FileInfo, ready func() error) error {
	if err := replaceUnsynced(fsys, path, name, data, old, ready); err != nil {
		return err
	}
	return syncDir(fsys, filepath.Dir(path))
}

// replaceUnsynced is replace without the sync of the directory: the new
// file is whole on disk, but after a crash the name may still show the
// old one until the directory is synced, which a writer of many files in
// one directory (a restore) does once for all of them.
func replaceUnsynced(fsys fileSys, path, name string, data []byte, old fs.FileInfo, ready func() error) (err error) {
	dir := filepath.Dir(path)
	removeStale(fsys, dir)
	var tmp *os.File
	var tmpName string
	for range 10 {
		tmpName = filepath.Join(dir, tempName(filepath.Base(path)))
		tmp, err = fsys.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			fsys.Remove(tmpName)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if old != nil {
		if err = keepMode(tmp, old, name); err != nil {
			return err
		}
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if ready != nil {
		if err = ready(); err != nil {
			return err
		}
	}
	beforeRename(tmpName)
	return fsys.Rename(tmpName, path)
}

// keepMode gives tmp old's owner, group and mode, or says why it cannot.
func keepMode(tmp *os.File, old fs.FileInfo, name string) error {
	want := old.Mode() & keptMode
	if st, ok := old.Sys().(*syscall.Stat_t); ok {
		now, err := tmp.Stat()
		if err != nil {
			return err
		}
		if cur, ok := now.Sys().(*syscall.Stat_t); ok && (cur.Uid != st.Uid || cur.Gid != st.Gid) {
			// Only root may give a file away; another writer's file
			// changes owner on a rewrite, as with any editor that saves
			// by rename, but a setuid or setgid one must not.
			err := tmp.Chown(int(st.Uid), int(st.Gid))
			if err != nil && want&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				return fmt.Errorf("%s is setuid or setgid (mode %s) and owned by uid %d, gid %d, which the new file cannot be given (%v); nothing written", name, want, st.Uid, st.Gid, err)
			}
		}
	}
	if err := tmp.Chmod(want); err != nil {
		return err
	}
	now, err := tmp.Stat()
	if err != nil {
		return err
	}
	if got := now.Mode() & keptMode; got != want {
		return fmt.Errorf("%s's mode %s cannot be kept (the system gave the new file %s); nothing written", name, want, got)
	}
	return nil
}

// writable refuses an existing file without its owner's write bit, which
// hermes does not rewrite even where it could (as root): the user made it
// read-only.
func writable(fi fs.FileInfo, name string) error {
	if fi.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("%s is read-only (mode %s); nothing written", name, fi.Mode()&keptMode)
	}
	return nil
}

// tempName is a new temp file name for the file base: tempPrefix, this
// process's id, a random number and base, cut so that the name stays
// within the 255 bytes a name may have.
func tempName(base string) string {
	if len(base) > 64 {
		base = strings.ToValidUTF8(base[:64], "")
	}
	return tempPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(rand.Uint64(), 36) + "-" + base
}

// removeStale removes from dir the temp files of writes whose process is
// no longer running on this host: those a kill -9 or a crash left. One
// whose process runs (or whose pid another process has taken since) is
// left; what cannot be removed is left for the next write.
func removeStale(fsys fileSys, dir string) {
	entries, err := readDir(fsys, dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tempPrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			fsys.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// refuseLoneSurrogate refuses arguments (raw JSON) that hold a lone
// surrogate escape, as every other entry point does: decoded, it would
// be written as U+FFFD, not as what the model sent.
func refuseLoneSurrogate(raw json.RawMessage) error {
	if at := fsstore.LoneSurrogate(raw); at >= 0 {
		return fmt.Errorf("the arguments hold %s, a lone surrogate escape (half of a UTF-16 pair), which is not Unicode; nothing written", raw[at:at+6])
	}
	return nil
}

// syncDir is fsstore.SyncDir in fsys: it commits a rename in dir.
func syncDir(fsys fileSys, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
