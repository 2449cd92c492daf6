package sessions

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// resolveByListing is Resolve of an id or a prefix (no titles) as it was
// before the id index: a listing of the directory (ids, from s.IDs), the
// answer the index must give.
func resolveByListing(s *Store, ids []string, ref string) (string, error) {
	if _, err := os.Stat(s.docPath(ref)); err == nil {
		return ref, nil
	}
	switch matches := fsstore.WithPrefix(ids, ref); len(matches) {
	case 0:
		return "", fsstore.NotFoundf("no session with id, id prefix or title %q", ref)
	case 1:
		return matches[0], nil
	default:
		return "", fsstore.Ambiguous(ref, matches)
	}
}

// sameAnswer checks Resolve of each ref against resolveByListing, the
// directory listed once for them all.
func sameAnswer(s *Store, refs ...string) error {
	ids, err := s.IDs()
	if err != nil {
		return err
	}
	for _, ref := range refs {
		want, werr := resolveByListing(s, ids, ref)
		got, gerr := s.Resolve(ref)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			return fmt.Errorf("Resolve(%q) = %q, %v; the listing says %q, %v", ref, got, gerr, want, werr)
		}
	}
	return nil
}

// TestPrefixIndexMatchesListing runs random histories of creates, forks,
// removals, crashes between an index entry and its document, merges of
// the log (and crashes inside one) and lost removal lines, and checks
// after each step that Resolve answers every prefix of every id ever used,
// and strings no id starts with, as a listing of the directory does:
// unique prefixes, ambiguous ones (with more than ten candidates too),
// exact ids that are prefixes of others, removed sessions.
func TestPrefixIndexMatchesListing(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= int64(storetest.Seeds(6)); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			// The answers are the subject, not durability: no syncs.
			storetest.SetSeams(t, nil, nil, func(*os.File) error { return nil })
			rng := rand.New(rand.NewSource(seed))
			s, _, _ := newTestStore(t)
			used := map[string]bool{}
			newID := func() string {
				const alphabet = "ab1_"
				n := 1 + rng.Intn(5)
				b := make([]byte, n)
				for i := range b {
					b[i] = alphabet[rng.Intn(len(alphabet))]
				}
				return string(b)
			}
			live := func() []string {
				ids, err := s.IDs()
				if err != nil {
					t.Fatal(err)
				}
				return ids
			}
			for step := range 80 {
				var what string
				switch op := rng.Intn(10); {
				case op < 5:
					id := newID()
					what = "create " + id
					if _, _, err := s.Create(Session{ID: id, Source: "test"}); err != nil {
						t.Fatal(err)
					}
					used[id] = true
				case op == 5:
					// A crash between the entry and the document.
					id := newID()
					what = "entry without document " + id
					if _, err := os.Lstat(s.docPath(id)); err == nil {
						continue
					}
					if _, err := s.indexNewID(id); err != nil {
						t.Fatal(err)
					}
					used[id] = true
				case op == 6:
					ids := live()
					if len(ids) == 0 {
						continue
					}
					id := ids[rng.Intn(len(ids))]
					what = "remove " + id
					if _, err := s.End(id, "test"); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Delete(id, false); err != nil {
						t.Fatal(err)
					}
					if rng.Intn(3) == 0 {
						// Its unsynced removal line lost in a crash.
						what += " (removal line lost)"
						dropLastLine(t, s.idsRecentPath())
					}
				case op == 7:
					ids := live()
					if len(ids) == 0 {
						continue
					}
					parent := ids[rng.Intn(len(ids))]
					mustAppend(t, s, parent, textMsg("user", "hi"))
					what = "fork " + parent
					child, err := s.Fork(parent, 1, "")
					if err != nil {
						t.Fatal(err)
					}
					used[child.ID] = true
				case op == 8:
					what = "merge"
					crash := rng.Intn(2) == 0
					var log []byte
					if crash {
						what = "merge, crash before the log's removal"
						log, _ = os.ReadFile(s.idsRecentPath())
					}
					unlock, err := s.lockIDs()
					if err != nil {
						t.Fatal(err)
					}
					err = s.mergeIDsLocked()
					unlock()
					if err != nil {
						t.Fatal(err)
					}
					if crash && log != nil {
						if err := os.WriteFile(s.idsRecentPath(), log, 0o600); err != nil {
							t.Fatal(err)
						}
					}
				default:
					// A profile from before the index, until its next create.
					what = "index removed"
					os.Remove(s.idsPath())
					os.Remove(s.idsRecentPath())
				}
				refs := map[string]bool{"zz": true, "a1b1a": true}
				for id := range used {
					for i := 1; i <= len(id); i++ {
						refs[id[:i]] = true
					}
					refs[id+"b"] = true
				}
				if err := sameAnswer(s, slices.Collect(maps.Keys(refs))...); err != nil {
					t.Fatalf("step %d (%s): %v", step, what, err)
				}
			}
		})
	}
}

