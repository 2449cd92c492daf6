package checkpoints

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/hermes/hermes/fsstore"
)

func TestPutGetDedup(t *testing.T) {
	s := Open(t.TempDir())
	data := bytes.Repeat([]byte("hermes\x00\xff"), 1000)
	h, err := s.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	if h != Hash(data) {
		t.Fatalf("Put = %s, want %s", h, Hash(data))
	}
	if h2, err := s.Put(data); err != nil || h2 != h {
		t.Fatalf("second Put = %s, %v", h2, err)
	}
	objs, err := s.Objects()
	if err != nil || len(objs) != 1 {
		t.Fatalf("Objects = %v, %v; want one", objs, err)
	}
	if objs[h] >= int64(len(data)) {
		t.Errorf("object holds %d bytes for %d repetitive ones: not compressed", objs[h], len(data))
	}
	got, err := s.Get(h)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get = %d bytes, %v", len(got), err)
	}
	fi, err := os.Stat(objPath(t, s, h))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("object file: %v, %v; want mode 0600", fi, err)
	}
}

func TestGetMissingAndCorrupt(t *testing.T) {
	s := Open(t.TempDir())
	if _, err := s.Get(Hash([]byte("x"))); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("Get of a missing object: %v, want not found", err)
	}
	if _, err := s.Get("../../etc/passwd"); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("Get of a bad hash: %v, want invalid", err)
	}
	h, err := s.Put([]byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Put([]byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	// An object whose file holds another's bytes hashes wrong.
	b, err := os.ReadFile(objPath(t, s, other))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(objPath(t, s, h), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(h); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of a swapped object: %v, want corrupt", err)
	}
	if err := os.WriteFile(objPath(t, s, h), []byte("not gzip"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(h); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of a garbled object: %v, want corrupt", err)
	}
}

func TestPlan(t *testing.T) {
	recs := []Record{
		{Seq: 3, Changes: []Change{{Path: "/a", Before: "a0", After: "a1", Mode: "0644"}, {Path: "/n", Created: true, After: "n1"}}},
		{Seq: 5, Changes: []Change{{Path: "/a", Before: "a1", After: "a2", Mode: "0644"}, {Path: "/big", NotCheckpointed: "too big", After: "b1"}}},
		{Seq: 8, Changes: []Change{{Path: "/n", Before: "n1", After: "n2"}}},
	}
	got := Plan(recs)
	want := []Target{
		{Path: "/a", Want: "a0", Mode: "0644", Expect: "a2"},
		{Path: "/big", Lost: "too big", Expect: "b1"},
		{Path: "/n", Absent: true, Expect: "n2"},
	}
	if len(got) != len(want) {
		t.Fatalf("Plan = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("target %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if after := After(recs, 5); len(after) != 2 || after[0].Seq != 5 {
		t.Errorf("After(5) = %+v", after)
	}
	if after := After(recs, 9); len(after) != 0 {
		t.Errorf("After(9) = %+v", after)
	}
}

func TestParseID(t *testing.T) {
	sid, seq, err := ParseID("20261121_020734_a1b2c3:12")
	if err != nil || sid != "20261121_020734_a1b2c3" || seq != 12 {
		t.Fatalf("ParseID = %q %d %v", sid, seq, err)
	}
	for _, bad := range []string{"x", ":3", "x:0", "x:y"} {
		if _, _, err := ParseID(bad); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("ParseID(%q) = %v, want invalid", bad, err)
		}
	}
}

func TestPending(t *testing.T) {
	s := Open(t.TempDir())
	p := Pending{SessionID: "s1", CallID: "call/../1", Changes: []Change{{Path: "/a", Before: "x"}}}
	if err := s.SetPending(p); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.PendingOf("s1", "call/../1")
	if err != nil || !ok || got.Changes[0].Path != "/a" {
		t.Fatalf("PendingOf = %+v %v %v", got, ok, err)
	}
	all, err := s.AllPending()
	if err != nil || len(all) != 1 {
		t.Fatalf("AllPending = %v %v", all, err)
	}
	if err := s.ClearPending("s1", "call/../1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.PendingOf("s1", "call/../1"); ok {
		t.Fatal("pending record left after ClearPending")
	}
}
