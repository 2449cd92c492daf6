package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Check reads the log and every skill. It reports a torn tail or corrupt
// line of the log, a SKILL.md that does not parse or names another skill
// (a problem, not repaired: the user's file), and a directory an
// interrupted change left (.tmp-*, older than a minute; repair moves it to
// lostFound). A file inside a skill is never checked as a hermes record.
func (s *Store) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []fsstore.Finding
	if _, err := os.Lstat(s.LogPath()); err == nil {
		out = append(out, fsstore.CheckLog(s.LogPath(), s.lockPath(), s.LockTimeout, repair)...)
	}
	for _, e := range entries {
		path := filepath.Join(s.Dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), ".tmp-"):
			fi, err := os.Lstat(path)
			if err != nil || time.Since(fi.ModTime()) < time.Minute {
				continue
			}
			f := fsstore.Finding{Path: path, What: "directory of an interrupted skill change", Problem: true}
			if repair {
				f.Repaired, f.What = fsstore.MoveToLostFound(path, lostFound, f.What)
			}
			out = append(out, f)
		case fsstore.IsCommon(e.Name()) && !e.IsDir():
			fsstore.CheckCommon(e, path, repair, lostFound, func(f fsstore.Finding) { out = append(out, f) })
		case strings.HasPrefix(e.Name(), ".") || !e.IsDir():
		default:
			if _, err := os.Lstat(filepath.Join(path, FileName)); errors.Is(err, os.ErrNotExist) {
				continue
			}
			if _, _, err := s.Get(e.Name()); err != nil {
				out = append(out, fsstore.Finding{Path: filepath.Join(path, FileName), What: err.Error() + " (not repaired: fix the file)", Problem: true})
			}
		}
	}
	return out, nil
}
