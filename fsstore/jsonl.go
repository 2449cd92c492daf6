package fsstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore/internal/seam"
)

// TornTail describes bytes after the last newline of a log: a record whose
// write a crash cut short. It was never acknowledged, so readers skip it
// and the next writer moves it aside.
type TornTail struct {
	Path   string
	Offset int64 // where the partial record starts
	Size   int64 // how many bytes it has
}

func (t *TornTail) String() string {
	return fmt.Sprintf("%s: torn tail of %d bytes at offset %d skipped (the next write moves it aside)", t.Path, t.Size, t.Offset)
}

// ScanLines calls fn for each complete line of f (without its newline) in
// the first size bytes, with the line's offset. The slice passed to fn is
// only valid during the call. Bytes after the last newline are not passed to
// fn; they are returned as a *TornTail. An error from fn stops the scan and
// is returned. Memory stays at one line plus a buffer.
func ScanLines(f *os.File, size int64, fn func(line []byte, off int64) error) (*TornTail, error) {
	return ScanLinesFrom(f, 0, size, fn)
}

// ScanLinesFrom is ScanLines from offset from, which must begin a line:
// for a reader that has read the lines before it already.
func ScanLinesFrom(f *os.File, from, size int64, fn func(line []byte, off int64) error) (*TornTail, error) {
	// The buffer is no larger than what there is to read: a short log (a
	// transcript read at each of a turn's provider calls) would otherwise
	// pay for a 256 KB buffer, zeroed, at each scan. It has a byte more, so
	// that a read at the end finds io.EOF in the same call.
	r := bufio.NewReaderSize(io.NewSectionReader(f, from, size-from), int(min(size-from+1, 256<<10)))
	off := from
	var long []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if err == io.EOF {
			if len(line) > 0 {
				return &TornTail{Path: f.Name(), Offset: off, Size: int64(len(line))}, nil
			}
			return nil, nil
		}
		if err != nil {
			return nil, PathErr("read", f.Name(), err)
		}
		if err := fn(line[:len(line)-1], off); err != nil {
			return nil, err
		}
		off += int64(len(line))
	}
}

// LastLine returns the last complete line of the first size bytes of f and
// its offset, reading backwards, so its cost does not grow with the log. It
// returns a nil line for a log with no complete line.
func LastLine(f *os.File, size int64) ([]byte, int64, error) {
	start, end, err := LastLineSpan(f, size)
	if err != nil || start < 0 {
		return nil, 0, err
	}
	line := make([]byte, end-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return nil, 0, PathErr("read", f.Name(), err)
	}
	return line, start, nil
}

// LastLineSpan returns where the last complete line of the first size
// bytes of f starts and ends (at its newline), without reading the line:
// for a caller that needs only its head, whatever its length. Both are -1
// for a log with no complete line.
func LastLineSpan(f *os.File, size int64) (start, end int64, err error) {
	end, err = lastNewline(f, size)
	if err != nil || end < 0 {
		return -1, -1, err
	}
	start, err = lastNewline(f, end)
	if err != nil {
		return -1, -1, err
	}
	return start + 1, end, nil
}

// EachLineBackward calls fn with each complete line of the first size
// bytes of f and its offset, last line first, until fn returns false: the
// one backward reader of the stores (the latest activity of sessions, the
// last finished tasks, the tail of a transcript). A torn tail is skipped.
// The line is only valid during the call. It reads 64 KB at a time.
func EachLineBackward(f *os.File, size int64, fn func(line []byte, off int64) bool) error {
	const chunk = 64 << 10
	end, err := lastNewline(f, size)
	if err != nil || end < 0 {
		return err
	}
	// buf holds the bytes from pos to end (exclusive of the final newline).
	pos := end
	var buf []byte
	for {
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			line := buf[i+1:]
			buf = buf[:i]
			if len(line) > 0 && !fn(line, pos+int64(i)+1) {
				return nil
			}
			continue
		}
		if pos == 0 {
			if len(buf) > 0 {
				fn(buf, 0)
			}
			return nil
		}
		n := min(int64(chunk), pos)
		pos -= n
		more := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(more, pos); err != nil && err != io.EOF {
			return PathErr("read", f.Name(), err)
		}
		buf = append(more, buf...)
	}
}

// lastNewline returns the offset of the last '\n' before limit, or -1.
func lastNewline(f *os.File, limit int64) (int64, error) {
	// Most lines are short: the window starts at 4 KB, which a process
	// that reads one line (an append) allocates and faults in at little
	// cost, and doubles up to 64 KB for long ones.
	buf := make([]byte, 4<<10)
	for limit > 0 {
		n := min(int64(len(buf)), limit)
		start := limit - n
		if _, err := f.ReadAt(buf[:n], start); err != nil {
			return 0, PathErr("read", f.Name(), err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i), nil
		}
		limit = start
		if len(buf) < 64<<10 {
			buf = make([]byte, 2*len(buf))
		}
	}
	return -1, nil
}

