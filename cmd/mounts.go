package cmd

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// mount is one entry of the system's mount table: where a filesystem is
// mounted and its type as the table names it.
type mount struct {
	Point  string
	FSType string
}

// mountsEnv is a test-only mount table: a file of /proc/self/mountinfo
// lines read in place of the system's (on every system), so that an
// end-to-end script can make a profile on a local disk look as if it were
// on a network filesystem.
const mountsEnv = "HERMES_TEST_MOUNTS"

// mounts returns the mount table: the file $HERMES_TEST_MOUNTS names,
// else the system's (systemMounts), read without asking any mounted
// filesystem anything.
func mounts() ([]mount, error) {
	if path := os.Getenv(mountsEnv); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return parseMountinfo(f)
	}
	return systemMounts()
}

// parseMountinfo reads mount entries in the format of Linux's
// /proc/self/mountinfo (proc(5)): the mount point is the fifth field,
// with space, tab, newline and backslash written as octal escapes; the
// type is the first field after the "-" that ends the optional fields.
// A line that does not have that shape is skipped.
func parseMountinfo(r io.Reader) ([]mount, error) {
	var ms []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 7 {
			continue
		}
		for i := 6; i < len(f)-1; i++ {
			if f[i] == "-" {
				ms = append(ms, mount{Point: unescapeOctal(f[4]), FSType: f[i+1]})
				break
			}
		}
	}
	return ms, sc.Err()
}

// unescapeOctal undoes the kernel's \ooo escapes of a mount point.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// linuxNetFSTypes are the network, cluster and FUSE filesystems by the
// type Linux's mount table gives them (FUSE's are "fuse.<subtype>":
// fuse.glusterfs, fuse.sshfs). Any of them can leave a call without an
// answer for as long as its server is away.
var linuxNetFSTypes = map[string]bool{
	"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "smbfs": true, "ceph": true,
	"9p": true, "afs": true, "coda": true, "ncpfs": true, "lustre": true, "gpfs": true,
	"gfs2": true, "ocfs2": true, "orangefs": true, "pvfs2": true, "beegfs": true,
	"glusterfs": true, "fuse": true, "fuseblk": true,
}

// isNetFSType reports whether a mount table's type names a network or
// FUSE filesystem: Linux's names, and macOS's and FreeBSD's
// (fsstore.NetFSOfName).
func isNetFSType(t string) bool {
	if linuxNetFSTypes[t] || strings.HasPrefix(t, "fuse.") {
		return true
	}
	_, ok := fsstore.NetFSOfName(t)
	return ok
}

// mountOf returns the entry of ms whose mount point is the longest prefix
// of the clean absolute path p (the last such entry, the one on top, when
// several filesystems are mounted on one point), and false when none is.
func mountOf(ms []mount, p string) (mount, bool) {
	var best mount
	found := false
	for _, m := range ms {
		if !within(p, m.Point) || (found && len(m.Point) < len(best.Point)) {
			continue
		}
		best, found = m, true
	}
	return best, found
}

// within reports whether the clean absolute path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// netFSPath returns the directory whose filesystem a command on the
// profile path p (a profile's directory, or the root when the profile's
// name is yet to be read from it) would ask and wait for, when that
// filesystem is a network or FUSE one: p itself when it is on one, else
// the mount point of the first such filesystem mounted below p. It finds
// it from the mount table alone, without a call to any mounted
// filesystem: p's components are resolved as symbolic links (lstat,
// readlink) only while they are on a local one, and only when the table
// has such a filesystem at all. False when p and everything below it are
// on local filesystems, or the table cannot be read.
func netFSPath(p string) (string, bool) {
	ms, err := mounts()
	if err != nil || !slices.ContainsFunc(ms, func(m mount) bool { return isNetFSType(m.FSType) }) {
		return "", false
	}
	p = resolveLocal(ms, filepath.Clean(p))
	if m, ok := mountOf(ms, p); ok && isNetFSType(m.FSType) {
		return p, true
	}
	for _, m := range ms {
		if m.Point != p && within(m.Point, p) && isNetFSType(m.FSType) {
			return m.Point, true
		}
	}
	return "", false
}

// resolveLocal returns the absolute path p with the symbolic links among
// its components resolved, as far as they are on local filesystems: it
// stops at the first component on a network or FUSE one (ms), which is
// not asked, and at anything it cannot read.
func resolveLocal(ms []mount, p string) string {
	for range 40 { // links followed, as Linux's limit
		cur := "/"
		rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
		relinked := false
		for i, name := range rest {
			if name == "" {
				continue
			}
			next := filepath.Join(cur, name)
			if m, ok := mountOf(ms, next); ok && isNetFSType(m.FSType) {
				return filepath.Join(append([]string{next}, rest[i+1:]...)...)
			}
			fi, err := os.Lstat(next)
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				cur = next
				continue
			}
			target, err := os.Readlink(next)
			if err != nil {
				return p
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			p = filepath.Join(append([]string{target}, rest[i+1:]...)...)
			relinked = true
			break
		}
		if !relinked {
			return p
		}
	}
	return p
}
