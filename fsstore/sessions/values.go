package sessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/hermes/hermes/fsstore"
)

// The value index answers a list filtered by a state or a source that few
// sessions have (`sessions list --source telegram` among 100,000 gateway
// sessions, or a source none has) without walking the whole activity
// catalog. List walks the catalog first; when its first filterWalkLines
// lines let fewer than one in filterRareShare sessions through and the
// page is not full, it reads the list from the value file of the filter's
// source instead (of its state, when it has no source or the state's file
// is the smaller).
//
// A value file, .catalog.source.<value>.jsonl or
// .catalog.state.<value>.jsonl (the value with each byte other than a
// letter, a digit, '-' or '_' written %XX; a value whose name would pass
// valueNameMax bytes has none, and its lists walk the catalog), is the
// catalog cut down to the sessions that may have the value: catalog
// lines, byte for byte and in the catalog's order, of each such session
// from its first line that has the value (or does not say: written before
// lines carried a state) on. A session that leaves the value leaves its
// later lines there too. List walks it as it walks the catalog and so
// lists the same sessions in the same order: a session it lacks has a
// last line that rules it out.
//
// Each update ends with a mark line, {"covered":N,"catalog":C,"ino":I,
// "tail":"H","base":B}: the file holds the catalog's lines of its first N
// bytes, when the catalog was the file named C by its first line (see
// catalog.go) and of inode I, and its line ending at N hashed to H
// (FNV-1a, 64 bits); B is the file's size when it was last written whole.
// A catalog without a name is not indexed: the list walks it and
// compacts it, which names it (an inode number alone is no file's
// identity: ext4 gives a freed one to the next file it makes).
//
// It is a cache kept by the lists that use it, never by a write to a
// session, so a write costs nothing more. A list takes .catalog.values.lock
// without waiting (when another holds it, or the profile is read-only, it
// walks the whole catalog, as it would without the index), checks the
// mark against the catalog, copies the lines appended since, and appends
// a new mark, in one write. A mark that does not hold (the catalog was
// compacted, rebuilt, or its last line taken back) or a file that does not
// end in one (a torn write) has the file written whole again from the
// catalog: the last line of each session that may have the value. So does
// a file grown past twice its size B plus valueCompactMin, from its own
// lines. Nothing is synced: after a power cut a file that does not end in
// a mark is written again, and fsck compares a file whose mark holds with
// the catalog (--repair removes one that disagrees).
const (
	valuesLockName   = ".catalog.values.lock"
	valueFilePrefix  = ".catalog."
	valueFileSuffix  = ".jsonl"
	valueNameMax     = 200
	valueCompactMin  = 64 << 10
	valueFieldSource = "source"
	valueFieldState  = "state"
)

// filterWalkLines and filterRareShare decide when a filter is rare (see
// above); variables, so that tests send every filtered list through the
// value index.
var (
	filterWalkLines = 512
	filterRareShare = 16
)

// valueMark is the last line of a value file.
type valueMark struct {
	Covered int64  `json:"covered"`
	Catalog string `json:"catalog"`
	Ino     uint64 `json:"ino"`
	Tail    string `json:"tail"`
	Base    int64  `json:"base"`
}

var valueMarkPrefix = []byte(`{"covered":`)

