package fsstore

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// NetFS is a network filesystem, or one that may be (FUSE), as statfs
// names it. hermes needs two things of it: client caches that do not
// hide another host's writes, and flock locks that the servers keep for
// every client. Options says what gives them, where it is known: for
// GlusterFS, measured (README, "Running on several machines"); for the
// others, the filesystem's own options for it, not measured with hermes.
type NetFS struct {
	Type    string // "nfs", "fuse", "cifs", …
	Options string
}

// netFSTypes are the network and cluster filesystems by their statfs
// f_type (Linux's include/uapi/linux/magic.h and the filesystems' own
// sources). FUSE is among them: GlusterFS, sshfs and most network mounts
// in user space are FUSE.
var netFSTypes = map[uint32]NetFS{
	0x65735546: {"fuse", "for GlusterFS, the volume's client-side caches off: performance.stat-prefetch, quick-read, io-cache, read-ahead, write-behind, open-behind and readdir-ahead"},
	0x6969:     {"nfs", "not measured; noac and lookupcache=none, with locking (not nolock, not local_lock), are what NFS offers"},
	0xFF534D42: {"cifs", "cache=none and actimeo=0, without nobrl"},
	0xFE534D42: {"smb2", "cache=none and actimeo=0, without nobrl"},
	0x517B:     {"smbfs", ""},
	0x00C36400: {"ceph", ""},
	0x01021997: {"9p", "cache=none"},
	0x5346414F: {"afs", ""},
	0x6B414653: {"afs", ""},
	0x73757245: {"coda", ""},
	0x564C:     {"ncp", ""},
	0x0BD00BD0: {"lustre", "flock (not localflock)"},
	0x47504653: {"gpfs", ""},
	0x01161970: {"gfs2", "without localflocks"},
	0x7461636F: {"ocfs2", "without localflocks"},
	0x20030528: {"orangefs", ""},
	0x19830326: {"beegfs", "tuneUseGlobalFileLocks=true and tuneRefreshOnGetAttr=true"},
}

// NetFSOf returns the network filesystem whose statfs f_type is t, and
// false for any other filesystem.
func NetFSOf(t uint32) (NetFS, bool) {
	fs, ok := netFSTypes[t]
	return fs, ok
}

// netFSNames are the network and FUSE filesystems by their statfs
// f_fstypename, the name macOS and FreeBSD give a filesystem type in
// place of Linux's number: macOS's NFS, SMB, AFP and WebDAV clients and
// macFUSE (osxfuse before its 4.0, macfuse since); FreeBSD's NFS and SMB
// clients and FUSE, which it names fusefs.<subtype> (fusefs.sshfs).
var netFSNames = map[string]NetFS{
	"nfs":       {"nfs", "not measured; attribute caching off, with the server keeping the locks (not nolocks, nolockd or locallocks)"},
	"smbfs":     {"smbfs", ""},
	"afpfs":     {"afpfs", ""},
	"webdav":    {"webdav", ""},
	"osxfuse":   {"fuse", ""},
	"osxfusefs": {"fuse", ""},
	"macfuse":   {"fuse", ""},
	"fusefs":    {"fuse", ""},
}

// NetFSOfName returns the network filesystem whose statfs f_fstypename is
// name, and false for any other filesystem.
func NetFSOfName(name string) (NetFS, bool) {
	if base, _, ok := strings.Cut(name, "."); ok && base == "fusefs" {
		name = base
	}
	fs, ok := netFSNames[name]
	return fs, ok
}

// NetFSMarker is the file in a profile directory that remembers the
// network filesystem the profile's user was last warned of.
const NetFSMarker = ".netfs-warned"

// NetFSOnce reports the network filesystem the profile directory dir is
// on, the first time it is asked for that profile and that filesystem
// type: it then writes the type to <dir>/.netfs-warned (atomically, 0600),
// and later calls report nothing until the type changes. A directory on a
// local filesystem, or not made yet, reports nothing, at the cost of one
// statfs. A marker that cannot be written (a read-only profile, a
// symlinked profile directory, which is not written through) is no error:
// the filesystem is reported again the next time.
func NetFSOnce(dir string) (NetFS, bool) {
	fs, ok := NetworkFS(dir)
	if !ok {
		return NetFS{}, false
	}
	marker := filepath.Join(dir, NetFSMarker)
	if old, err := os.ReadFile(marker); err == nil && string(bytes.TrimSpace(old)) == fs.Type {
		return NetFS{}, false
	}
	if EnsureDir(dir) == nil {
		WriteFileAtomic(marker, []byte(fs.Type+"\n"))
	}
	return fs, true
}
