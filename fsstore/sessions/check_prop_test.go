package sessions

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestCheckSameAsReference damages generated profiles at random and holds
// Check's findings, and the count of sessions it checked, to those of the
// reference check (check_ref_test.go), without and with repair, reading
// a few names at a time so that findings cross batches. The damage:
// documents and transcripts missing, corrupt or naming another id,
// duplicate titles, counts ahead of the transcript, states the catalog
// does not give, times in another form, torn tails, seq gaps, catalog
// lines missing or naming sessions without a document, an id index out
// of order, lacking or with stale entries, title index buckets missing,
// unreadable or stale, and ids that sort otherwise than their names.
// A plain go test checks 15 of the 30 profiles, HERMES_TEST_LONG=1 (CI)
// all of them (storetest.Seeds).
func TestCheckSameAsReference(t *testing.T) {
	batch := checkBatch
	t.Cleanup(func() { checkBatch = batch })
	checkBatch = 3
	// The seeds share nothing but checkBatch, set here for all of them and
	// restored once they have all run: they run in parallel.
	for seed := range uint64(storetest.Seeds(30)) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 7))
			base := filepath.Join(t.TempDir(), "base")
			s, _, _ := newTestStoreIn(t, base)
			damaged(t, s, r)
			for _, repair := range []bool{false, true} {
				run := func(name string, check func(*Store, bool, string) ([]fsstore.Finding, int, error)) ([]fsstore.Finding, int, error) {
					dir := filepath.Join(t.TempDir(), name)
					if out, err := exec.Command("cp", "-a", base, dir).CombinedOutput(); err != nil {
						t.Fatalf("cp: %v: %s", err, out)
					}
					s, _, _ := newTestStoreIn(t, dir)
					found, n, err := check(s, repair, filepath.Join(dir, "lost+found"))
					for i := range found {
						found[i].Path = strings.ReplaceAll(found[i].Path, dir, "PROFILE")
						found[i].What = strings.ReplaceAll(found[i].What, dir, "PROFILE")
					}
					return found, n, err
				}
				got, gotN, gotErr := run(fmt.Sprintf("new-%v", repair), (*Store).CheckSessions)
				want, wantN, wantErr := run(fmt.Sprintf("ref-%v", repair), (*Store).refCheckSessions)
				if gotErr != nil || wantErr != nil {
					t.Fatalf("repair %v: errors %v and %v", repair, gotErr, wantErr)
				}
				if !reflect.DeepEqual(got, want) || gotN != wantN {
					t.Errorf("repair %v: %d sessions checked, findings:\n%s\nthe reference: %d sessions, findings:\n%s",
						repair, gotN, findingLines(got), wantN, findingLines(want))
				}
			}
		})
	}
}

func findingLines(fs []fsstore.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\t%v %v %s: %s\n", f.Problem, f.Repaired, f.Path, f.What)
	}
	return b.String()
}

