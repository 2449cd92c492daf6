package tasks

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hermes/hermes/fsstore"
)

// The finished index (.finished.idx) finds the line of an old finished
// task without reading the finished log backwards to it: `tasks show` of a
// task 100,000 tasks back reads one block of the log, not 50 MB.
//
// The log is cut into blocks of whole lines, each the first lines that
// reach finishedIndexBlock bytes; the index has one line per block: its
// offsets, the id of its first line, and the least and greatest task id
// in it, separated by tabs, which no id holds (a line is read without a
// JSON decoder: the index of 100,000 tasks has about 700 lines). Lines
// are in the order tasks finished, not in id order (a task that runs a
// week finishes after those started since), so the index is a map of
// each block's range of ids, not a sorted list: a lookup reads the
// lines after the last block backwards, then the blocks whose range holds
// the id, newest first, and stops at the first line of the task it meets,
// which is its last. Ids are time-ordered and most tasks finish soon after
// they start, so a block's range is narrow and one or two blocks hold an
// id; a long task widens its block's range, which costs a lookup one
// block more, never a wrong answer.
//
// The index is a cache, never synced. Finish extends it, under the
// finished log's lock, once the lines after its last block make a block;
// a lookup that finds it missing or behind by a block (a profile written
// before it existed) extends it too, when it can take the lock at once. A
// rewrite of the log (prune, RebuildIndex) removes it first. A lookup
// trusts a block only when its offsets still fall on line ends and its
// first line is still of the task it names; an index that fails that, or
// does not parse (a torn last line), is written again from the log, and
// the lookup reads the log as it did before the index: a stale index
// costs time, never a wrong answer.
//
// An id prefix (Resolve) reads the record files' names, the lines after
// the last block, and the blocks whose range meets the ids that start
// with it: in byte order those are the ids from the prefix up to
// prefixEnd(prefix), the least string greater than every string that
// starts with it, so a block of Min and Max holds one only when Min <
// prefixEnd and prefix <= Max. An id that no task has (a typo) reads the
// lines after the last block and the blocks whose range holds it, then
// what a prefix does (the ids it starts), most often no block. That the
// blocks not read hold no line of a task the lookup is after rests on
// these:
//
//  1. The blocks cover the log from its start to where the last one ends,
//     one after another: loadIndex takes a line of the index only where
//     the one before ended, from offset 0. What follows is read whole.
//  2. A block starts and ends on line ends. indexBlocks cuts only after a
//     newline; the log changes only by whole lines appended under its
//     lock (a torn tail is never indexed and is moved aside before the
//     next append; a Finish that cannot commit cuts its line off before
//     it would extend the index); a rewrite removes the index before it
//     renames the new log in. What a lookup relies on, it checks: each
//     block it reads, and that a line starts where the index ends, which
//     an extension checks too, so that no block is cut from mid-line.
//  3. A block's range holds the task of each of its lines: indexBlocks
//     reads it from the line's first key, as the store writes it, and
//     decodes a line whose id it cannot read so (one JSON escapes, such
//     as a&b), so that its task is in the range too.
//  4. The file read is the log the index was made of: a lookup checks at
//     its end that no rewrite has renamed another log over the one it
//     opened (after which the index may be the new log's).
//
// So a line of such a task could hide only in a block the lookup does not
// read, and only if the index lies about that block: an index edited by
// hand, or made of another log whose blocks happen to check out where
// they are read, which the store never leaves. A line whose JSON names a
// task twice (a repeated key) is taken for the first: the store writes
// none.
const finishedIndexName = ".finished.idx"

// finishedIndexBlock is the least size of a block, unless the store's
// indexBlock says (tests cut small logs into many blocks).
const finishedIndexBlock int64 = 64 << 10

// blockSize is the least size of a block of s's finished index.
func (s *Store) blockSize() int64 {
	if s.indexBlock > 0 {
		return s.indexBlock
	}
	return finishedIndexBlock
}

// indexBlock is a line of the finished index: the block of the log from
// Off to End, whose first line is of task First, and whose lines are of
// tasks Min to Max.
type indexBlock struct {
	Off, End        int64
	First, Min, Max string
}

func (blk indexBlock) appendTo(b []byte) []byte {
	b = strconv.AppendInt(b, blk.Off, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, blk.End, 10)
	for _, id := range []string{blk.First, blk.Min, blk.Max} {
		b = append(b, '\t')
		b = append(b, id...)
	}
	return append(b, '\n')
}