// OpenAppend opens the log at path for appending, creating it 0600 (and
// committing the create to its directory) if missing. It never follows a
// symlink. Its size is read fresh (FreshSize), so that the caller's reads
// of its end see every append made under the lock, from any host. If the
// log ends in a torn tail, the tail is copied to
// path.torn-<unix>, synced, and cut off before anything is appended; the
// name of the copy is returned. The descriptor's offset is left at the
// end read: the appends through it (WriteLines) are fenced against it
// (doc.go, "Fencing"). The caller must hold the log's lock.
func OpenAppend(path string, now time.Time) (f *os.File, moved string, err error) {
	return openAppend(path, now, true)
}

// OpenAppendUncommitted is OpenAppend, but a log it creates is not
// committed to its directory: for a record whose document, in the same
// directory and written after the log, is its commit point, and whose
// sync of the directory commits both names (a session's create).
func OpenAppendUncommitted(path string, now time.Time) (f *os.File, moved string, err error) {
	return openAppend(path, now, false)
}

func openAppend(path string, now time.Time, commit bool) (f *os.File, moved string, err error) {
	f, err = OpenFile(path, os.O_RDWR|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		f, err = OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, FileMode)
		if err == nil {
			err = f.Chmod(FileMode)
			if err == nil && commit {
				err = SyncDir(filepath.Dir(path))
			}
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			return nil, "", PathErr("create", path, err)
		}
		return f, "", nil
	}
	if err != nil {
		return nil, "", PathErr("open", path, linkErr(err))
	}
	moved, end, err := cutTornTail(f, now)
	if err == nil {
		if _, serr := f.Seek(end, io.SeekStart); serr != nil {
			err = PathErr("seek", path, serr)
		}
	}
	if err != nil {
		f.Close()
		return nil, "", err
	}
	return f, moved, nil
}

// linkErr turns the ELOOP of O_NOFOLLOW into a refusal that says why.
func linkErr(err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return Refusedf("is a symlink; refusing to write through it")
	}
	return err
}

// cutTornTail moves a torn tail of the log f aside (MoveTailAside) and
// returns the name of the copy, if any, and the log's end as the server
// knows it (FreshSize) after the cut.
func cutTornTail(f *os.File, now time.Time) (string, int64, error) {
	size, err := FreshSize(f)
	if err != nil {
		return "", 0, err
	}
	if size == 0 {
		return "", 0, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return "", 0, PathErr("read", f.Name(), err)
	}
	if last[0] == '\n' {
		return "", size, nil
	}
	nl, err := lastNewline(f, size)
	if err != nil {
		return "", 0, err
	}
	moved, err := MoveTailAside(f, nl+1, fmt.Sprintf(".torn-%d", now.Unix()))
	return moved, nl + 1, err
}

// MoveTailAside copies the bytes of the log f from offset keep to its end
// to a new file named f's name plus suffix (synced), then truncates f to
// keep and syncs it: how a torn tail is cut off, and any other tail that
// must go without being lost. It returns the name of the copy.
func MoveTailAside(f *os.File, keep int64, suffix string) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	tail := make([]byte, fi.Size()-keep)
	if _, err := f.ReadAt(tail, keep); err != nil {
		return "", PathErr("read", f.Name(), err)
	}
	aside := freeName(f.Name(), suffix)
	if err := writeAside(aside, tail); err != nil {
		return "", err
	}
	if err := f.Truncate(keep); err != nil {
		return "", PathErr("cut the tail of", f.Name(), err)
	}
	if err := seam.Sync(f); err != nil {
		return "", fmt.Errorf("cut the tail of %s: sync: %w", f.Name(), err)
	}
	if _, err := f.Seek(keep, io.SeekStart); err != nil {
		return "", PathErr("seek", f.Name(), err)
	}
	return aside, nil
}

// AppendLines writes each line (which must end in '\n') with one write call
// and then syncs f once, as WriteLines does (fenced: f comes from
// OpenAppend). If a write or the sync fails, f is cut back to its size
// before the call, so a failed append leaves the log as it was.
func AppendLines(f *os.File, lines [][]byte) error {
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return PathErr("seek", f.Name(), err)
	}
	if err := WriteLines(f, lines); err != nil {
		return err
	}
	if err := SyncLog(f); err != nil {
		return CutBack(f, start, err)
	}
	return nil
}

