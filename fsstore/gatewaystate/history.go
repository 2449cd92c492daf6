package gatewaystate

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hermes/hermes/fsstore"
)

// The history index is 256 logs, history/<xx>.jsonl, xx the first two hex
// digits of an entry's digest: an entry is a line appended to its shard
// (under history/.lock, without a sync, and without a holder record in
// the lock: fsstore.LockLogUntil), and a later line of a digest
// replaces an earlier one. Until this layout the index was a document per
// digest (history/<digest>.json), written to a new file each turn: a file
// made cost a file system such as ext4 tens to hundreds of microseconds
// of CPU, where an append costs a few. GetHistory still reads such a
// document for a digest that no shard holds.
//
// A store keeps, for each shard it has read, where each digest's latest
// line is and how far it read; a lookup reads only what was appended
// since (by this process or any other, on any host), and reads the shard
// afresh when it is another file than the one read (fsck rewrote it) or
// shorter. So a lookup costs an open, a stat and a read of one line,
// whatever the number of entries, and what the process keeps is about 60
// bytes an entry of the shards it has read.

func (g *Store) historyDir() string { return filepath.Join(g.Dir, "history") }

func (g *Store) historyShardPath(digest string) string {
	return filepath.Join(g.historyDir(), digest[:2]+".jsonl")
}

func (g *Store) historyLockPath() string { return filepath.Join(g.historyDir(), ".lock") }

// legacyHistoryPath is where an earlier build kept the entry of digest.
func (g *Store) legacyHistoryPath(digest string) string {
	return filepath.Join(g.historyDir(), digest+".json")
}

// historyShard is what a store knows of one shard: the file it read, up
// to read bytes (the end of its last complete line), and where the latest
// line of each digest in them is.
type historyShard struct {
	file os.FileInfo
	read int64
	at   map[[32]byte]lineSpan
}

type lineSpan struct {
	off int64
	n   int32
}

// appendHistory appends line, an entry of digest, to its shard. A torn
// tail (a power cut's) is moved aside first, and warned of.
func (g *Store) appendHistory(digest string, line []byte) error {
	if err := fsstore.EnsureDir(g.historyDir()); err != nil {
		return err
	}
	unlock, err := fsstore.LockLogUntil(g.historyLockPath(), g.LockTimeout, nil)
	if err != nil {
		return err
	}
	defer unlock()
	path := g.historyShardPath(digest)
	f, moved, err := fsstore.OpenAppendUncommitted(path, g.Now())
	if err != nil {
		return err
	}
	defer f.Close()
	if moved != "" {
		g.Warn(fmt.Sprintf("%s: torn tail moved aside to %s", path, moved))
	}
	return fsstore.WriteLines(f, [][]byte{line})
}

// lookupHistory returns the latest entry of digest in its shard.
func (g *Store) lookupHistory(digest string) (History, bool, error) {
	var key [32]byte
	if _, err := hex.Decode(key[:], []byte(digest)); err != nil {
		return History{}, false, err
	}
	path := g.historyShardPath(digest)
	f, err := fsstore.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return History{}, false, nil
	}
	if err != nil {
		return History{}, false, fsstore.PathErr("open", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return History{}, false, fsstore.PathErr("open", path, err)
	}
	g.histMu.Lock()
	defer g.histMu.Unlock()
	sh := g.hist[digest[:2]]
	if sh == nil || !os.SameFile(sh.file, fi) || fi.Size() < sh.read {
		sh = &historyShard{at: map[[32]byte]lineSpan{}}
		if g.hist == nil {
			g.hist = map[string]*historyShard{}
		}
		g.hist[digest[:2]] = sh
	}
	sh.file = fi
	if fi.Size() > sh.read {
		if err := sh.readFrom(f, fi.Size()); err != nil {
			return History{}, false, err
		}
	}
	span, ok := sh.at[key]
	if !ok {
		return History{}, false, nil
	}
	line := make([]byte, span.n)
	if _, err := f.ReadAt(line, span.off); err != nil {
		return History{}, false, fsstore.PathErr("read", path, err)
	}
	var h History
	if err := json.Unmarshal(line, &h); err != nil || h.Digest != digest || fsstore.CheckID("session id", h.SessionID) != nil {
		g.Warn(fmt.Sprintf("%s: the entry at offset %d is not one of %s; passed over", path, span.off, digest))
		delete(sh.at, key)
		return History{}, false, nil
	}
	return h, true, nil
}

// readFrom reads the complete lines of f from sh.read to size, noting
// where each digest's latest one is. A line whose digest cannot be read
// (fsck reports it) is passed over; a torn tail is left for a later read.
func (sh *historyShard) readFrom(f *os.File, size int64) error {
	buf := make([]byte, size-sh.read)
	if _, err := f.ReadAt(buf, sh.read); err != nil && err != io.EOF {
		return fsstore.PathErr("read", f.Name(), err)
	}
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil
		}
		if key, ok := lineDigest(buf[:i]); ok {
			sh.at[key] = lineSpan{off: sh.read, n: int32(i)}
		}
		buf = buf[i+1:]
		sh.read += int64(i) + 1
	}
}

// lineDigest reads the digest of an entry's line: at its head, where
// PutHistory writes it, else wherever json finds it.
func lineDigest(line []byte) (key [32]byte, ok bool) {
	const head = `{"digest":"`
	if len(line) > len(head)+64 && bytes.HasPrefix(line, []byte(head)) && line[len(head)+64] == '"' {
		_, err := hex.Decode(key[:], line[len(head):len(head)+64])
		return key, err == nil
	}
	var h struct{ Digest string }
	if json.Unmarshal(line, &h) != nil || len(h.Digest) != 64 {
		return key, false
	}
	_, err := hex.Decode(key[:], []byte(h.Digest))
	return key, err == nil
}
