package checkpoints

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/seam"
)

// Save stores data, whose hash the caller knows to be h (Hash, Remembered),
// as Put does but as it is, uncompressed: the before-image a tool waits
// for before it renames its file over the old one, where a gzip would
// cost more than the write it spares (package doc, "The cost of a
// checkpoint"). Compress compresses it later. An object already stored
// is not written again.
func (s *Store) Save(h string, data []byte) error {
	path, err := s.objectPath(h)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		return nil
	}
	if err := fsstore.EnsureDir(filepath.Dir(path)); err != nil {
		return err
	}
	if err := fsstore.WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("store checkpoint object: %w", err)
	}
	return nil
}

// isGzip reports whether b starts as a gzip stream does. An object that
// does may still be stored as it is (Save of a .gz file): Get tells them
// apart by the hash.
func isGzip(b []byte) bool {
	return len(b) >= 3 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 8
}

// decode returns the bytes of object h from its file's content b: the
// gzip stream's bytes when they hash to h, else b itself when it does.
func decode(h string, b []byte) ([]byte, error) {
	var why string
	if isGzip(b) {
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			var out bytes.Buffer
			if _, err = io.Copy(&out, z); err == nil {
				if got := hashLike(h, out.Bytes()); got == h {
					return out.Bytes(), nil
				} else {
					why = "its bytes hash to " + got
				}
			}
		}
		if err != nil {
			why = err.Error()
		}
	}
	if got := hashLike(h, b); got == h {
		return b, nil
	} else if why == "" {
		why = "its bytes hash to " + got
	}
	return nil, fmt.Errorf("%w %s: %s", ErrCorrupt, h, why)
}

// Compress compresses the objects Save stored as they are, each through
// a temp file that is synced and renamed over it, and returns how many
// it compressed. One whose gzip would not be smaller, or whose bytes
// start as gzip's do (a .gz file saved as it is), is left as it is; one
// that does not hash to its name is left for fsck. A crash or a
// failure leaves each object whole, compressed or not, since either
// reads back the same bytes (the rename is not synced: a crash may
// bring back the uncompressed one).
func (s *Store) Compress() (int, error) {
	objs, err := s.Objects()
	if err != nil {
		return 0, err
	}
	n := 0
	for h := range objs {
		done, err := s.compress(h)
		if err != nil {
			return n, err
		}
		if done {
			n++
		}
	}
	return n, nil
}

// compress compresses object h if it is stored as it is. A compressed
// one is known by its first bytes, and not read further: a prune does
// not read the whole store.
func (s *Store) compress(h string) (bool, error) {
	path, _ := s.objectPath(h)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, nil
	}
	head := make([]byte, 3)
	n, _ := io.ReadFull(f, head)
	if isGzip(head[:n]) {
		f.Close()
		return false, nil
	}
	rest, err := io.ReadAll(f)
	f.Close()
	b := append(head[:n], rest...)
	if err != nil || !Matches(h, b) {
		return false, nil
	}
	z, err := gzipped(b)
	if err != nil || z.Len() >= len(b) {
		return false, err
	}
	if err := fsstore.ReplaceFile(path, func(w io.Writer) error {
		_, err := w.Write(z.Bytes())
		return err
	}); err != nil {
		return false, fmt.Errorf("compress checkpoint object: %w", err)
	}
	return true, nil
}

// gzipped is data gzip-compressed at the fastest level.
func gzipped(data []byte) (*bytes.Buffer, error) {
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	if err == nil {
		if _, err = zw.Write(data); err == nil {
			err = zw.Close()
		}
	}
	return &z, err
}

// recentBytes bounds the bytes Remembered remembers.
const recentBytes = 64 << 20

// recent remembers, for the files a change last wrote, their bytes and
// the hash of them: the next change of such a file finds its prior bytes
// there (Remembered) (a comparison of the bytes, a fraction of the cost of a hash)
// and need not hash them again.
type recent struct {
	mu    sync.Mutex
	files map[string]recentFile
	order []string // oldest first
	size  int
}

