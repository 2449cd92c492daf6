package checkpoints

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// objPath is where the store keeps object h.
func objPath(t testing.TB, s *Store, h string) string {
	t.Helper()
	path, err := s.objectPath(h)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// sha256Hex is the name an earlier build gave data.
func sha256Hex(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// New objects are named by their BLAKE3 (the test vector of the empty
// input), under the fan of the digest's first two hex digits.
func TestHashIsBLAKE3(t *testing.T) {
	const empty = "b3-af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	if got := Hash(nil); got != empty {
		t.Fatalf("Hash(nil) = %s, want %s", got, empty)
	}
	s := Open(t.TempDir())
	h, err := s.Put([]byte{})
	if err != nil || h != empty {
		t.Fatalf("Put = %s, %v", h, err)
	}
	if want := filepath.Join(s.Dir, "objects", "af", "b3-1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"); objPath(t, s, h) != want {
		t.Fatalf("object at %s, want %s", objPath(t, s, h), want)
	}
	for _, bad := range []string{"b3-" + empty[3:66], "b3-" + sha256Hex(nil)[:63] + "g", "b4-" + sha256Hex(nil), "b3-b3-" + sha256Hex(nil)[6:]} {
		if ValidHash(bad) {
			t.Errorf("ValidHash(%q) = true", bad)
		}
	}
}

// A store an earlier build made names its objects by their SHA-256, 64
// hex digits alone: they are listed, read and checked, resolved and
// compared with files, pruned and compressed beside the new ones.
func TestEarlierBuildObjects(t *testing.T) {
	profile := t.TempDir()
	st := sessions.NewStore(profile, "default", time.Second, func(string) {})
	sess, _, err := st.Create(sessions.Session{})
	if err != nil {
		t.Fatal(err)
	}
	s := Open(profile)
	plain := bytes.Repeat([]byte("stored as it is\n"), 100)
	packed := []byte("stored compressed\n")
	orphan := []byte("no record names it\n")
	old := func(data []byte, compress bool) string {
		h := sha256Hex(data)
		dir := filepath.Join(s.Dir, "objects", h[:2])
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		b := data
		if compress {
			z, err := gzipped(data)
			if err != nil {
				t.Fatal(err)
			}
			b = z.Bytes()
		}
		if err := os.WriteFile(filepath.Join(dir, h[2:]), b, 0o600); err != nil {
			t.Fatal(err)
		}
		return h
	}
	hp, hz, ho := old(plain, false), old(packed, true), old(orphan, false)
	hn, err := s.Put([]byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := s.Objects()
	if err != nil || len(objs) != 4 {
		t.Fatalf("Objects = %v, %v; want 4", objs, err)
	}
	for h, want := range map[string][]byte{hp: plain, hz: packed, ho: orphan, hn: []byte("new\n")} {
		if _, ok := objs[h]; !ok {
			t.Errorf("Objects lacks %s", h)
		}
		if got, err := s.Get(h); err != nil || !bytes.Equal(got, want) {
			t.Errorf("Get(%s) = %q, %v", h, got, err)
		}
	}
	if !Matches(hp, plain) || Matches(hp, packed) || !Matches(hn, []byte("new\n")) {
		t.Error("Matches does not hash in the algorithm of its hash")
	}
	m := sessions.Message{Role: "system", Content: sessions.TextContent("x")}
	Attach(&m, []Change{{Path: "/p", Before: hp, After: hz}, {Path: "/n", Before: hn, After: hp}})
	if _, err := st.Append(sess.ID, []sessions.Message{m}); err != nil {
		t.Fatal(err)
	}
	lost := filepath.Join(profile, "lost+found")
	if findings, err := s.Check(st, false, lost); err != nil || len(findings) != 0 {
		t.Fatalf("fsck of a store with both kinds: %+v, %v", findings, err)
	}
	// A corrupt old object is found as a new one is.
	if err := os.WriteFile(objPath(t, s, hz), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	m = sessions.Message{Role: "system", Content: sessions.TextContent("y")}
	Attach(&m, []Change{{Path: "/z", Before: hz}})
	if _, err := st.Append(sess.ID, []sessions.Message{m}); err != nil {
		t.Fatal(err)
	}
	if findings, _ := s.Check(st, false, lost); len(findings) != 1 || !findings[0].Problem {
		t.Fatalf("fsck of a corrupt old object: %+v", findings)
	}
	old(packed, true)
	// A prune compresses the old object stored as it is and removes the
	// one nothing refers to.
	out, err := s.Prune(st, PruneOptions{MaxAge: DefaultMaxAge, MaxBytes: DefaultMaxBytes, Now: time.Now().Add(2 * time.Hour)})
	if err != nil || len(out) != 1 || out[0].Hash != ho {
		t.Fatalf("Prune = %+v, %v; want %s", out, err, ho)
	}
	if got, err := s.Get(hp); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Get(%s) after a prune = %q, %v", hp, got, err)
	}
	if fi, err := os.Stat(objPath(t, s, hp)); err != nil || fi.Size() >= int64(len(plain)) {
		t.Fatalf("old object after a prune: %v, %v; want it compressed", fi, err)
	}
	if _, err := s.Get(ho); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("Get of a pruned old object: %v", err)
	}
}

// A file is compared with a hash in that hash's algorithm: an earlier
// build's pending record (SHA-256) is resolved as a new one is, and a
// Hasher computes the SHA-256 only when asked to.
func TestResolveEarlierHashes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	made, unmade, since := write("made", "after\n"), write("unmade", "before\n"), write("since", "user\n")
	var cs []Change
	for _, p := range []string{made, unmade, since} {
		cs = append(cs, Change{Path: p, Before: sha256Hex([]byte("before\n")), After: sha256Hex([]byte("after\n"))})
	}
	cs = append(cs, Change{Path: made, Before: Hash([]byte("before\n")), After: Hash([]byte("after\n"))})
	got := Paths(Resolve(cs, presentHash))
	if want := []string{made, made, since}; !slices.Equal(got, want) {
		t.Fatalf("Resolve = %v, want %v", got, want)
	}
	h := NewHasher(Hash([]byte("x")))
	h.Write([]byte("after\n"))
	if sum := h.Sum(); sum.Hash != Hash([]byte("after\n")) || sum.Is(sha256Hex([]byte("after\n"))) || sum.Is("") {
		t.Fatalf("a Hasher for new hashes: %+v", sum)
	}
	h = NewHasher("", sha256Hex(nil))
	h.Write([]byte("after\n"))
	if sum := h.Sum(); !sum.Is(sha256Hex([]byte("after\n"))) || !sum.Is(Hash([]byte("after\n"))) {
		t.Fatalf("a Hasher for an earlier build's hash: %+v", sum)
	}
}
