package checkpoints

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/zeebo/blake3"

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

// Hash is the name of data in the store: "b3-" and its BLAKE3-256, in
// lower-case hex (package doc, "Hashes": a store made by an earlier
// build also holds objects named by their SHA-256, 64 hex digits alone).
func Hash(data []byte) string {
	h := blake3.Sum256(data)
	return b3Prefix + hex.EncodeToString(h[:])
}

// b3Prefix begins the name of an object named by its BLAKE3.
const b3Prefix = "b3-"

// ValidHash reports whether h is a hash as Hash writes it, or as an
// earlier build wrote it (a SHA-256).
func ValidHash(h string) bool {
	digest := strings.TrimPrefix(h, b3Prefix)
	if len(digest) != sha256.Size*2 {
		return false
	}
	for _, c := range digest {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ShortHash is h as a listing shows it: its algorithm's prefix ("b3-",
// or none for an earlier build's SHA-256) and the first 12 hex digits.
func ShortHash(h string) string {
	digest := strings.TrimPrefix(h, b3Prefix)
	return h[:len(h)-len(digest)+min(12, len(digest))]
}

// Matches reports whether data hash to h, in h's algorithm.
func Matches(h string, data []byte) bool {
	return h != "" && hashLike(h, data) == h
}

// hashLike is the name of data in the algorithm of h: Hash's, or the
// SHA-256 an earlier build named objects by.
func hashLike(h string, data []byte) string {
	if strings.HasPrefix(h, b3Prefix) {
		return Hash(data)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Hasher is Hash for bytes written to it a piece at a time (a file read
// as a stream), and also, when it was made for a hash an earlier build
// wrote (NewHasher), their SHA-256, so that they can be compared with
// that hash too (Sum.Is).
type Hasher struct {
	b3  *blake3.Hasher
	sha hash.Hash
}

// NewHasher returns a Hasher for bytes to compare with the hashes like:
// it computes their SHA-256 as well only when one of like is one.
func NewHasher(like ...string) *Hasher {
	h := &Hasher{b3: blake3.New()}
	for _, l := range like {
		if l != "" && !strings.HasPrefix(l, b3Prefix) {
			h.sha = sha256.New()
			break
		}
	}
	return h
}

// Write adds p to the bytes hashed; it never fails.
func (h *Hasher) Write(p []byte) (int, error) {
	h.b3.Write(p)
	if h.sha != nil {
		h.sha.Write(p)
	}
	return len(p), nil
}

// Sum returns the hashes of the bytes written.
func (h *Hasher) Sum() Sum {
	s := Sum{Hash: b3Prefix + hex.EncodeToString(h.b3.Sum(nil))}
	if h.sha != nil {
		s.sha = hex.EncodeToString(h.sha.Sum(nil))
	}
	return s
}

// Sum is the hashes of some bytes (Hasher).
type Sum struct {
	// Hash is their name as Hash writes it.
	Hash string
	sha  string
}

// Is reports whether the bytes hash to h, a hash as Hash writes it or,
// when the Hasher was made for such a hash, as an earlier build did.
func (s Sum) Is(h string) bool {
	return h != "" && (h == s.Hash || h == s.sha)
}

// objectPath is where the object h lives: objects/<first two hex digits
// of its digest>/<the rest>, as git spreads its loose objects, the rest
// preceded by "b3-" for a BLAKE3.
func (s *Store) objectPath(h string) (string, error) {
	if !ValidHash(h) {
		return "", fsstore.Invalidf("%q is not a checkpoint object hash (b3- and 64 hex digits, or 64 hex digits)", h)
	}
	prefix, digest := "", h
	if strings.HasPrefix(h, b3Prefix) {
		prefix, digest = b3Prefix, h[len(b3Prefix):]
	}
	return filepath.Join(s.Dir, "objects", digest[:2], prefix+digest[2:]), nil
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
			if rest, ok := strings.CutPrefix(e.Name(), b3Prefix); ok {
				h = b3Prefix + fan.Name() + rest
			}
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
