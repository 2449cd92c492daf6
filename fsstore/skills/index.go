package skills

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore"
)

// Found is a skill directory found by Scan: its name, the path of its
// SKILL.md and that file's stamp.
type Found struct {
	Name  string
	Path  string
	Stamp Stamp
}

// Stamp is what tells a file changed without reading it: its size,
// modification time (nanoseconds) and inode.
type Stamp struct {
	Size  int64
	MTime int64
	Inode uint64
}

// Scan returns the skills of dir (directories not starting with '.' that
// hold a regular SKILL.md), in name order. A missing dir has none. Each
// SKILL.md is stat'ed relative to dir, opened once (the path is walked
// once, not once a skill), by up to scanWorkers goroutines at once: a
// start with hundreds of skills spends most of its time in these stats.
func Scan(dir string) ([]Found, error) {
	d, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	fd := int(d.Fd())
	prefix := filepath.Clean(dir) + string(filepath.Separator) // a Join a skill cost a tenth of the scan
	found := make([]Found, len(names))
	stat := func(lo, hi int) {
		var st unix.Stat_t
		for i := lo; i < hi; i++ {
			if lstatAt(fd, names[i]+"/"+FileName, &st) == nil && uint32(st.Mode)&unix.S_IFMT == unix.S_IFREG {
				found[i] = Found{Name: names[i], Path: prefix + names[i] + string(filepath.Separator) + FileName,
					Stamp: Stamp{Size: st.Size, MTime: st.Mtim.Nano(), Inode: uint64(st.Ino)}}
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), scanWorkers, len(names)/scanBatch+1)
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { stat(w*len(names)/workers, (w+1)*len(names)/workers) })
	}
	stat(0, len(names)/workers)
	wg.Wait()
	return slices.DeleteFunc(found, func(f Found) bool { return f.Name == "" }), nil
}

// Scan's parallelism: at most scanWorkers goroutines, each with at least
// scanBatch skills (fewer are not worth a goroutine).
const (
	scanWorkers = 4
	scanBatch   = 32
)

// lstatAt is fstatat of name in the directory fd, not following a
// symbolic link, retried on EINTR.
func lstatAt(fd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(fd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// Index is a cache of the frontmatter of SKILL.md files, by path, each
// entry valid while its file has the stamp it was read at: the list a
// session starts with then reads no SKILL.md that has not changed, and
// parses no YAML. It lives in the profile's skills directory
// (.index.cache, in a format of its own: decoding 200 entries with gob
// was half of the list's cost, with JSON most of a session's start), is
// written without a sync and without a lock (two writers each write a
// whole, valid cache), and a cache that is missing or does not parse is
// an empty one.
//
// A file is indexed only once its modification time is RacyWindow old: a
// file clock is coarse (a kernel tick on Linux, two seconds on FAT), so a
// file rewritten in place to the same size within the tick of its last
// write keeps its stamp, and an entry read between the two writes would
// hide the second (git's "racy" index entries). Such a file is read at
// each start until it is old enough.
type Index struct {
	path    string
	entries map[string]indexEntry
	changed bool
}

// RacyWindow is how old a file's modification time must be for the
// index to hold it.
const RacyWindow = 2 * time.Second

type indexEntry struct {
	Stamp Stamp
	Meta  Meta
}

// indexMagic begins an index file; another version's file does not parse.
const indexMagic = "hermes skills index 1\n"

// LoadIndex reads the index of the profile skills directory dir.
func LoadIndex(dir string) *Index {
	idx := &Index{path: filepath.Join(dir, ".index.cache")}
	if b, err := os.ReadFile(idx.path); err == nil {
		idx.entries = decodeIndex(b)
	}
	if idx.entries == nil {
		idx.entries = map[string]indexEntry{}
	}
	return idx
}

// Lookup returns the frontmatter of the SKILL.md at path, if the index
// holds it for the file as s describes it.
func (idx *Index) Lookup(path string, s Stamp) (Meta, bool) {
	e, ok := idx.entries[path]
	if !ok || e.Stamp != s {
		return Meta{}, false
	}
	return e.Meta, true
}

// Put records the frontmatter of the SKILL.md at path as s describes it,
// unless its modification time is within RacyWindow of now (the entry
// is then dropped, and the file read again next time).
func (idx *Index) Put(path string, s Stamp, meta Meta) {
	if time.Since(time.Unix(0, s.MTime)) < RacyWindow {
		if _, ok := idx.entries[path]; ok {
			delete(idx.entries, path)
			idx.changed = true
		}
		return
	}
	idx.entries[path] = indexEntry{Stamp: s, Meta: meta}
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
	fsstore.WriteCacheFile(idx.path, encodeIndex(idx.entries))
}

// encodeIndex writes the entries in the engine's cache format
// (fsstore.CacheEncoder): their count, then for each its path, size,
// modification time, inode, name, description, and its allowed tools
// (a count, then each).
func encodeIndex(entries map[string]indexEntry) []byte {
	e := fsstore.NewCacheEncoder(indexMagic)
	e.Uint(uint64(len(entries)))
	for p, x := range entries {
		e.Text(p)
		e.Int(x.Stamp.Size)
		e.Int(x.Stamp.MTime)
		e.Uint(x.Stamp.Inode)
		e.Text(x.Meta.Name)
		e.Text(x.Meta.Description)
		e.Uint(uint64(len(x.Meta.AllowedTools)))
		for _, t := range x.Meta.AllowedTools {
			e.Text(t)
		}
	}
	return e.Bytes()
}

// decodeIndex reads what encodeIndex wrote; nil when b is not that, whole.
func decodeIndex(b []byte) map[string]indexEntry {
	d := fsstore.NewCacheDecoder(b, indexMagic)
	n := d.Count()
	if !d.OK() {
		return nil
	}
	entries := make(map[string]indexEntry, n)
	for range n {
		p := d.Text()
		var x indexEntry
		x.Stamp = Stamp{Size: d.Int(), MTime: d.Int(), Inode: d.Uint()}
		x.Meta.Name, x.Meta.Description = d.Text(), d.Text()
		for range d.Count() {
			x.Meta.AllowedTools = append(x.Meta.AllowedTools, d.Text())
		}
		if !d.OK() {
			return nil
		}
		entries[p] = x
	}
	if !d.Done() {
		return nil
	}
	return entries
}
