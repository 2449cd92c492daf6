package sessions

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// valueFiles returns the paths of the profile's value files.
func valueFiles(s *Store) []string {
	paths, _ := filepath.Glob(filepath.Join(s.Dir, valueFilePrefix+"*"+valueFileSuffix))
	var out []string
	for _, p := range paths {
		if _, _, ok := valueOf(filepath.Base(p)); ok {
			out = append(out, p)
		}
	}
	return out
}

// damageValueFile does to one value file, picked by rng, what a crash or
// a power cut may: cut it anywhere, append a torn line, fill it with
// zeros, or remove it.
func damageValueFile(s *Store, rng *rand.Rand) error {
	paths := valueFiles(s)
	if len(paths) == 0 {
		return nil
	}
	path := paths[rng.Intn(len(paths))]
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	switch rng.Intn(4) {
	case 0:
		b = b[:rng.Intn(len(b)+1)]
	case 1:
		b = append(b, `{"session_id":"s0`...)
	case 2:
		b = make([]byte, len(b))
	case 3:
		return os.Remove(path)
	}
	return os.WriteFile(path, b, 0o600)
}

func TestValueFileName(t *testing.T) {
	for _, value := range []string{"gateway", "import:claude", `we"ird<src>`, "", "a.b", "ünï", "%41", "../x", strings.Repeat("s", 150)} {
		for _, field := range []string{valueFieldSource, valueFieldState} {
			name, ok := valueFileName(field, value)
			if !ok {
				t.Fatalf("valueFileName(%q, %q) too long: %s", field, value, name)
			}
			if strings.ContainsRune(name, '/') || strings.Count(name, ".") != 4 {
				t.Errorf("valueFileName(%q, %q) = %q: not one plain name", field, value, name)
			}
			f, v, ok := valueOf(name)
			if !ok || f != field || v != value {
				t.Errorf("valueOf(%q) = %q, %q, %v; want %q, %q", name, f, v, ok, field, value)
			}
		}
	}
	if name, ok := valueFileName(valueFieldSource, strings.Repeat(".", 100)); ok {
		t.Errorf("valueFileName of 100 dots = %q, usable; want too long", name)
	}
	for _, name := range []string{".catalog.jsonl", ".catalog.source.a%4.jsonl", ".catalog.source.a%zz.jsonl", ".catalog.title.a.jsonl", ".catalog.source.a%61.jsonl", ".catalog.source.a.b.jsonl"} {
		if f, v, ok := valueOf(name); ok {
			t.Errorf("valueOf(%q) = %q, %q; want not a value file", name, f, v)
		}
	}
}

// rareProfile makes n sessions of source cli and, every tenth, one of
// source odd (as long a name, so that a test can swap one for the other
// in place); every filtered list is then read from the value index.
func rareProfile(t *testing.T, n int) (*Store, time.Time, *storetest.Warnings) {
	t.Helper()
	forceValueIndex(t)
	s, clock, w := newTestStore(t)
	for i := range n {
		clock.Advance(time.Second)
		source := "cli"
		if i%10 == 9 {
			source = "odd"
		}
		if _, _, err := s.Create(Session{ID: fmt.Sprintf("s%03d", i), Source: source}); err != nil {
			t.Fatal(err)
		}
	}
	return s, clock.Now(), w
}

// listedValueFile lists opts, whose filter is a source, and returns the
// path of the value file the list wrote.
func listedValueFile(t *testing.T, s *Store, opts ListOptions) string {
	t.Helper()
	if _, err := s.List(opts); err != nil {
		t.Fatal(err)
	}
	name, _ := valueFileName(valueFieldSource, opts.Source)
	path := filepath.Join(s.Dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no value file after a rare list: %v", err)
	}
	return path
}

