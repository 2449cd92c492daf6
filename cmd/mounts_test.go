package cmd

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Lines as Linux writes them in /proc/self/mountinfo: optional fields of
// any number before the "-", a mount point with an escaped space, a FUSE
// filesystem named by its subtype, and a line cut short.
const sampleMountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
25 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
40 22 0:35 / /mnt/gluster rw,relatime shared:20 master:3 - fuse.glusterfs 10.199.0.1:/hermes rw,user_id=0,group_id=0
41 22 0:36 / /mnt/my\040nfs rw,relatime - nfs4 srv:/export rw,vers=4.2
42 40 8:2 / /mnt/gluster/local rw,relatime - ext4 /dev/sda2 rw
43 22 0:37 / /srv/home rw,relatime - xfs /dev/sdb1 rw
44 43 0:38 / /srv/home/.hermes/profiles/shared rw - cifs //nas/h rw
45 22 0:39 / /broken rw
`

func TestParseMountinfo(t *testing.T) {
	ms, err := parseMountinfo(strings.NewReader(sampleMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []mount{
		{"/", "ext4"}, {"/proc", "proc"}, {"/mnt/gluster", "fuse.glusterfs"}, {"/mnt/my nfs", "nfs4"},
		{"/mnt/gluster/local", "ext4"}, {"/srv/home", "xfs"}, {"/srv/home/.hermes/profiles/shared", "cifs"},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("parseMountinfo =\n%q\nwant\n%q", ms, want)
	}
}

// The filesystem of a path is the mount whose point is its longest
// prefix, component by component (/mnt/glusterfs is not below
// /mnt/gluster), the last one mounted on a point winning.
func TestMountOf(t *testing.T) {
	ms, _ := parseMountinfo(strings.NewReader(sampleMountinfo + "46 40 0:40 / /mnt/gluster rw - tmpfs tmpfs rw\n"))
	for _, c := range []struct{ path, point, fstype string }{
		{"/home/u/.hermes", "/", "ext4"},
		{"/mnt/gluster", "/mnt/gluster", "tmpfs"},
		{"/mnt/gluster/home/profiles/default", "/mnt/gluster", "tmpfs"},
		{"/mnt/glusterfs/home", "/", "ext4"},
		{"/mnt/gluster/local/home", "/mnt/gluster/local", "ext4"},
		{"/mnt/my nfs/h", "/mnt/my nfs", "nfs4"},
	} {
		m, ok := mountOf(ms, c.path)
		if !ok || m.Point != c.point || m.FSType != c.fstype {
			t.Errorf("mountOf(%q) = %q %v, want %q on %q", c.path, m, ok, c.fstype, c.point)
		}
	}
}

func TestIsNetFSType(t *testing.T) {
	for _, c := range []struct {
		t   string
		net bool
	}{
		{"nfs4", true}, {"fuse.glusterfs", true}, {"fuse.sshfs", true}, {"fuseblk", true}, {"cifs", true},
		{"ceph", true}, {"fusefs.sshfs", true}, {"smbfs", true}, {"macfuse", true},
		{"ext4", false}, {"xfs", false}, {"tmpfs", false}, {"apfs", false}, {"ufs", false}, {"zfs", false}, {"overlay", false},
	} {
		if got := isNetFSType(c.t); got != c.net {
			t.Errorf("isNetFSType(%q) = %v, want %v", c.t, got, c.net)
		}
	}
}

// setMounts makes the mount table the given mountinfo lines for the rest
// of the test.
func setMounts(t *testing.T, lines string) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(mountsEnv, path)
}

// netFSPath finds the network filesystem a profile path is on, or one
// mounted below it (a profile of its own on a share), from the table
// alone; local paths have none.
func TestNetFSPath(t *testing.T) {
	setMounts(t, sampleMountinfo)
	for _, c := range []struct{ path, want string }{
		{"/mnt/gluster/h/profiles/default", "/mnt/gluster/h/profiles/default"},
		{"/mnt/my nfs/h", "/mnt/my nfs/h"},
		{"/srv/home/.hermes", "/srv/home/.hermes/profiles/shared"},
		{"/srv/home/.hermes/profiles/default", ""},
		{"/mnt/gluster/local/h", ""},
	} {
		got, ok := netFSPath(c.path)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("netFSPath(%q) = %q %v, want %q", c.path, got, ok, c.want)
		}
	}
}

// A home reached through a symbolic link on a local disk is judged where
// the link leads: here, a network mount (the table's, faked at a
// directory of the test's).
func TestNetFSPathThroughLink(t *testing.T) {
	dir := t.TempDir()
	share := filepath.Join(dir, "share")
	if err := os.Mkdir(share, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("share", filepath.Join(dir, "home")); err != nil {
		t.Fatal(err)
	}
	setMounts(t, "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n40 22 0:35 / "+share+" rw - fuse.sshfs h:/ rw\n")
	got, ok := netFSPath(filepath.Join(dir, "home", "profiles", "default"))
	if want := filepath.Join(share, "profiles", "default"); !ok || got != want {
		t.Fatalf("netFSPath through a link = %q %v, want %q", got, ok, want)
	}
	if got, ok := netFSPath(filepath.Join(dir, "local")); ok {
		t.Fatalf("netFSPath of a local directory = %q, want none", got)
	}
}

// BenchmarkNetFSPath is what a command on a local disk pays to be told
// that it needs no watched child: the mount table read and the home's
// path checked for links, component by component.
func BenchmarkNetFSPath(b *testing.B) {
	home := filepath.Join(b.TempDir(), "home")
	for b.Loop() {
		if p, ok := netFSPath(home); ok {
			b.Fatalf("%s is on a network filesystem (%s)", home, p)
		}
	}
}