// valueFileName is the name of the value file of field's value; false
// when the name would be too long for a file system.
func valueFileName(field, value string) (string, bool) {
	var b strings.Builder
	b.WriteString(valueFilePrefix + field + ".")
	for i := range len(value) {
		c := value[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	b.WriteString(valueFileSuffix)
	return b.String(), b.Len() <= valueNameMax
}

// valueOf parses a value file's name: its field and value.
func valueOf(name string) (field, value string, ok bool) {
	rest, ok1 := strings.CutPrefix(name, valueFilePrefix)
	rest, ok2 := strings.CutSuffix(rest, valueFileSuffix)
	field, enc, ok3 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !ok3 || (field != valueFieldSource && field != valueFieldState) {
		return "", "", false
	}
	var b []byte
	for i := 0; i < len(enc); i++ {
		if enc[i] != '%' {
			b = append(b, enc[i])
			continue
		}
		if i+2 >= len(enc) {
			return "", "", false
		}
		n, err := strconv.ParseUint(enc[i+1:i+3], 16, 8)
		if err != nil {
			return "", "", false
		}
		b = append(b, byte(n))
		i += 2
	}
	if again, _ := valueFileName(field, string(b)); again != name {
		return "", "", false
	}
	return field, string(b), true
}

// valueFilter is the filter a value file keeps: one field, one value.
func valueFilter(field, value string) ListOptions {
	if field == valueFieldState {
		return ListOptions{State: value}
	}
	return ListOptions{Source: value}
}

// valueIndex brings the value file of opts's filter up to the catalog
// cat (size bytes) and opens it; nil when it cannot be used, and then
// List walks the catalog. Of a source and a state, the value file that
// is smaller, when both exist, else the source's.
func (s *Store) valueIndex(cat *os.File, size int64, opts ListOptions) (*os.File, int64) {
	field, value := valueFieldSource, opts.Source
	if opts.Source == "" {
		field, value = valueFieldState, opts.State
	} else if opts.State != "" {
		src, ok1 := valueFileName(valueFieldSource, opts.Source)
		st, ok2 := valueFileName(valueFieldState, opts.State)
		a, err1 := os.Lstat(filepath.Join(s.Dir, src))
		b, err2 := os.Lstat(filepath.Join(s.Dir, st))
		if !ok1 || ok2 && err1 == nil && err2 == nil && b.Size() < a.Size() {
			field, value = valueFieldState, opts.State
		}
	}
	name, ok := valueFileName(field, value)
	if !ok {
		return nil, 0
	}
	id := catalogID(cat)
	if id == "" {
		s.compactCatalogNow()
		return nil, 0
	}
	unlock, err := fsstore.Lock(filepath.Join(s.Dir, valuesLockName), 0)
	if err != nil {
		return nil, 0
	}
	defer unlock()
	path := filepath.Join(s.Dir, name)
	if err := s.updateValueFile(path, valueFilter(field, value), cat, id, size); err != nil {
		if !fsstore.IsReadOnly(err) {
			s.Warn(fmt.Sprintf("value index %s: not updated: %v", name, err))
		}
		return nil, 0
	}
	f, vsize, err := fsstore.OpenSizedFlag(path, os.O_RDONLY|syscall.O_NOFOLLOW)
	if f == nil || err != nil {
		return nil, 0
	}
	return f, vsize
}

// updateValueFile brings the value file at path, of the filter, up to the
// whole lines of the first size bytes of the catalog cat, named id (see
// the top of this file). The caller holds the values lock.
func (s *Store) updateValueFile(path string, filter ListOptions, cat *os.File, id string, size int64) error {
	whole, ino, tail, err := catalogPoint(cat, size)
	if err != nil {
		return err
	}
	want := valueMark{Covered: whole, Catalog: id, Ino: ino, Tail: tail}
	vf, vsize, err := fsstore.OpenSizedFlag(path, os.O_RDWR|os.O_APPEND|syscall.O_NOFOLLOW)
	if err != nil {
		return err
	}
	if vf == nil {
		return writeValueFile(path, cat, whole, filter, want)
	}
	defer vf.Close()
	mark, ok := readValueMark(vf, vsize)
	if !ok || mark.Catalog != want.Catalog || mark.Ino != ino || mark.Covered > whole {
		return writeValueFile(path, cat, whole, filter, want)
	}
	if mark.Covered == whole {
		if mark.Tail != tail {
			return writeValueFile(path, cat, whole, filter, want)
		}
		return nil
	}
	if at, _, was, err := catalogPoint(cat, mark.Covered); err != nil || at != mark.Covered || was != mark.Tail {
		return writeValueFile(path, cat, whole, filter, want)
	}
	in := map[string]bool{}
	if _, err := fsstore.ScanLines(vf, vsize, func(line []byte, _ int64) error {
		if id, ok := lineSession(line); ok {
			in[id] = true
		}
		return nil
	}); err != nil {
		return err
	}
	var add bytes.Buffer
	if _, err := fsstore.ScanLinesFrom(cat, mark.Covered, whole, func(line []byte, _ int64) error {
		if id, ok := valueLine(line, filter, in); ok {
			in[string(id)] = true
			add.Write(line)
			add.WriteByte('\n')
		}
		return nil
	}); err != nil {
		return err
	}
	want.Base = mark.Base
	add.Write(markLine(want))
	if _, err := vf.Write(add.Bytes()); err != nil {
		return err
	}
	if grown := vsize + int64(add.Len()); grown > 2*mark.Base+valueCompactMin {
		return writeValueFile(path, vf, grown, filter, want)
	}
	return nil
}

// valueLine reports whether a catalog line belongs in the value file of
// filter, whose sessions are in: a line of one of them, or one that the
// filter does not rule out; and the session it names.
func valueLine(line []byte, filter ListOptions, in map[string]bool) ([]byte, bool) {
	id, out := lineRulesOut(line, filter)
	return id, id != nil && (in[string(id)] || !out)
}

// writeValueFile writes the value file at path whole, from src's first
// size bytes, catalog lines (the catalog, or the value file itself): the
// last line of each session that the filter does not rule out, in their
// order, then mark with its base set.
func writeValueFile(path string, src *os.File, size int64, filter ListOptions, mark valueMark) error {
	var kept [][]byte
	n := 0
	if err := eachLastLine(src, size, func(_, line []byte) {
		if _, out := lineRulesOut(line, filter); !out {
			kept = append(kept, bytes.Clone(line))
			n += len(line) + 1
		}
	}); err != nil {
		return err
	}
	slices.Reverse(kept)
	b := make([]byte, 0, n+128)
	for _, line := range kept {
		b = append(append(b, line...), '\n')
	}
	mark.Base = int64(len(b))
	b = append(b, markLine(mark)...)
	return fsstore.WriteCacheFile(path, b)
}

// eachLastLine calls fn with the last line of each session in the first
// size bytes of f, catalog lines, from the last line back.
func eachLastLine(f *os.File, size int64, fn func(id, line []byte)) error {
	seen := map[string]bool{}
	return fsstore.EachLineBackward(f, size, func(line []byte, _ int64) bool {
		if seenLine(line, seen) {
			return true
		}
		if id, ok := lineSessionBytes(line); ok && !seen[string(id)] {
			seen[string(id)] = true
			fn(id, line)
		}
		return true
	})
}

func markLine(m valueMark) []byte {
	b, _ := json.Marshal(m)
	return append(b, '\n')
}

// readValueMark returns a value file's mark, its last line; false when
// the file does not end in one.
func readValueMark(f *os.File, size int64) (valueMark, bool) {
	line, start, err := fsstore.LastLine(f, size)
	var m valueMark
	// A torn write leaves bytes after the last whole line, which may be
	// an older mark that says nothing of them.
	if err != nil || start+int64(len(line))+1 != size || !bytes.HasPrefix(line, valueMarkPrefix) || json.Unmarshal(line, &m) != nil {
		return valueMark{}, false
	}
	return m, true
}

// catalogPoint returns, for the catalog's first size bytes, where its
// whole lines end, its inode and the hash of its line ending there.
func catalogPoint(cat *os.File, size int64) (whole int64, ino uint64, tail string, err error) {
	fi, err := cat.Stat()
	if err != nil {
		return 0, 0, "", err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	line, start, err := fsstore.LastLine(cat, size)
	if err != nil || line == nil {
		return 0, ino, "", err
	}
	return start + int64(len(line)) + 1, ino, strconv.FormatUint(lineHash(line), 16), nil
}

// checkValues reports each value file whose mark holds for the catalog
// (one that does not is written again by the next list that uses it)
// but which lacks the last line of a session the catalog does not rule
// out of its filter: a list through it could leave that session out.
// Repair removes the file, which the next list writes again. A file whose
// lock another list holds is left for the next check.
func (s *Store) checkValues(repair bool) []fsstore.Finding {
	paths, _ := filepath.Glob(filepath.Join(s.Dir, valueFilePrefix+"*"+valueFileSuffix))
	if len(paths) == 0 {
		return nil
	}
	unlock, err := fsstore.Lock(filepath.Join(s.Dir, valuesLockName), 0)
	if err != nil {
		return nil
	}
	defer unlock()
	cat, size, err := fsstore.OpenSized(s.catalogPath())
	if cat == nil || err != nil {
		return nil
	}
	defer cat.Close()
	whole, ino, _, err := catalogPoint(cat, size)
	if err != nil {
		return nil
	}
	var out []fsstore.Finding
	for _, path := range paths {
		field, value, ok := valueOf(filepath.Base(path))
		if !ok {
			continue
		}
		lacks, err := valueFileLacks(path, cat, whole, ino, valueFilter(field, value))
		if err != nil || lacks == "" {
			continue
		}
		f := fsstore.Finding{Path: path, Problem: true,
			What: fmt.Sprintf("value index of %s %q lacks the last catalog line of session %s", field, value, lacks)}
		if repair {
			f.Repaired = os.Remove(path) == nil
		}
		out = append(out, f)
	}
	return out
}

// valueFileLacks returns the first session, by id, whose last line in
// the catalog (cat, whole lines to whole, of inode ino) the filter does
// not rule out and that the value file at path does not end with; "" when
// there is none, or when the file's mark does not hold.
func valueFileLacks(path string, cat *os.File, whole int64, ino uint64, filter ListOptions) (string, error) {
	vf, vsize, err := fsstore.OpenSizedFlag(path, os.O_RDONLY|syscall.O_NOFOLLOW)
	if vf == nil || err != nil {
		return "", err
	}
	defer vf.Close()
	mark, ok := readValueMark(vf, vsize)
	if !ok || mark.Catalog != catalogID(cat) || mark.Ino != ino || mark.Covered > whole {
		return "", nil
	}
	if at, _, tail, err := catalogPoint(cat, mark.Covered); err != nil || at != mark.Covered || tail != mark.Tail {
		return "", err
	}
	has := map[string]uint64{}
	if err := eachLastLine(vf, vsize, func(id, line []byte) { has[string(id)] = lineHash(line) }); err != nil {
		return "", err
	}
	var lacks []string
	if err := eachLastLine(cat, mark.Covered, func(id, line []byte) {
		if _, out := lineRulesOut(line, filter); !out && has[string(id)] != lineHash(line) {
			lacks = append(lacks, string(id))
		}
	}); err != nil || len(lacks) == 0 {
		return "", err
	}
	return slices.Min(lacks), nil
}

func lineHash(line []byte) uint64 {
	h := fnv.New64a()
	h.Write(line)
	return h.Sum64()
}