// AppendLog opens the log at path to append (a torn tail moved aside
// and told to warn), appends lines and calls commit as AppendThen does:
// a failure leaves the log as it was, and removes one this call made. It
// returns the log, open, for a caller that reads its size after; the
// caller closes it. The caller holds the log's lock.
func AppendLog(path string, now time.Time, warn func(string), lines [][]byte, commit func() error) (*os.File, error) {
	_, statErr := os.Lstat(path)
	f, moved, err := OpenAppend(path, now)
	if err != nil {
		return nil, err
	}
	if moved != "" {
		warn(fmt.Sprintf("%s: torn tail moved aside to %s", path, moved))
	}
	if err := AppendThen(f, errors.Is(statErr, os.ErrNotExist), lines, commit); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// AppendThen appends lines to the log f (as AppendLines), then calls
// commit: for a change whose commit point comes after its log lines (a
// document written last). If the append or commit fails, f is cut back
// to its size before the call and, when made says this change created it
// and it was empty, removed, so that the failure leaves the log as it was.
// The caller holds the log's lock until it returns.
func AppendThen(f *os.File, made bool, lines [][]byte, commit func() error) error {
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return PathErr("seek", f.Name(), err)
	}
	undo := func(err error) error {
		if errors.As(err, new(*FencedError)) {
			return err // nothing of this call is in the log, which is another writer's now
		}
		err = CutBack(f, start, err)
		if made && start == 0 {
			if size, serr := FreshSize(f); serr == nil && size == 0 {
				os.Remove(f.Name())
			}
		}
		return err
	}
	if len(lines) > 0 {
		if err := AppendLines(f, lines); err != nil {
			return undo(err)
		}
	}
	if err := commit(); err != nil {
		return undo(err)
	}
	return nil
}

// SyncLog syncs a log after an append, with an error that names it.
func SyncLog(f *os.File) error {
	if err := seam.Sync(f); err != nil {
		return fmt.Errorf("append to %s: sync: %w", f.Name(), err)
	}
	return nil
}

// WriteLines writes each line with one write call, without a sync: for a
// caller that syncs f itself. It is the commit point of every append, and
// is fenced there (doc.go, "Fencing"): the descriptor's offset is the end
// its writer read under the lock (OpenAppend leaves it there; a caller
// that opened the log itself seeks to its end), and the lines are written
// only if the log still ends there, else a *FencedError refuses them and
// nothing is written. After the writes, a log that does not end where
// they should is read back: lines of this call that landed after another
// writer's are moved aside (a *FencedError that names the copy); lines in
// their place stand. If a write fails, f is cut back to its size before
// the call. On success the offset is the new end.
func WriteLines(f *os.File, lines [][]byte) error {
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return PathErr("seek", f.Name(), err)
	}
	if size, err := FreshSize(f); err != nil {
		return err
	} else if size != start {
		return &FencedError{Path: f.Name(), Want: start, Found: size}
	}
	end := start
	for _, line := range lines {
		n, err := seam.Write(f, line)
		end += int64(n)
		if err != nil {
			return cutBack(f, start, end, PathErr("append to", f.Name(), err))
		}
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		return PathErr("seek", f.Name(), err)
	}
	return landed(f, start, end, lines)
}

// landed checks that the lines just written to f from start to end are
// there: the log ends at end, or the bytes from start are the lines
// (another writer's came after them, and that writer's own check moves
// them aside). Lines that landed at the log's end after another writer's
// (this writer's lock was lost between the check and the write) are
// moved aside.
func landed(f *os.File, start, end int64, lines [][]byte) error {
	size, err := FreshSize(f)
	if err != nil || size == end {
		return err
	}
	want := bytes.Join(lines, nil)
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, start); err == nil && bytes.Equal(got, want) {
		return nil
	}
	fenced := &FencedError{Path: f.Name(), Want: start, Found: size - int64(len(want))}
	if fenced.Found >= 0 {
		if _, err := f.ReadAt(got, fenced.Found); err == nil && bytes.Equal(got, want) {
			aside, err := MoveTailAside(f, fenced.Found, fmt.Sprintf(".fenced-%d", time.Now().Unix()))
			if err != nil {
				return fmt.Errorf("%w; moving the lines aside failed: %w", fenced, err)
			}
			fenced.Aside = aside
			return fenced
		}
	}
	if j, tail := splitLanding(f, start, size, lines, want); j > 0 {
		aside, err := MoveTailAside(f, size-tail, fmt.Sprintf(".fenced-%d", time.Now().Unix()))
		if err != nil {
			return &UnknownOutcomeError{Path: f.Name(), Err: fmt.Errorf("append to %s: its lock was lost while appending; moving its last lines aside failed: %w", f.Name(), err),
				Why: "its lines are mixed with another writer's: hermes fsck reports the log"}
		}
		return &FencedError{Path: f.Name(), Want: start, Found: size - tail, Aside: aside, Stored: j, Lines: len(lines)}
	}
	return &UnknownOutcomeError{Path: f.Name(), Err: fmt.Errorf("append to %s: its lock was lost while appending", f.Name()),
		Why: "its lines are mixed with another writer's: hermes fsck reports the log"}
}

