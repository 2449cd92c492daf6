package checkpoints

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
)

// Prune removes objects nothing refers to, then by age, then the oldest
// past the size bound, marking those a checkpoint referred to
// unrestorable, which fsck then notes rather than reports.
func TestPrune(t *testing.T) {
	profile := t.TempDir()
	st := sessions.NewStore(profile, "default", time.Second, func(string) {})
	sess, _, err := st.Create(sessions.Session{})
	if err != nil {
		t.Fatal(err)
	}
	s := Open(profile)
	put := func(b string) string {
		h, err := s.Put([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b, orphan := put("older"), put("newer"), put("orphan")
	for _, h := range []string{a, b} {
		m := sessions.Message{Role: "system", Content: sessions.TextContent("x")}
		Attach(&m, []Change{{Path: "/f", Before: h, After: Hash([]byte("z"))}})
		if _, err := st.Append(sess.ID, []sessions.Message{m}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // a's record is the older
	}
	objs, _ := s.Objects()
	now := time.Now()
	prune := func(o PruneOptions) []string {
		t.Helper()
		out, err := s.Prune(st, o)
		if err != nil {
			t.Fatal(err)
		}
		var hs []string
		for _, p := range out {
			hs = append(hs, p.Hash)
		}
		return hs
	}
	// A young orphan is kept: a call in flight may be about to name it.
	if got := prune(PruneOptions{MaxAge: DefaultMaxAge, MaxBytes: DefaultMaxBytes, Now: now}); len(got) != 0 {
		t.Fatalf("pruned %v at once", got)
	}
	if got := prune(PruneOptions{MaxAge: DefaultMaxAge, MaxBytes: DefaultMaxBytes, Now: now.Add(2 * time.Hour), DryRun: true}); len(got) != 1 || got[0] != orphan {
		t.Fatalf("dry run: %v, want the orphan", got)
	}
	if _, err := s.Get(orphan); err != nil {
		t.Fatalf("a dry run removed: %v", err)
	}
	if got := prune(PruneOptions{MaxAge: DefaultMaxAge, MaxBytes: DefaultMaxBytes, Now: now.Add(2 * time.Hour)}); len(got) != 1 || got[0] != orphan {
		t.Fatalf("pruned %v, want the orphan", got)
	}
	if got := prune(PruneOptions{MaxAge: DefaultMaxAge, MaxBytes: objs[b], Now: now.Add(2 * time.Hour)}); len(got) != 1 || got[0] != a {
		t.Fatalf("over max_bytes: pruned %v, want the older", got)
	}
	findings, err := s.Check(st, false, filepath.Join(profile, "lost+found"))
	if err != nil || len(findings) != 1 || findings[0].Problem {
		t.Fatalf("fsck after prune: %+v, %v; want one note", findings, err)
	}
	if got := prune(PruneOptions{MaxAge: DefaultMaxAge, MaxBytes: DefaultMaxBytes, Now: now.Add(31 * 24 * time.Hour)}); len(got) != 1 || got[0] != b {
		t.Fatalf("over max_age: pruned %v, want the newer", got)
	}
	// Stored again, an object marked unrestorable is whole again.
	put("newer")
	findings, _ = s.Check(st, false, filepath.Join(profile, "lost+found"))
	if len(findings) != 1 {
		t.Fatalf("fsck: %+v, want a note for a only", findings)
	}
}
