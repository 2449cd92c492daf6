package fsstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Finding is one thing fsck noticed. A Problem makes fsck fail until it is
// repaired; a note (Problem false) is only said: the copies kept aside by
// recovery are notes, since they are the record of a repair, not damage.
type Finding struct {
	Path     string `json:"path"`
	What     string `json:"what"`
	Problem  bool   `json:"problem"`
	Repaired bool   `json:"repaired"`
}

// strayAge is how old a temp file must be before fsck calls it stray: a
// younger one may belong to a write in progress.
const strayAge = time.Minute

// asideMarkers are the infixes of the copies that recovery keeps: each
// copy is named <file><marker><unix>, with ".N" after it when that name was
// taken (freeName).
var asideMarkers = []string{".torn-", ".corrupt-", ".replaced-", ".uncommitted-"}

// AsideOf reports whether name is the name of a copy that recovery kept
// aside (<file>.torn-<unix>, .corrupt-, .replaced-, .uncommitted-, each
// with an optional .N), and of which file: the name with that suffix cut.
// It reads the whole suffix, so a record whose id merely contains a marker
// ("a.torn-x") is no copy.
func AsideOf(name string) (string, bool) {
	// The marker ends in '-', so a '.' before the last digits is
	// freeName's, never the unix time's.
	rest := name
	if i := strings.LastIndexByte(rest, '.'); i >= 0 && allDigits(rest[i+1:]) {
		rest = rest[:i]
	}
	for _, m := range asideMarkers {
		i := strings.LastIndex(rest, m)
		if i > 0 && allDigits(rest[i+len(m):]) {
			return rest[:i], true
		}
	}
	return "", false
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CopiesAside returns the paths of the copies kept aside in dir of the
// files named names (base names such as "abc.jsonl"), matched exactly by
// AsideOf: never a file of another record whose name begins with one of
// them.
func CopiesAside(dir string, names ...string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if of, ok := AsideOf(e.Name()); ok && slices.Contains(names, of) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// CheckCommon handles the entries every store directory may hold: copies
// kept aside by recovery (a note) and stray temp files (a problem; repair
// moves them to lostFound). It reports whether it handled the entry.
func CheckCommon(e os.DirEntry, path string, repair bool, lostFound string, add func(Finding)) bool {
	return CheckCommonName(e.Name(), path, repair, lostFound, add)
}

// CheckCommonName is CheckCommon for the entry name, at path, of a
// listing that kept only the names.
func CheckCommonName(name, path string, repair bool, lostFound string, add func(Finding)) bool {
	switch {
	case isAside(name):
		add(Finding{Path: path, What: "kept aside by an earlier recovery"})
	case isTemp(name):
		fi, err := os.Lstat(path)
		if err != nil || time.Since(fi.ModTime()) < strayAge {
			return true
		}
		f := Finding{Path: path, What: "stray temp file of an interrupted write", Problem: true}
		if repair {
			f.Repaired, f.What = MoveToLostFound(path, lostFound, f.What)
		}
		add(f)
	default:
		return false
	}
	return true
}

// IsCommon reports whether CheckCommon handles the entry name.
func IsCommon(name string) bool { return isAside(name) || isTemp(name) }

func isTemp(name string) bool { return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-") }

func isAside(name string) bool {
	_, ok := AsideOf(name)
	return ok
}

// MoveToLostFound moves a stray file to the profile's lostFound directory
// and returns whether it did, with what extended to say where or why not.
func MoveToLostFound(path, lostFound, what string) (bool, string) {
	if err := EnsureDir(lostFound); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	dst := filepath.Join(lostFound, filepath.Base(path))
	if err := os.Rename(path, dst); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	SyncDir(filepath.Dir(path))
	SyncDir(lostFound)
	return true, what + "; moved to " + dst
}

// CheckTree is the check of a store made only of documents and logs: it
// walks dir and reports documents (*.json) that do not parse, logs
// (*.jsonl) with a torn tail or a corrupt record, copies kept aside and
// stray temp files. With repair, unreadable documents are moved aside
// (quarantined), torn tails cut off into <log>.torn-<unix> under the lock
// lockFor names (the one the log's writers take), and stray temp files
// moved to lostFound.
func CheckTree(dir string, lockFor func(log string) string, timeout time.Duration, repair bool, lostFound string) ([]Finding, error) {
	var out []Finding
	add := func(f Finding) { out = append(out, f) }
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) && path == dir {
			return filepath.SkipDir
		}
		if err != nil || e.IsDir() {
			return err
		}
		name := e.Name()
		switch {
		case CheckCommon(e, path, repair, lostFound, add):
		case strings.HasSuffix(name, ".json"):
			var v any
			if err := ReadDoc(path, &v); err != nil {
				var corrupt *CorruptError
				if errors.As(err, &corrupt) {
					err = corrupt.Err
				}
				f := Finding{Path: path, What: "document does not parse: " + err.Error(), Problem: true}
				if repair {
					if dst, err := MoveAside(path, fmt.Sprintf(".corrupt-%d", time.Now().Unix())); err == nil {
						f.Repaired, f.What = true, f.What+"; moved aside to "+dst
					}
				}
				add(f)
			}
		case strings.HasSuffix(name, ".jsonl"):
			out = append(out, CheckLog(path, lockFor(path), timeout, repair)...)
		}
		return nil
	})
	return out, err
}

// CheckLog checks one JSONL log: every complete line parses; a torn tail
// is reported and, with repair, cut off under lock.
func CheckLog(path, lock string, timeout time.Duration, repair bool) []Finding {
	f, err := os.Open(path)
	if err != nil {
		return []Finding{{Path: path, What: err.Error(), Problem: true}}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return []Finding{{Path: path, What: err.Error(), Problem: true}}
	}
	var out []Finding
	torn, err := ScanLines(f, fi.Size(), func(line []byte, off int64) error {
		if !json.Valid(line) {
			out = append(out, Finding{Path: path, What: fmt.Sprintf("corrupt record at offset %d (not repaired: it is not at the tail)", off), Problem: true})
		}
		return nil
	})
	if err != nil {
		return append(out, Finding{Path: path, What: err.Error(), Problem: true})
	}
	if torn != nil {
		fd := Finding{Path: path, What: fmt.Sprintf("torn tail of %d bytes at offset %d", torn.Size, torn.Offset), Problem: true}
		if repair {
			if unlock, err := Lock(lock, timeout); err == nil {
				if lf, moved, err := OpenAppend(path, time.Now()); err == nil {
					lf.Close()
					fd.Repaired, fd.What = true, fd.What+"; moved aside to "+moved
				}
				unlock()
			}
		}
		out = append(out, fd)
	}
	return out
}