// damaged fills s with sessions, some titled, some sharing a title, and
// damages its files at random.
func damaged(t *testing.T, s *Store, r *rand.Rand) {
	t.Helper()
	n := 8 + r.IntN(20)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		if r.IntN(6) == 0 {
			// "s03.x" sorts after "s03.json" by name, and before it by id.
			id = fmt.Sprintf("s%02d.x", i)
		}
		sess := Session{ID: id, Source: "test"}
		if r.IntN(2) == 0 {
			sess.Title = fmt.Sprintf("title %d", r.IntN(n))
		}
		if _, _, err := s.Create(sess); err != nil && !strings.Contains(err.Error(), "title") {
			t.Fatal(err)
		}
		if _, err := os.Stat(s.docPath(id)); err != nil {
			continue
		}
		ids = append(ids, id)
		for range r.IntN(4) {
			mustAppend(t, s, id, textMsg("user", "hello"))
		}
	}
	pick := func() string { return ids[r.IntN(len(ids))] }
	editDoc := func(id string, edit func(map[string]any)) {
		var m map[string]any
		if json.Unmarshal(storetest.MustRead(t, s.docPath(id)), &m) != nil {
			return
		}
		edit(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, s.docPath(id), b)
	}
	appendTo := func(path, text string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
	editLines := func(path string, edit func([]string) []string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		lines := strings.SplitAfter(string(b), "\n")
		writeFile(t, path, []byte(strings.Join(edit(lines), "")))
	}
	damage := []func(){
		func() { os.Remove(s.docPath(pick())) },
		func() { os.Remove(s.logPath(pick())) },
		func() { writeFile(t, s.docPath(pick()), []byte("{not json")) },
		func() { editDoc(pick(), func(m map[string]any) { m["id"] = "other" }) },
		func() {
			title := fmt.Sprintf("title %d", r.IntN(n))
			editDoc(pick(), func(m map[string]any) { m["title"] = title })
		},
		func() {
			editDoc(pick(), func(m map[string]any) {
				m["created_at"] = []string{"", "yesterday", "2025-12-31T23:00:00-02:00", "2026-01-01T00:00:00Z"}[r.IntN(4)]
			})
		},
		func() { editDoc(pick(), func(m map[string]any) { m["message_count"] = 9 }) },
		func() { editDoc(pick(), func(m map[string]any) { m["state"] = "ended" }) },
		func() { appendTo(s.logPath(pick()), `{"seq":`) },
		func() {
			appendTo(s.logPath(pick()), `{"seq":50,"ts":"2026-01-01T00:00:00Z","role":"user","content":"x"}`+"\n")
		},
		func() { appendTo(s.logPath(pick()), "not a message\n") },
		func() {
			editLines(s.catalogPath(), func(l []string) []string {
				i := r.IntN(len(l))
				return append(l[:i:i], l[i+1:]...)
			})
		},
		func() {
			appendTo(s.catalogPath(), fmt.Sprintf(`{"session_id":%q,"at":"2026-01-01T00:00:00Z","state":"%s"}`+"\n",
				[]string{"ghost", pick()}[r.IntN(2)], []string{"active", "suspended"}[r.IntN(2)]))
		},
		func() {
			appendTo(s.catalogPath(), fmt.Sprintf(`{"session_id":%q,"at":"2026-01-01T00:00:00Z","removed":true}`+"\n", pick()))
		},
		func() {
			editLines(s.idsPath(), func(l []string) []string {
				if i := r.IntN(len(l)); i+1 < len(l) && strings.HasSuffix(l[i+1], "\n") {
					l[i], l[i+1] = l[i+1], l[i]
				}
				return l
			})
		},
		func() {
			editLines(s.idsPath(), func(l []string) []string {
				i := r.IntN(len(l))
				return append(l[:i:i], l[i+1:]...)
			})
		},
		func() { appendTo(s.idsPath(), "zz-stale\n") },
		func() { appendTo(s.idsRecentPath(), "+"+[]string{"ghost", pick()}[r.IntN(2)]+"\n") },
		func() { appendTo(s.idsRecentPath(), "-"+pick()+"\n") },
		func() {
			if b := bucketFiles(s); len(b) > 0 {
				os.Remove(b[r.IntN(len(b))])
			}
		},
		func() {
			if b := bucketFiles(s); len(b) > 0 {
				writeFile(t, b[r.IntN(len(b))], []byte("[{"))
			}
		},
		func() {
			title := fmt.Sprintf("title %d", r.IntN(n))
			entries, err := json.Marshal([]titleEntry{{Title: title, SessionID: pick()}, {Title: title, SessionID: "ghost"}})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(s.titlesDir(), bucketOf(title))
			if files := bucketFiles(s); len(files) > 0 && r.IntN(2) == 0 {
				// Entries in a bucket their title does not hash to.
				path = files[0]
			}
			writeFile(t, path, entries)
		},
		func() { os.Remove(s.titlesCompletePath()) },
		func() {
			path := filepath.Join(s.Dir, ".s00.json.tmp-1")
			writeFile(t, path, []byte("{}"))
			old := time.Now().Add(-time.Hour)
			os.Chtimes(path, old, old)
		},
		func() { writeFile(t, s.logPath(pick())+".torn-1", []byte("x")) },
		func() {
			writeFile(t, filepath.Join(s.Dir, "odd.json.jsonl.keep.json"), []byte(`{"id":"odd.json.jsonl.keep"}`))
		},
		func() {
			writeFile(t, filepath.Join(s.Dir, "orphan.jsonl"), []byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","role":"user","content":"x"}`+"\n"))
		},
	}
	for range 1 + r.IntN(8) {
		damage[r.IntN(len(damage))]()
	}
}

func bucketFiles(s *Store) []string {
	entries, _ := os.ReadDir(s.titlesDir())
	var out []string
	for _, e := range entries {
		if isBucketName(e.Name()) {
			out = append(out, filepath.Join(s.titlesDir(), e.Name()))
		}
	}
	return out
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
