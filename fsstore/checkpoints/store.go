package checkpoints

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// DefaultMaxFile is checkpoints.max_file's default: a file larger than
// this is changed without a checkpoint, and the change says so.
const DefaultMaxFile = 16 << 20

// Store is a profile's checkpoint store: content-addressed objects under
// Dir, and the pending records of changes in flight.
type Store struct {
	// Dir is <profile>/checkpoints.
	Dir string
	// MaxFile bounds the bytes of a before-image (checkpoints.max_file);
	// 0 is DefaultMaxFile.
	MaxFile int64
	// LockTimeout bounds the wait for a session's pending log's lock
	// (--lock-timeout); 0 is DefaultLockTimeout.
	LockTimeout time.Duration

	recent *recent
}

// Open returns the checkpoint store of the profile directory dir. Nothing
// is made until the first write.
func Open(profileDir string) *Store {
	return &Store{Dir: filepath.Join(profileDir, "checkpoints"), recent: &recent{files: map[string]recentFile{}}}
}

// Limit is the store's MaxFile, or DefaultMaxFile.
func (s *Store) Limit() int64 {
	if s.MaxFile > 0 {
		return s.MaxFile
	}
	return DefaultMaxFile
}

// Hash is the name of data in the store: its SHA-256, in lower-case hex.
func Hash(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// ValidHash reports whether h is a hash as Hash writes it.
func ValidHash(h string) bool {
	if len(h) != sha256.Size*2 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// objectPath is where the object h lives: objects/<first two hex
// digits>/<the rest>, as git spreads its loose objects.
func (s *Store) objectPath(h string) (string, error) {
	if !ValidHash(h) {
		return "", fsstore.Invalidf("%q is not a checkpoint object hash (64 hex digits)", h)
	}
	return filepath.Join(s.Dir, "objects", h[:2], h[2:]), nil
}

// Put stores data and returns its hash. An object already stored is not
// written again (its bytes are the same). A new one is gzip-compressed
// into a temp file, synced, renamed into place and its directory synced
// (fsstore.WriteAtomic): when Put returns nil, the object survives a
// crash. The hash and the compression, each about as costly as the other
// (a 1 MB file: 7 to 10 ms each), run at once; a compression made for an
// object already stored is the price of not waiting for the hash.
func (s *Store) Put(data []byte) (string, error) {
	hashed := make(chan string, 1)
	go func() { hashed <- Hash(data) }()
	z, err := gzipped(data)
	h := <-hashed
	if err != nil {
		return "", fmt.Errorf("store checkpoint object: %w", err)
	}
	path, _ := s.objectPath(h)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		return h, nil
	}
	if err := fsstore.EnsureDir(filepath.Dir(path)); err != nil {
		return "", err
	}
	err = fsstore.WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(z.Bytes())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("store checkpoint object: %w", err)
	}
	return h, nil
}

// ErrCorrupt is the kind of the error Get returns for an object whose
// bytes do not decompress or do not hash to its name.
var ErrCorrupt = errors.New("corrupt checkpoint object")

// Get returns the bytes of object h, checked against h: a missing object
// is an fsstore.ErrNotFound error, one that does not hash right an
// ErrCorrupt one.
func (s *Store) Get(h string) ([]byte, error) {
	path, err := s.objectPath(h)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fsstore.NotFoundf("checkpoint object %s is missing", h)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return decode(h, b)
}

// Objects returns the hashes of the stored objects, and the total size
// of their files.
func (s *Store) Objects() (map[string]int64, error) {
	out := map[string]int64{}
	dir := filepath.Join(s.Dir, "objects")
	fans, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, fan := range fans {
		if !fan.IsDir() || len(fan.Name()) != 2 {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(dir, fan.Name()))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			h := fan.Name() + e.Name()
			if !e.Type().IsRegular() || !ValidHash(h) {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			out[h] = fi.Size()
		}
	}
	return out, nil
}

// Remove removes object h; a missing one is no error.
func (s *Store) Remove(h string) error {
	path, err := s.objectPath(h)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