// parseBlock reads a line of the index, without its newline; the ids are
// left in f, and made strings only for a block the caller keeps.
func parseBlock(line []byte, f *[5][]byte) (off, end int64, ok bool) {
	n := 0
	for n < 4 {
		i := bytes.IndexByte(line, '\t')
		if i < 0 {
			return 0, 0, false
		}
		f[n], line = line[:i], line[i+1:]
		n++
	}
	if bytes.IndexByte(line, '\t') >= 0 {
		return 0, 0, false
	}
	f[4] = line
	off, ok1 := atoi(f[0])
	end, ok2 := atoi(f[1])
	return off, end, ok1 && ok2
}

// atoi parses a non-negative decimal without allocating.
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func (s *Store) finishedIndexPath() string { return filepath.Join(s.Dir, finishedIndexName) }

// loadIndex returns the blocks of the finished index that cover the log's
// first size bytes from its start, one after another, and where they end;
// of those, only the blocks whose range of ids meets the ids from lo up to
// hi, hi excluded ("" for no bound). whole is false when the index holds
// anything else (a torn line, a block past size), which extendIndex then
// rewrites.
func (s *Store) loadIndex(size int64, lo, hi string) (blocks []indexBlock, covered int64, whole bool) {
	b, err := os.ReadFile(s.finishedIndexPath())
	if err != nil {
		return nil, 0, errors.Is(err, os.ErrNotExist)
	}
	var f [5][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return blocks, covered, false
		}
		off, end, ok := parseBlock(b[:i], &f)
		if !ok || off != covered || end <= off || end > size || bytes.Compare(f[3], f[4]) > 0 {
			return blocks, covered, false
		}
		if lo <= string(f[4]) && (hi == "" || string(f[3]) < hi) {
			blocks = append(blocks, indexBlock{Off: off, End: end, First: string(f[2]), Min: string(f[3]), Max: string(f[4])})
		}
		covered, b = end, b[i+1:]
	}
	return blocks, covered, true
}

// prefixEnd returns the least string greater than every string that starts
// with prefix, so that an id starts with prefix if and only if prefix <= id
// < prefixEnd(prefix) in byte order; "" when there is none (a prefix of
// 0xff bytes, which no id holds).
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// extendIndex adds a block to the index for each whole block of lines of
// the log (size bytes long) after the last one, rewriting the index when
// it does not parse. Unless full is set (a lookup found the index
// damaged), it reads only the index's last line when no block is due. Its
// errors are not the caller's: the index is a cache. The caller holds the
// finished log's lock, so no line is half-written and none is cut off
// while it reads.
func (s *Store) extendIndex(size int64, full bool) {
	if end, ok := s.indexTailEnd(); !full && ok && size-end < s.blockSize() {
		return
	}
	blocks, covered, whole := s.loadIndex(size, "", "")
	f, size, err := fsstore.OpenSized(s.finishedPath())
	if f == nil || err != nil {
		return
	}
	defer f.Close()
	if ok, err := endsLine(f, covered); err != nil {
		return
	} else if !ok {
		// Not the log the index was made of: it is made again whole.
		blocks, covered, whole = nil, 0, false
	}
	more, err := indexBlocks(f, covered, size, s.blockSize())
	if err != nil || (len(more) == 0 && whole) {
		return
	}
	if !whole {
		s.writeIndex(append(blocks, more...))
		return
	}
	idx, err := os.OpenFile(s.finishedIndexPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	defer idx.Close()
	idx.Write(encodeBlocks(more))
}

// indexTailEnd returns where the index's last block ends, read from its
// last line alone (0 without an index); false when that line does not
// parse.
func (s *Store) indexTailEnd() (int64, bool) {
	f, size, err := fsstore.OpenSized(s.finishedIndexPath())
	if f == nil || err != nil {
		return 0, err == nil
	}
	defer f.Close()
	n := min(size, 1024)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil || buf[n-1] != '\n' {
		return 0, false
	}
	buf = buf[:n-1]
	var fields [5][]byte
	_, end, ok := parseBlock(buf[bytes.LastIndexByte(buf, '\n')+1:], &fields)
	return end, ok
}

// dropIndex removes the index before the log is rewritten, whose offsets
// it would no longer name; the next lookup or Finish writes it again.
func (s *Store) dropIndex() error {
	if err := os.Remove(s.finishedIndexPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (s *Store) writeIndex(blocks []indexBlock) {
	if len(blocks) == 0 {
		os.Remove(s.finishedIndexPath())
		return
	}
	fsstore.WriteCacheFile(s.finishedIndexPath(), encodeBlocks(blocks))
}

func encodeBlocks(blocks []indexBlock) []byte {
	var b []byte
	for _, blk := range blocks {
		b = blk.appendTo(b)
	}
	return b
}

// indexBlocks cuts the log's bytes from from to size into blocks of at
// least blockSize bytes, leaving out the last lines that do not make a
// whole block.
func indexBlocks(f *os.File, from, size, blockSize int64) ([]indexBlock, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, from, size-from), 256<<10)
	var blocks []indexBlock
	cur := indexBlock{Off: from}
	pos := from
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: read on to its end.
			rest := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				rest = append(rest, line...)
			}
			line = rest
		}
		if err != nil {
			// io.EOF: what is left is a torn tail, never indexed.
			if errors.Is(err, io.EOF) {
				return blocks, nil
			}
			return nil, err
		}
		id, ok := lineTaskID(line)
		if pos == cur.Off {
			cur.First = string(id)
		}
		if !ok {
			// An id that JSON escapes (<, >, &, "), or a line not as the
			// store writes it: a lookup trusts the range to hold every
			// task the block has a line of.
			if e, parsed := parseFinished(line); parsed {
				id, ok = []byte(e.TaskID), true
			}
		}
		if ok {
			if cur.Min == "" || string(id) < cur.Min {
				cur.Min = string(id)
			}
			if string(id) > cur.Max {
				cur.Max = string(id)
			}
		}
		pos += int64(len(line))
		if pos-cur.Off >= blockSize {
			cur.End = pos
			blocks = append(blocks, cur)
			cur = indexBlock{Off: pos}
		}
	}
}

