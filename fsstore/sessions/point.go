package sessions

import (
	"os"
	"syscall"

	"github.com/hermes/hermes/fsstore"
)

// Point is where a transcript ended when it was read (MessagesAt) or
// appended to (AppendAt): its file (device and inode), the size of the
// writes completed in it and its modification time. A transcript is
// appended to and never rewritten in place: a rewrite (a forced save, a
// repair that drops messages) is another file, and a torn tail moved
// aside or cut back changes the size; a rewrite that lands on an inode
// freed since, with the same size, has a later time, but for one written
// in the same tick of a coarse clock. So a caller that keeps what it
// read, and then appends, knows that the transcript is still what it read
// followed by its own lines when the append's From is the Point of its
// read (or of its last append): nothing else wrote to it in between, in
// this process or any other.
type Point struct {
	file os.FileInfo
	size int64
}

// Extent is where an append began and ended.
type Extent struct{ From, To Point }

// Same reports whether p and q are the same file at the same size. A
// transcript that is empty, or has no file yet, is the same as any other
// empty one: no message is missed. The zero Point is such an empty
// transcript.
func (p Point) Same(q Point) bool {
	if p.size == 0 && q.size == 0 {
		return true
	}
	return p.file != nil && q.file != nil && p.size == q.size && os.SameFile(p.file, q.file) &&
		p.file.ModTime().Equal(q.file.ModTime())
}

// point is where the view ends; a file that cannot be stated gives a
// Point that is the same as none.
func (t *Transcript) point() Point {
	if t.f == nil {
		return Point{}
	}
	fi, err := t.f.Stat()
	if err != nil {
		return Point{size: -1}
	}
	return Point{file: fi, size: t.size}
}

// IsAt reports whether id's transcript still ends at p: the same file,
// of p's size (its size read fresh, as an append reads it) and with p's
// modification time, so that nothing has been written to it since p was
// taken, in this process or another. It costs an open and two stats, not
// a read: a turn that holds what it read (MessagesAt) and what it
// appended takes a tail from that (sessions' doc.go, "A transcript read
// once a turn"). A transcript that cannot be opened is at p only when p
// is an empty one.
func (s *Store) IsAt(id string, p Point) bool {
	if fsstore.CheckID("session id", id) != nil {
		return false
	}
	f, size, err := fsstore.OpenSizedFlag(s.logPath(id), os.O_RDONLY|syscall.O_NOFOLLOW)
	if err != nil {
		return false
	}
	if f == nil {
		return p.Same(Point{})
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && p.Same(Point{file: fi, size: size})
}