// TestValueIndexIsRead: a rare filter's list comes from the value file,
// not the catalog: a catalog line changed in place after the file
// covered it (by hand, which no store write does) is not seen, until the
// catalog's last line changes and the file is written again. Without the
// index, the list would see it at once.
func TestValueIndexIsRead(t *testing.T) {
	s, _, _ := rareProfile(t, 40)
	odd := ListOptions{Source: "odd"}
	before, err := s.List(odd)
	if err != nil || len(before) != 4 {
		t.Fatalf("List(odd) = %s, %v; want 4 sessions", ids(before), err)
	}
	name, _ := valueFileName(valueFieldSource, "odd")
	if _, err := os.Stat(filepath.Join(s.Dir, name)); err != nil {
		t.Fatalf("no value file after a rare list: %v", err)
	}
	sess := docOf(t, s, "s000")
	sess.Source = "odd"
	if err := fsstore.WriteDoc(s.docPath("s000"), &sess); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.catalogPath())
	if err != nil {
		t.Fatal(err)
	}
	// The line after the catalog's name.
	start := bytes.IndexByte(b, '\n') + 1
	first := bytes.Index(b, []byte(`"source":"cli"`))
	if start != catalogHeaderLen || first < start || first > start+bytes.IndexByte(b[start:], '\n') {
		t.Fatalf("the catalog's first session line is not of source cli: %s", b)
	}
	copy(b[first:], `"source":"odd"`)
	if err := os.WriteFile(s.catalogPath(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(odd)
	if err != nil || ids(got) != ids(before) {
		t.Fatalf("List(odd) after the catalog changed under the index = %s, %v; want %s (the index's)", ids(got), err, ids(before))
	}
}

// TestValueIndexCatalogRebuiltOnSameInode: a value file made from one
// catalog is not read as the index of a later catalog that the file
// system gave the same inode number (ext4 gives a freed inode's number to
// the next file it makes), even one of the same size that ends in the
// same line. Here the later catalog is a rebuild from the documents after
// one was edited by hand; a rebuild is written to a new file and renamed
// over the catalog, and the old file's inode is made to hold it.
func TestValueIndexCatalogRebuiltOnSameInode(t *testing.T) {
	s, _, _ := rareProfile(t, 20)
	odd := ListOptions{Source: "odd"}
	if got, err := s.List(odd); err != nil || ids(got) != "s019,s009" {
		t.Fatalf("List(odd) = %s, %v; want s019,s009", ids(got), err)
	}
	sess := docOf(t, s, "s000")
	sess.Source = "odd"
	if err := fsstore.WriteDoc(s.docPath("s000"), &sess); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "old-catalog")
	if err := os.Link(s.catalogPath(), old); err != nil {
		t.Fatal(err)
	}
	was, err := os.ReadFile(s.catalogPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RebuildCatalog(); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := os.ReadFile(s.catalogPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(rebuilt) != len(was) || bytes.Equal(rebuilt, was) {
		t.Fatalf("the rebuilt catalog is not another catalog of the same size:\n%s\n%s", was, rebuilt)
	}
	if err := os.WriteFile(old, rebuilt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(old, s.catalogPath()); err != nil {
		t.Fatal(err)
	}
	if got, err := s.List(odd); err != nil || ids(got) != "s019,s009,s000" {
		t.Fatalf("List(odd) after a rebuild on the old inode = %s, %v; want s019,s009,s000", ids(got), err)
	}
}

// TestValueIndexUnnamedCatalog: a catalog without its name (an earlier
// build's) is not indexed: the first rare list walks it and compacts it,
// which names it, and the next list is read from the index.
func TestValueIndexUnnamedCatalog(t *testing.T) {
	s, _, w := rareProfile(t, 20)
	b := storetest.MustRead(t, s.catalogPath())
	if err := os.WriteFile(s.catalogPath(), b[catalogHeaderLen:], 0o600); err != nil {
		t.Fatal(err)
	}
	odd := ListOptions{Source: "odd"}
	name, _ := valueFileName(valueFieldSource, "odd")
	for i := range 2 {
		if got, err := s.List(odd); err != nil || ids(got) != "s019,s009" {
			t.Fatalf("list %d: List(odd) = %s, %v; want s019,s009", i, ids(got), err)
		}
		_, err := os.Stat(filepath.Join(s.Dir, name))
		if indexed := err == nil; indexed != (i == 1) {
			t.Fatalf("list %d: value file made: %v, want %v", i, indexed, i == 1)
		}
		f, err := os.Open(s.catalogPath())
		if err != nil {
			t.Fatal(err)
		}
		id := catalogID(f)
		f.Close()
		if id == "" {
			t.Fatalf("list %d: the catalog has no name after a rare list", i)
		}
	}
	if got := w.List(); len(got) != 0 {
		t.Errorf("warnings: %v", got)
	}
}

// TestValueIndexAfterTakeBack: a value file that covered a catalog line
// since taken back (a failed write's) and replaced by another is written
// again, not extended past a line that is gone.
func TestValueIndexAfterTakeBack(t *testing.T) {
	s, now, _ := rareProfile(t, 20)
	odd := ListOptions{Source: "odd"}
	at := now.Add(time.Second)
	s000 := docOf(t, s, "s000")
	gone := s.entryOf(&s000, at, at)
	if err := s.syncCatalog(gone); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(odd); err != nil {
		t.Fatal(err)
	}
	// What retract does to a line that is still the catalog's last.
	fi, err := os.Stat(s.catalogPath())
	if err != nil {
		t.Fatal(err)
	}
	line := s.catalogLine(t, gone)
	if err := os.Truncate(s.catalogPath(), fi.Size()-int64(len(line))); err != nil {
		t.Fatal(err)
	}
	// In its place, a line as long, of a session that became odd.
	s001 := docOf(t, s, "s001")
	s001.Source = "odd"
	if err := fsstore.WriteDoc(s.docPath("s001"), &s001); err != nil {
		t.Fatal(err)
	}
	if err := s.syncCatalog(s.entryOf(&s001, at, at)); err != nil {
		t.Fatal(err)
	}
	if now := s.catalogLine(t, s.entryOf(&s001, at, at)); len(now) != len(line) {
		t.Fatalf("the lines differ in length: %q, %q", line, now)
	}
	got, err := s.List(odd)
	if want := "s001,s019,s009"; err != nil || ids(got) != want {
		t.Fatalf("List(odd) after a take-back = %s, %v; want %s", ids(got), err, want)
	}
}

// catalogLine is the catalog line of e, with its newline.
func (s *Store) catalogLine(t *testing.T, e catalogEntry) []byte {
	t.Helper()
	b, err := os.ReadFile(s.catalogPath())
	if err != nil {
		t.Fatal(err)
	}
	id := []byte(`{"session_id":"` + e.SessionID + `"`)
	i := bytes.LastIndex(b, id)
	if i < 0 {
		t.Fatalf("no catalog line of %s", e.SessionID)
	}
	return b[i:]
}

// TestValueIndexLockedOrReadOnly: a rare list whose value index cannot be
// written (another list holds its lock; a read-only profile) walks the
// catalog and lists the same.
func TestValueIndexLockedOrReadOnly(t *testing.T) {
	s, _, w := rareProfile(t, 30)
	odd := ListOptions{Source: "odd"}
	unlock, err := fsstore.Lock(filepath.Join(s.Dir, valuesLockName), 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.List(odd)
	unlock()
	if want := "s029,s019,s009"; err != nil || ids(got) != want {
		t.Fatalf("List(odd) while the index is locked = %s, %v; want %s", ids(got), err, want)
	}
	if paths := valueFiles(s); len(paths) != 0 {
		t.Fatalf("a list that did not hold the lock wrote %v", paths)
	}
	if os.Getuid() == 0 {
		t.Skip("root writes a read-only directory: the read-only half runs as any other user (go test ./fsstore/sessions/ -run TestValueIndexLockedOrReadOnly)")
	}
	if err := os.Chmod(s.Dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(s.Dir, 0o700) })
	got, err = s.List(odd)
	if want := "s029,s019,s009"; err != nil || ids(got) != want {
		t.Fatalf("List(odd) of a read-only profile = %s, %v; want %s", ids(got), err, want)
	}
	if msgs := w.List(); len(msgs) > 0 {
		t.Errorf("a read-only profile's list warned: %q", msgs)
	}
}

// TestValueFileCompacted: a value file that its sessions' appends have
// grown past twice its size plus valueCompactMin is written again with
// the last line of each session, and lists the same.
func TestValueFileCompacted(t *testing.T) {
	s, _, _ := rareProfile(t, 20)
	odd := ListOptions{Source: "odd"}
	path := listedValueFile(t, s, odd)
	var largest int64
	for range 600 {
		if _, err := s.Append("s009", []Message{textMsg("user", "more")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(odd); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, fi.Size())
	}
	fi, _ := os.Stat(path)
	if largest > 2*valueCompactMin || fi.Size() > valueCompactMin {
		t.Errorf("value file grew to %d bytes and is %d; want it compacted below %d", largest, fi.Size(), 2*valueCompactMin)
	}
	got, err := s.List(odd)
	if want := "s009,s019"; err != nil || ids(got) != want {
		t.Fatalf("List(odd) = %s, %v; want %s", ids(got), err, want)
	}
}

// TestValueIndexFollowsLeavers: a session that leaves the value after
// its value file was written keeps its lines there, so that a list rules
// it out by its last line without opening its document, which is made
// unreadable here: a list that opened it would warn.
func TestValueIndexFollowsLeavers(t *testing.T) {
	s, _, w := rareProfile(t, 5)
	active := ListOptions{State: StateActive}
	if _, err := s.List(active); err != nil {
		t.Fatal(err)
	}
	if _, err := s.End("s003", "done"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.docPath("s003"), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(active)
	if want := "s004,s002,s001,s000"; err != nil || ids(got) != want {
		t.Fatalf("List(active) = %s, %v; want %s", ids(got), err, want)
	}
	if msgs := w.List(); len(msgs) > 0 {
		t.Errorf("the list opened a document its value file rules out: %q", msgs)
	}
}

// TestCheckValueIndex: fsck reports a value file whose mark holds but
// which lacks a session's last line (a list through it leaves the
// session out), and --repair removes it, after which the list is whole
// again; a value file whose mark no longer holds (the catalog compacted
// since) is no finding, since the next list writes it again.
func TestCheckValueIndex(t *testing.T) {
	s, _, _ := rareProfile(t, 20)
	odd := ListOptions{Source: "odd"}
	path := listedValueFile(t, s, odd)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"s019"`)) {
			kept = append(kept, line...)
		}
	}
	if len(kept) == len(b) {
		t.Fatalf("no line of s019 in %s", b)
	}
	if err := os.WriteFile(path, kept, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.List(odd); ids(got) != "s009" {
		t.Fatalf("List(odd) through the damaged file = %s; want s009 (the damage shows)", ids(got))
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || !strings.Contains(findings[0].What, "lacks the last catalog line of session s019") || !findings[0].Problem {
		t.Fatalf("Check = %+v; want one problem naming s019", findings)
	}
	findings, err = s.Check(true, t.TempDir())
	if err != nil || len(findings) != 1 || !findings[0].Repaired {
		t.Fatalf("Check(repair) = %+v, %v; want it repaired", findings, err)
	}
	if got, err := s.List(odd); err != nil || ids(got) != "s019,s009" {
		t.Fatalf("List(odd) after the repair = %s, %v; want s019,s009", ids(got), err)
	}
	if findings, err := s.Check(false, t.TempDir()); err != nil || len(findings) != 0 {
		t.Fatalf("Check after the repair = %+v, %v; want nothing", findings, err)
	}
	if err := os.WriteFile(path, kept, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.compactCatalog(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append("s000", []Message{textMsg("user", "more")}); err != nil {
		t.Fatal(err)
	}
	if err := s.compactCatalog(); err != nil {
		t.Fatal(err)
	}
	if findings, err := s.Check(false, t.TempDir()); err != nil || len(findings) != 0 {
		t.Fatalf("Check of a value file the catalog's compaction made stale = %+v, %v; want nothing", findings, err)
	}
}

// TestValueIndexConcurrent: lists through the value index while other
// goroutines create, append to and end sessions, and compact the catalog:
// each list holds only sessions of its filter, and once the writers are
// done, every filtered list equals the slow path's.
func TestValueIndexConcurrent(t *testing.T) {
	s, _, _ := rareProfile(t, 20)
	done := make(chan struct{})
	errs := make(chan error, 8)
	for w := range 3 {
		go func() {
			for i := range 15 {
				id := fmt.Sprintf("w%d-%02d", w, i)
				source := []string{"cli", "odd"}[i%2]
				if _, _, err := s.Create(Session{ID: id, Source: source}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Append(id, []Message{textMsg("user", "x")}); err != nil {
					errs <- err
					return
				}
				if i%3 == 0 {
					if _, err := s.End(id, "done"); err != nil {
						errs <- err
						return
					}
				}
				if i%5 == 4 {
					if err := compactNow(s); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				for _, opts := range []ListOptions{{Source: "odd"}, {State: StateEnded}, {Source: "odd", State: StateActive}} {
					list, err := s.List(opts)
					if err != nil {
						errs <- err
						return
					}
					for _, sess := range list {
						if opts.Source != "" && sess.Source != opts.Source || opts.State != "" && sess.State != opts.State {
							errs <- fmt.Errorf("List(%+v) holds %s of %s, %s", opts, sess.ID, sess.Source, sess.State)
							return
						}
					}
				}
			}
		}()
	}
	var failed []error
	for range 3 {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		t.Fatal(failed)
	}
	checkFilters(t, s, "after the writers")
}

// compactNow compacts the catalog as a writer does, under the
// compaction's lock.
func compactNow(s *Store) error {
	unlock, err := fsstore.Lock(filepath.Join(s.Dir, catalogCompactLockName), 10*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	return s.compactCatalog()
}
