package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// The one reader: every file read for a tool (read_file, search_files,
// edit_file) or for instructions (AGENTS.md, .gitignore files) is opened by
// openRegular and read through its regularFile, so that no read can hold a
// turn:
//
//   - Regular files only. The open is O_NONBLOCK, so that opening a FIFO
//     returns at once instead of waiting for a writer in open(2), where no
//     signal or context reaches it; the fstat of the opened descriptor then
//     refuses anything but a regular file, naming its kind.
//   - Bounded in bytes: each caller reads at most its own limit.
//   - Bounded in time and cancellable: a file that says it is regular may
//     still not answer (/proc/kmsg waits for the kernel's next message; a
//     hung network mount). Each open and each read runs on a goroutine the
//     caller stops waiting for when ctx ends or when it has not answered
//     within readStall; the file is then closed and the call fails saying
//     it timed out or was cancelled. The goroutine ends when its system
//     call does (a pollable file such as /proc/kmsg at the close).

// readStall is how long one open or read(2) of a file may go unanswered
// before the reader gives up on it: a local disk answers in milliseconds,
// a busy network file system in well under a second.
var readStall = 5 * time.Second

// fileRead is the read(2) of the reader; a test makes it block.
var fileRead = (*os.File).Read

// beforeOpen runs between openRegular's Stat and its open; a test puts a
// FIFO in the file's place there.
var beforeOpen = func(string) {}

// regularFile is a regular file opened by openRegular, read with ctx and
// readStall bounding each read.
type regularFile struct {
	f    *os.File
	ctx  context.Context
	name string
	info fs.FileInfo
	// lost is set once a read was given up on: the file is closed, and the
	// buffer that read was given belongs to its goroutine for good.
	lost bool
}

// openRegular opens path in fsys for reading if it is a regular file, and
// refuses anything else without blocking; name is the path as the model
// or the user gave it, for messages. flag adds open flags (syscall.O_NOFOLLOW to
// refuse a symbolic link; below a root, whose links are followed only
// inside it, the Lstat alone refuses one). A Stat refuses a FIFO or a device before the
// open, the open is O_NONBLOCK so that one put in the file's place
// meanwhile returns at once, and the fstat of what was opened decides. On
// a regular file O_NONBLOCK changes nothing.
func openRegular(ctx context.Context, fsys fileSys, path, name string, flag int) (*regularFile, error) {
	stat := fsys.Stat
	if flag&syscall.O_NOFOLLOW != 0 {
		stat = fsys.Lstat
	}
	fi, err := stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(fi, name); err != nil {
		return nil, err
	}
	beforeOpen(path)
	type opened struct {
		f   *os.File
		fi  fs.FileInfo
		err error
	}
	res, err := await(ctx, name, "opening", func() opened {
		f, err := fsys.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|flag, 0)
		if err != nil {
			return opened{err: err}
		}
		fi, err := f.Stat()
		return opened{f, fi, err}
	}, func(o opened) {
		if o.f != nil {
			o.f.Close()
		}
	})
	if err == nil {
		err = res.err
	}
	if err == nil {
		err = checkRegular(res.fi, name)
	}
	if err != nil {
		if res.f != nil {
			res.f.Close()
		}
		if errors.Is(err, syscall.ELOOP) && flag&syscall.O_NOFOLLOW != 0 {
			return nil, fmt.Errorf("%s is a symbolic link, not a regular file", name)
		}
		return nil, err
	}
	return &regularFile{f: res.f, ctx: ctx, name: name, info: res.fi}, nil
}

// Read is the file's Read, given up on when ctx ends or after readStall.
// After such an error the file is closed and p must not be used again: a
// late read may still fill it.
func (r *regularFile) Read(p []byte) (int, error) {
	if r.lost {
		return 0, fmt.Errorf("reading %s: given up on", r.name)
	}
	type read struct {
		n   int
		err error
	}
	fileRead := fileRead // the goroutine may outlive a test's seam
	res, err := await(r.ctx, r.name, "reading", func() read {
		n, err := fileRead(r.f, p)
		return read{n, err}
	}, nil)
	if err != nil {
		r.lost = true
		r.f.Close()
		return 0, err
	}
	return res.n, res.err
}

// Close closes the file.
func (r *regularFile) Close() error {
	if r.lost {
		return nil
	}
	return r.f.Close()
}

// readRegular reads the regular file at path whole, as openRegular opens
// it, refusing one of more than limit bytes (tooBig says so, given the
// size found); it returns the bytes and the file's FileInfo.
func readRegular(ctx context.Context, fsys fileSys, path, name string, flag int, limit int64, tooBig func(size int64) error) ([]byte, fs.FileInfo, error) {
	f, err := openRegular(ctx, fsys, path, name, flag)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if f.info.Size() > limit {
		return nil, nil, tooBig(f.info.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(b)) > limit {
		return nil, nil, tooBig(int64(len(b)))
	}
	return b, f.info, nil
}

// await runs call on a goroutine and returns its result, or an error
// saying what was doing what to name when ctx ends or readStall passes
// first. The call then goes on unwatched; abandon, if set, gets its result
// when it comes, to release what it holds.
func await[T any](ctx context.Context, name, doing string, call func() T, abandon func(T)) (T, error) {
	done := make(chan T, 1)
	go func() { done <- call() }()
	timer := time.NewTimer(readStall)
	defer timer.Stop()
	var zero T
	select {
	case res := <-done:
		return res, nil
	case <-ctx.Done():
		giveUp(done, abandon)
		return zero, fmt.Errorf("%s %s: cancelled (%v)", doing, name, context.Cause(ctx))
	case <-timer.C:
		giveUp(done, abandon)
		return zero, fmt.Errorf("%s %s: timed out (no answer in %v); it may be a device or a hung mount", doing, name, readStall)
	}
}

func giveUp[T any](done <-chan T, abandon func(T)) {
	if abandon != nil {
		go func() { abandon(<-done) }()
	}
}

// checkRegular refuses a file that is not a regular one, naming it (name
// is the path as the model gave it) and its kind.
func checkRegular(fi fs.FileInfo, name string) error {
	m := fi.Mode()
	var kind string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a block device"
	case m&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	default:
		kind = "a special file"
	}
	return fmt.Errorf("%s is %s, not a regular file", name, kind)
}
