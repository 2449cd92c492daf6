package sessions

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// lineReader reads the transcripts of one directory for search and fsck:
// one per worker, with a buffer it keeps, through raw descriptors (an
// *os.File costs a poller registration and a finalizer per file, which
// show at 100,000 sessions).
type lineReader struct {
	dir   string
	dirfd int
	buf   []byte
}

func newLineReader(dir string, dirfd int) *lineReader {
	return &lineReader{dir: dir, dirfd: dirfd, buf: make([]byte, 256<<10)}
}

// fileStat is what a reader needs of a file's attributes.
type fileStat struct {
	Mode uint32 // type and permission bits, as in unix.Stat_t
	Size int64
}

// open opens name in the reader's directory for reading with open (one of
// seam.OpenRead, which does not follow a symlink, or openFollow).
func (r *lineReader) open(name string, open func(dirfd int, name string) (int, error)) (int, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = open(r.dirfd, name)
		return err
	})
	return fd, r.pathError("open", name, err)
}

func openFollow(dirfd int, name string) (int, error) {
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// each calls fn with the complete lines of the first size bytes of fd (the
// file name), a block of whole lines at a time, each block with the offset
// of its first byte, until fn returns false. It returns the offset and the
// size of the bytes after the last newline: a torn tail, or a line an
// append is writing (size 0 when there are none). A file cut short since
// its size was taken ends where it ends.
func (r *lineReader) each(fd int, name string, size int64, fn func(block []byte, off int64) bool) (tailOff, tailSize int64, err error) {
	var off int64 // of r.buf[0]
	left, n := size, 0
	for left > 0 {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		var got int
		err := ignoringEINTR(func() (err error) {
			got, err = unix.Read(fd, r.buf[n:n+int(min(int64(len(r.buf)-n), left))])
			return err
		})
		if err != nil {
			return 0, 0, r.pathError("read", name, err)
		}
		if got == 0 {
			break
		}
		n += got
		left -= int64(got)
		end := bytes.LastIndexByte(r.buf[:n], '\n') + 1
		if end > 0 && !fn(r.buf[:end], off) {
			return 0, 0, nil
		}
		off += int64(end)
		n = copy(r.buf, r.buf[end:n])
	}
	return off, int64(n), nil
}

// pathError is err as os functions report it, naming the file.
func (r *lineReader) pathError(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: filepath.Join(r.dir, name), Err: err}
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// eachOnWorkers runs jobs 0, 1, … n-1 on one worker per processor. Each
// worker calls newWorker once, for its own state, and the function it
// returns for each job it takes. Workers take jobs by an atomic counter:
// no channel and no lock per job.
func eachOnWorkers(n int, newWorker func() func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job := newWorker()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				job(i)
			}
		}()
	}
	wg.Wait()
}
