package fsstore

import "testing"

// The statfs f_types that name a network filesystem, and some local ones
// that must not: tmpfs's magic is one digit from 9p's.
func TestNetFSOf(t *testing.T) {
	for magic, want := range map[uint32]string{
		0x65735546: "fuse",
		0x6969:     "nfs",
		0xFF534D42: "cifs",
		0xFE534D42: "smb2",
		0x00C36400: "ceph",
		0x01021997: "9p",
		0x0BD00BD0: "lustre",
		0xEF53:     "", // ext2/3/4
		0x58465342: "", // xfs
		0x9123683E: "", // btrfs
		0x01021994: "", // tmpfs
		0x794C7630: "", // overlayfs
		0x2FC12FC1: "", // zfs
		0:          "",
	} {
		fs, ok := NetFSOf(magic)
		if ok != (want != "") || fs.Type != want {
			t.Errorf("NetFSOf(%#x) = %q, %v; want %q", magic, fs.Type, ok, want)
		}
	}
}

// The statfs f_fstypenames of macOS and FreeBSD that name a network or
// FUSE filesystem, and local ones that must not.
func TestNetFSOfName(t *testing.T) {
	for name, want := range map[string]string{
		"nfs":          "nfs",
		"smbfs":        "smbfs",
		"afpfs":        "afpfs",
		"webdav":       "webdav",
		"osxfuse":      "fuse",
		"macfuse":      "fuse",
		"fusefs":       "fuse",
		"fusefs.sshfs": "fuse",
		"apfs":         "", // macOS
		"hfs":          "",
		"devfs":        "",
		"msdos":        "",
		"exfat":        "",
		"ufs":          "", // FreeBSD
		"zfs":          "",
		"tmpfs":        "",
		"nullfs":       "",
		"fusefsx":      "",
		"":             "",
	} {
		fs, ok := NetFSOfName(name)
		if ok != (want != "") || fs.Type != want {
			t.Errorf("NetFSOfName(%q) = %q, %v; want %q", name, fs.Type, ok, want)
		}
	}
}