// splitLanding finds how a writer's lines landed when it lost its lock
// between two of its writes: its first j where it read the log's end
// (start), another writer's after them, and its other lines at the log's
// end (size), tail bytes of them. j is 0 when the log does not read so.
// The other writer read the log with the first j lines in it and numbered
// after them: they stay, and the tail is what must go aside.
func splitLanding(f *os.File, start, size int64, lines [][]byte, want []byte) (j int, tail int64) {
	if size-start <= int64(len(want)) || len(lines) < 2 {
		return 0, 0
	}
	region := make([]byte, size-start)
	if _, err := f.ReadAt(region, start); err != nil {
		return 0, 0
	}
	p := 0 // the bytes of want the log holds from start
	for p < len(want) && want[p] == region[p] {
		p++
	}
	q := 0 // the bytes of want's end the log ends with
	for q < len(want) && want[len(want)-1-q] == region[len(region)-1-q] {
		q++
	}
	head := 0
	for j = 1; j < len(lines); j++ {
		head += len(lines[j-1])
		if head > p {
			break
		}
		if len(want)-head <= q {
			return j, int64(len(want) - head)
		}
	}
	return 0, 0
}

// CutBack truncates f to size, syncs it, and returns err: it undoes the
// writes of an append that is to be reported as failed. The writes undone
// are those from size to f's offset (where WriteLines left it); when the
// log no longer ends there, another writer appended after them (this
// writer's lock was lost) and nothing is cut, which would remove that
// writer's lines: the error then says the lines stay.
func CutBack(f *os.File, size int64, err error) error {
	end, serr := f.Seek(0, io.SeekCurrent)
	if serr != nil {
		return err
	}
	return cutBack(f, size, end, err)
}

func cutBack(f *os.File, start, end int64, err error) error {
	if size, serr := FreshSize(f); serr == nil && size != end {
		return &UnknownOutcomeError{Path: f.Name(), Err: err,
			Why: "its lines may stay in " + f.Name() + ": another writer wrote to it since (this writer's lock was lost), so they are not cut back; hermes fsck reports the log"}
	}
	if terr := seam.Truncate(f, start); terr != nil {
		return &UnknownOutcomeError{Path: f.Name(), Err: err,
			Why: fmt.Sprintf("its lines may be stored in %s (cutting them back failed: %v)", f.Name(), terr)}
	}
	seam.Sync(f)
	f.Seek(start, io.SeekStart)
	return err
}

// OpenSized opens the file at path for reading and returns its size: the
// view a reader scans, read fresh (FreshSize), so that it holds every
// append acknowledged before, from any host. A file that does not exist is (nil, 0, nil).
func OpenSized(path string) (*os.File, int64, error) {
	return OpenSizedFlag(path, os.O_RDONLY)
}

// ScanRecords calls fn with each complete line of the log at path decoded
// as a T, oldest first. A torn tail, and a line that does not decode (fsck
// reports it), are told to warn and skipped. It returns the size of the
// log as read; a missing log is an empty one.
func ScanRecords[T any](path string, warn func(string), fn func(T)) (int64, error) {
	f, size, err := OpenSized(path)
	if err != nil || f == nil {
		return 0, err
	}
	defer f.Close()
	torn, err := ScanLines(f, size, func(line []byte, off int64) error {
		var rec T
		if err := json.Unmarshal(line, &rec); err != nil {
			warn(fmt.Sprintf("%s: line at offset %d does not parse; skipped", path, off))
			return nil
		}
		fn(rec)
		return nil
	})
	if torn != nil {
		warn(torn.String())
	}
	return size, err
}

// OpenSizedFlag is OpenSized with the open flags given (O_NOFOLLOW).
func OpenSizedFlag(path string, flag int) (*os.File, int64, error) {
	f, err := OpenFile(path, flag, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	size, err := FreshSize(f)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// MarkerIDs returns the names in dir that are valid ids: the records an
// index of marker files names. A missing dir names none.
func MarkerIDs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if CheckID("id", e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}