// indexedRecord looks task id up through the index. found is nil when no
// block holds a line of id; sure says that the index then answered for the
// whole log, so that id has no line in it (see the package comment of
// this file). Neither is said when a block it reads is not what the index
// says, or the index is not whole: the caller then reads the log.
func (s *Store) indexedRecord(f *os.File, size int64, id string, prefix []byte) (found *Task, sure bool, err error) {
	blocks, covered, whole := s.indexFor(size, id, id+"\x00")
	if covered == 0 {
		return nil, false, nil
	}
	if err := fsstore.EachLineBackward(f, size, func(line []byte, off int64) bool {
		if off < covered {
			return false
		}
		found = recordOf(line, id, prefix)
		return found == nil
	}); err != nil || found != nil {
		return found, found != nil, err
	}
	for i := len(blocks) - 1; i >= 0 && found == nil; i-- {
		buf, ok, err := s.readBlock(f, blocks[i])
		if !ok || err != nil {
			return nil, false, err
		}
		for len(buf) > 0 {
			j := bytes.IndexByte(buf, '\n')
			if r := recordOf(buf[:j], id, prefix); r != nil {
				found = r
			}
			buf = buf[j+1:]
		}
	}
	if found != nil {
		return found, true, nil
	}
	// A miss is the answer only if the lines read backwards were all
	// those after the index, from a line's start.
	ok, err := s.startsLine(f, covered)
	return nil, ok && whole && s.stillTheLog(f), err
}

// stillTheLog reports whether f is still the finished log: once a prune or
// RebuildIndex has renamed another log over it, the index may already be
// the new log's, and a block of it that checks out in f may do so by
// chance.
func (s *Store) stillTheLog(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	li, err := os.Lstat(s.finishedPath())
	return err == nil && os.SameFile(fi, li)
}

// indexFor loads the blocks of the index whose range meets [lo, hi) for a
// lookup in the log's first size bytes, catching the index up first when
// it is damaged or behind by more than a few blocks.
func (s *Store) indexFor(size int64, lo, hi string) (blocks []indexBlock, covered int64, whole bool) {
	blocks, covered, whole = s.loadIndex(size, lo, hi)
	if !whole || size-covered >= 4*s.blockSize() {
		s.catchUpIndex()
		blocks, covered, whole = s.loadIndex(size, lo, hi)
	}
	return blocks, covered, whole
}

// startsLine reports whether a line of the log starts at off, where the
// index's last block ends, unless the index was made of another log: then
// it is removed, and the caller reads the log.
func (s *Store) startsLine(f *os.File, off int64) (bool, error) {
	ok, err := endsLine(f, off)
	if !ok && err == nil {
		s.dropIndex()
	}
	return ok, err
}