// dropLastLine cuts the last line off the file at path.
func dropLastLine(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	b = b[:len(b)-1]
	b = b[:strings.LastIndexByte(string(b), '\n')+1]
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPrefixIndexManyCandidates: a prefix of thousands of sessions, in
// .ids and in the log, is ambiguous with the same ten newest candidates
// the listing names, and a unique prefix and a miss among them are found.
func TestPrefixIndexManyCandidates(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	storetest.SetSeams(t, nil, nil, func(*os.File) error { return nil })
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 3000 {
		id := fmt.Sprintf("2026_%05d", i*7)
		ids = append(ids, id)
		if err := os.WriteFile(s.docPath(id), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RebuildIDs(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"2026_99999", "2026_5"} {
		mustCreate(t, s, id)
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if err := sameAnswer(s, "2", "2026_", "2026_0", "2026_1", "2026_0000", "2026_00007", "2026_9", "2026_99", "2026_5", "2026_57", "2026_2099", "2027", "2026_x", "1"); err != nil {
		t.Error(err)
	}
}

// TestLowerBound checks the binary search over .ids against a linear
// one, for keys before, between, on and after its lines, of any length.
func TestLowerBound(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := range 40 {
		var lines []string
		for range n {
			lines = append(lines, strings.Repeat(string(rune('a'+rng.Intn(3))), 1+rng.Intn(700)))
		}
		sort.Strings(lines)
		lines = compactStrings(lines)
		path := filepath.Join(t.TempDir(), "ids")
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		keys := append([]string{"", "a", "b", "c", "d", "bb"}, lines...)
		for _, l := range lines {
			keys = append(keys, l+"a", l[:len(l)-1])
		}
		for _, key := range keys {
			want := int64(0)
			for _, l := range lines {
				if l < key {
					want += int64(len(l)) + 1
				}
			}
			got, err := lowerBound(f, int64(b.Len()), key)
			if err != nil || got != want {
				t.Fatalf("%d lines: lowerBound(%q) = %d, %v; want %d", len(lines), key, got, err, want)
			}
		}
		f.Close()
	}
}

// TestCheckIDIndex: fsck reports a document the index lacks (one copied
// in by hand), and an .ids out of order, and --repair rebuilds the index
// so that the prefix finds the session; stale entries are a note.
func TestCheckIDIndex(t *testing.T) {
	s, _, _ := newTestStore(t)
	mustCreate(t, s, "alpha")
	mustCreate(t, s, "beta")
	if _, err := s.indexNewID("gamma"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.docPath("alpha"))
	if err != nil {
		t.Fatal(err)
	}
	copied := strings.Replace(string(b), `"alpha"`, `"copied"`, 1)
	if err := os.WriteFile(s.docPath("copied"), []byte(copied), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve("cop"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("Resolve(cop) before the repair = %v; the index lacks it", err)
	}
	if id, err := s.Resolve("copied"); err != nil || id != "copied" {
		t.Fatalf("Resolve(copied) = %q, %v; an exact id is found without the index", id, err)
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := idFindings(findings); got != "P id index lacks session copied|- id index has 1 entries of sessions without a document (a crash between an entry and its document, or a lost removal); lookups skip them" {
		t.Fatalf("findings: %s", got)
	}
	findings, err = s.Check(true, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := idFindings(findings); !strings.HasPrefix(got, "R id index lacks session copied|") {
		t.Fatalf("findings with repair: %s", got)
	}
	if id, err := s.Resolve("cop"); err != nil || id != "copied" {
		t.Fatalf("Resolve(cop) after the repair = %q, %v", id, err)
	}
	if findings, _ := s.Check(false, t.TempDir()); !strings.HasPrefix(idFindings(findings), "- id index has 1 entries") {
		t.Fatalf("after the repair: %s", idFindings(findings))
	}

	if err := os.WriteFile(s.idsPath(), []byte("beta\nalpha\ncopied\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	findings, err = s.Check(true, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := idFindings(findings); !strings.HasPrefix(got, "R id index is not in order|") {
		t.Fatalf("findings: %s", got)
	}
	if err := sameAnswer(s, "al", "be", "co"); err != nil {
		t.Error(err)
	}
}

// idFindings sums up Check's findings about the id index: P a problem,
// R repaired, - a note.
func idFindings(findings []fsstore.Finding) string {
	var out []string
	for _, f := range findings {
		if !strings.Contains(f.What, "id index") {
			continue
		}
		mark := "-"
		switch {
		case f.Repaired:
			mark = "R"
		case f.Problem:
			mark = "P"
		}
		out = append(out, mark+" "+f.What)
	}
	return strings.Join(out, "|")
}
