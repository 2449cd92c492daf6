package fsstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// KeyLifetime is how long the record of an idempotency key of a command
// (tasks run, kanban create and comment, cron run --key) is kept after
// it was written: a retry with the key within it stores nothing twice;
// one after it is a new key. A script retries within minutes or hours.
const KeyLifetime = 7 * 24 * time.Hour

// sweepEvery is how often a key directory is swept (SweepDaily).
const sweepEvery = 24 * time.Hour

// sweptName is the file whose time says when a key directory was last
// swept.
const sweptName = ".swept"

// SweepKeys removes the records of the key directory dir written more
// than KeyLifetime ago, at most once a day (SweepDaily). Each record goes
// under its lock (<record>.lock), taken without waiting, and the lock
// with it; so does a lock left without its record. A record held, one
// written again since, and one that cannot be removed stay for the next
// sweep; a directory's other files (temp files, copies aside) are
// fsck's. A keyed command calls it after it wrote a key's record: its
// failures are not the command's.
func SweepKeys(dir string) {
	SweepDaily(dir, func(now time.Time) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		names := make(map[string]bool, len(entries))
		for _, e := range entries {
			names[e.Name()] = true
		}
		cutoff := now.Add(-KeyLifetime)
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || IsCommon(name) || !e.Type().IsRegular() || strings.HasSuffix(name, ".waiters") {
				continue
			}
			if rec, ok := strings.CutSuffix(name, ".lock"); ok && names[rec] {
				continue // swept with its record
			}
			pruneKey(filepath.Join(dir, strings.TrimSuffix(name, ".lock")), cutoff)
		}
	})
}

// pruneKey removes the key record at path and its lock when the record
// (or, without one, its lock) was last written before cutoff, under the
// lock, taken without waiting.
func pruneKey(path string, cutoff time.Time) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		fi, err = os.Lstat(path + ".lock")
	}
	if err != nil || !fi.ModTime().Before(cutoff) {
		return
	}
	unlock, err := Lock(path+".lock", 0)
	if err != nil {
		return
	}
	defer unlock()
	// Read again under the lock: a record written since stays. (Taking
	// the lock stamped its file: only the record's time counts now.)
	if fi, err := os.Lstat(path); err == nil && !fi.ModTime().Before(cutoff) {
		return
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	os.Remove(path + ".lock")
}

// SweepDaily calls sweep (with the time) at most once a day for the
// directory dir, as its file .swept says: stamped before the sweep, so
// that the commands that follow, on this host or another, skip theirs
// meanwhile. A directory that is missing, or whose stamp cannot be
// written, is not swept.
func SweepDaily(dir string, sweep func(now time.Time)) {
	marker := filepath.Join(dir, sweptName)
	now := time.Now()
	fi, err := os.Lstat(marker)
	switch {
	case err == nil && now.Sub(fi.ModTime()) < sweepEvery && fi.ModTime().Before(now.Add(sweepEvery)):
		return
	case err == nil:
		if os.Chtimes(marker, now, now) != nil {
			return
		}
	case errors.Is(err, os.ErrNotExist):
		f, err := os.OpenFile(marker, os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, FileMode)
		if err != nil {
			return
		}
		f.Close()
	default:
		return
	}
	sweep(now)
}