// endsLine reports whether the byte of f before off ends a line (or off is
// its start).
func endsLine(f *os.File, off int64) (bool, error) {
	if off == 0 {
		return true, nil
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], off-1); err != nil {
		return false, err
	}
	return b[0] == '\n', nil
}

// readBlock returns the lines of block blk of the log, each with its
// newline; false when they are not what the index says (the block does
// not start and end on line ends, or its first line is not of the task the
// index names), and then the index is removed: the next catchUpIndex or
// Finish writes it again.
func (s *Store) readBlock(f *os.File, blk indexBlock) ([]byte, bool, error) {
	// The byte before the block too, which must end a line.
	start := max(blk.Off-1, 0)
	buf := make([]byte, blk.End-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return nil, false, err
	}
	if blk.Off > 0 {
		if buf[0] != '\n' {
			s.dropIndex()
			return nil, false, nil
		}
		buf = buf[1:]
	}
	if first, _ := lineTaskID(buf); buf[len(buf)-1] != '\n' || string(first) != blk.First {
		s.dropIndex()
		return nil, false, nil
	}
	return buf, true, nil
}

// finishedWithPrefix returns the ids of the tasks whose last line in the
// finished log is a whole record, of those that start with ref: what IDs
// takes from the log, read from the blocks whose range meets the ids that
// start with ref ([ref, prefixEnd(ref))) and the lines after the last
// block. ok is false when the index cannot answer for the whole log (not
// whole, far behind, or a block it reads is not what it says): the caller
// then reads the log.
func (s *Store) finishedWithPrefix(ref string) (ids []string, ok bool, err error) {
	f, size, err := fsstore.OpenSized(s.finishedPath())
	if f == nil || err != nil {
		return nil, err == nil, err
	}
	defer f.Close()
	blocks, covered, whole := s.indexFor(size, ref, prefixEnd(ref))
	// The lines after the index are read at once: at most a few blocks,
	// unless the index could not be caught up.
	if !whole || size-covered >= 4*s.blockSize() {
		return nil, false, nil
	}
	if ok, err := s.startsLine(f, covered); !ok || err != nil {
		return nil, false, err
	}
	// Whether each task's last line seen so far is a whole record, in the
	// order of the log: the blocks, oldest first, then the tail.
	last := map[string]bool{}
	refb := []byte(ref)
	scan := func(buf []byte) {
		for len(buf) > 0 {
			j := bytes.IndexByte(buf, '\n')
			line := buf[:j]
			buf = buf[j+1:]
			if id, ok := lineTaskID(line); ok && !bytes.HasPrefix(id, refb) {
				continue
			}
			if e, ok := parseFinished(line); ok && strings.HasPrefix(e.TaskID, ref) {
				last[e.TaskID] = e.Record != nil
			}
		}
	}
	for _, blk := range blocks {
		buf, ok, err := s.readBlock(f, blk)
		if !ok || err != nil {
			return nil, false, err
		}
		scan(buf)
	}
	tail := make([]byte, size-covered)
	if _, err := f.ReadAt(tail, covered); err != nil {
		return nil, false, err
	}
	// What follows the last newline is a torn line, which readers skip.
	scan(tail[:bytes.LastIndexByte(tail, '\n')+1])
	for id, record := range last {
		if record {
			ids = append(ids, id)
		}
	}
	return ids, s.stillTheLog(f), nil
}

// catchUpIndex extends the index, for a lookup that finds it behind the
// log by more than a few blocks (missing, or a profile written before it)
// or damaged, if the finished log's lock is free at once: a lookup never
// waits for it.
func (s *Store) catchUpIndex() {
	unlock, err := fsstore.Lock(s.finishedLockPath(), 0)
	if err != nil {
		return
	}
	defer unlock()
	// The log as it is under the lock: a prune may have rewritten it.
	if fi, err := os.Lstat(s.finishedPath()); err == nil {
		s.extendIndex(fi.Size(), true)
	}
}

// recordOf returns the record a finished line holds when it is one of task
// id (it starts with prefix), else nil.
func recordOf(line []byte, id string, prefix []byte) *Task {
	if !bytes.HasPrefix(line, prefix) {
		return nil
	}
	if e, ok := parseFinished(line); ok && e.Record != nil && e.TaskID == id {
		return e.Record
	}
	return nil
}
