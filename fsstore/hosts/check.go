package hosts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Check reports each host's last skew past Tolerance (a note; a problem
// past MaxSkew, where the host claims nothing: fsck exits 1); a host in
// step is not news (profile show lists every host's), and the probe files of a measure that
// crashed before removing its probe, older than a minute, which repair
// moves to lostFound. It measures nothing: fsck writes only to repair.
func Check(profileDir string, repair bool, lostFound string) ([]fsstore.Finding, error) {
	dir := filepath.Join(profileDir, "hosts")
	clocks, err := All(profileDir)
	if err != nil {
		return nil, err
	}
	var out []fsstore.Finding
	for _, c := range clocks {
		if !outside(c.Skew(), Tolerance) {
			continue
		}
		f := fsstore.Finding{Path: filepath.Join(dir, Key(c.Host)+".json"),
			What: fmt.Sprintf("clock of %s: %s the filesystem's (measured %s)", c.Host, Describe(c.Skew()), c.MeasuredAt)}
		if outside(c.Skew(), MaxSkew) {
			f.Problem = true
			f.What += fmt.Sprintf(": past %s it claims nothing; set its clock (NTP)", MaxSkew)
		}
		out = append(out, f)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") || !strings.Contains(e.Name(), ".probe-") {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < time.Minute {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f := fsstore.Finding{Path: path, What: "probe of a clock measure that did not finish", Problem: true}
		if repair {
			f.Repaired, f.What = fsstore.MoveToLostFound(path, lostFound, f.What)
		}
		out = append(out, f)
	}
	return out, nil
}