type recentFile struct {
	data []byte
	hash string
}

// Wrote tells the store that the file at path now holds data, whose hash
// is h: a change wrote it. data must not change afterwards. The store
// keeps the last bytes of each file, up to recentBytes in all, the
// oldest forgotten first.
func (s *Store) Wrote(path string, data []byte, h string) {
	r := s.recent
	if r == nil || len(data) > recentBytes {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.files[path]; ok {
		r.size -= len(old.data)
		r.order = slices.DeleteFunc(r.order, func(p string) bool { return p == path })
	}
	r.files[path] = recentFile{data: data, hash: h}
	r.order = append(r.order, path)
	r.size += len(data)
	for r.size > recentBytes {
		oldest := r.order[0]
		r.order = r.order[1:]
		r.size -= len(r.files[oldest].data)
		delete(r.files, oldest)
	}
}

// Remembered returns the hash Wrote was told for the file at path, when
// data are the bytes it was told the file holds: their hash without
// hashing them.
func (s *Store) Remembered(path string, data []byte) (string, bool) {
	r := s.recent
	if r == nil {
		return "", false
	}
	r.mu.Lock()
	f, ok := r.files[path]
	r.mu.Unlock()
	if ok && bytes.Equal(f.data, data) {
		return f.hash, true
	}
	return "", false
}

// stagePrefix begins the temp files SaveHashing writes in objects/ before
// their bytes' hash names them. One a crash leaves is removed by a
// prune once MinAge old.
const stagePrefix = ".stage-"

// SaveHashing is Save for bytes whose hash the caller does not know (a
// file's first change in this process): the bytes are written to a temp
// file in objects/ and synced while their hash is computed, rather than
// after it, and the file is renamed to its name, whose directory is
// synced. onHash is called with the hash as soon as it is known, before
// the object is durable (and whether or not it can be stored), so that
// the caller can write what names it meanwhile. When the object is
// stored already, the temp file is removed, not synced unless its sync
// had begun. It returns the hash and the error that kept the object from
// being stored.
func (s *Store) SaveHashing(data []byte, onHash func(string)) (string, error) {
	dir := filepath.Join(s.Dir, "objects")
	type staged struct {
		name string
		err  error
	}
	stored := make(chan struct{}) // closed when the object turns out stored already
	written := make(chan staged, 1)
	go func() {
		if err := fsstore.EnsureDir(dir); err != nil {
			written <- staged{err: err}
			return
		}
		f, err := seam.CreateTemp(dir, stagePrefix+"*")
		if err != nil {
			written <- staged{err: err}
			return
		}
		if err = f.Chmod(fsstore.FileMode); err == nil {
			if _, err = f.Write(data); err == nil {
				select {
				case <-stored:
					err = errStoredAlready
				default:
					err = seam.Sync(f)
				}
			}
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
		}
		written <- staged{f.Name(), err}
	}()
	h := Hash(data)
	onHash(h)
	path, _ := s.objectPath(h)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		close(stored)
		// The write may have been done before it was told: its temp
		// file is not needed.
		if w := <-written; w.err == nil {
			os.Remove(w.name)
		}
		return h, nil
	}
	w := <-written
	err := w.err
	if err == nil {
		if err = fsstore.EnsureDir(filepath.Dir(path)); err == nil {
			if err = seam.Rename(w.name, path); err == nil {
				err = fsstore.SyncDir(filepath.Dir(path))
			}
		}
		if err != nil {
			os.Remove(w.name)
		}
	}
	if err != nil {
		return h, fmt.Errorf("store checkpoint object: %w", err)
	}
	return h, nil
}

// errStoredAlready stops the write of a temp file whose object turned
// out to be stored already.
var errStoredAlready = errors.New("stored already")
