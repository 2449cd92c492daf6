package skills

import (
	"bytes"
	"encoding/gob"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/hermes/hermes/fsstore"
)

// Found is a skill directory found by Scan: its name, the path of its
// SKILL.md and what Lstat said of it.
type Found struct {
	Name string
	Path string
	Info fs.FileInfo
}

// Scan returns the skills of dir (directories not starting with '.' that
// hold a regular SKILL.md), in name order. A missing dir has none.
func Scan(dir string) ([]Found, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Found
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name(), FileName)
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
			out = append(out, Found{Name: e.Name(), Path: path, Info: fi})
		}
	}
	return out, nil
}

// Index is a cache of the frontmatter of SKILL.md files, by path, each
// entry valid while its file has the size, modification time and inode
// it was read at: the list a session starts with then reads no SKILL.md
// that has not changed, and parses no YAML. It lives in the profile's
// skills directory (.index.cache, in gob: decoding 200 entries with JSON
// was most of a session's start), is written without a sync and without
// a lock (two writers each write a whole, valid cache), and a cache that
// is missing or does not parse is an empty one.
type Index struct {
	path    string
	entries map[string]indexEntry
	changed bool
}

type indexEntry struct {
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime_ns"`
	Inode uint64 `json:"inode"`
	Meta  Meta   `json:"meta"`
}

// LoadIndex reads the index of the profile skills directory dir.
func LoadIndex(dir string) *Index {
	idx := &Index{path: filepath.Join(dir, ".index.cache"), entries: map[string]indexEntry{}}
	if b, err := os.ReadFile(idx.path); err == nil {
		if gob.NewDecoder(bytes.NewReader(b)).Decode(&idx.entries) != nil {
			idx.entries = map[string]indexEntry{}
		}
	}
	return idx
}

func stamp(fi fs.FileInfo) (int64, int64, uint64) {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	return fi.Size(), fi.ModTime().UnixNano(), ino
}

// Lookup returns the frontmatter of the SKILL.md at path, if the index
// holds it for the file as fi describes it.
func (idx *Index) Lookup(path string, fi fs.FileInfo) (Meta, bool) {
	e, ok := idx.entries[path]
	size, mtime, ino := stamp(fi)
	if !ok || e.Size != size || e.MTime != mtime || e.Inode != ino {
		return Meta{}, false
	}
	return e.Meta, true
}

// Put records the frontmatter of the SKILL.md at path as fi describes it.
func (idx *Index) Put(path string, fi fs.FileInfo, meta Meta) {
	size, mtime, ino := stamp(fi)
	idx.entries[path] = indexEntry{Size: size, MTime: mtime, Inode: ino, Meta: meta}
	idx.changed = true
}

// Keep drops the entries of the skills of dirs that are not in seen
// (removed since), leaving those of other directories (another
// project's).
func (idx *Index) Keep(dirs []string, seen map[string]bool) {
	for p := range idx.entries {
		if !seen[p] && slices.Contains(dirs, filepath.Dir(filepath.Dir(p))) {
			delete(idx.entries, p)
			idx.changed = true
		}
	}
}

// Save writes the index when it changed, if its directory exists; a
// failure is only a slower next start, and is dropped.
func (idx *Index) Save() {
	if !idx.changed {
		return
	}
	if _, err := os.Lstat(filepath.Dir(idx.path)); err != nil {
		return
	}
	var b bytes.Buffer
	if gob.NewEncoder(&b).Encode(idx.entries) == nil {
		fsstore.WriteCacheFile(idx.path, b.Bytes())
	}
}
