package sessions

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestCompressCommitPoint: when the parent's document cannot be written,
// the child is removed again and the parent is as it was.
func TestCompressCommitPoint(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	forkParent(t, s, "p", 5)
	doc := storetest.MustRead(t, s.docPath("p"))
	storetest.SetSeams(t, nil, func(from, to string) error {
		if to == s.docPath("p") {
			return storetest.ErrInjected
		}
		return os.Rename(from, to)
	}, nil)
	if _, err := s.Compress("p", 5, []Message{textMsg("system", "summary")}); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("Compress = %v, want the injected error", err)
	}
	if ids, _ := s.IDs(); strings.Join(ids, " ") != "p" {
		t.Fatalf("a failed compression left sessions %v", ids)
	}
	if !bytes.Equal(storetest.MustRead(t, s.docPath("p")), doc) {
		t.Fatal("a failed compression changed the parent")
	}
}

// TestChainAcrossCompressions: Latest and Chain follow compressed_into,
// and stop at a session that was pruned.
func TestChainAcrossCompressions(t *testing.T) {
	s, _, _ := newTestStore(t)
	forkParent(t, s, "a", 3)
	b, err := s.Compress("a", 3, []Message{textMsg("system", "s1")})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, b.ID, textMsg("user", "more"))
	c, err := s.Compress(b.ID, 2, []Message{textMsg("system", "s2")})
	if err != nil {
		t.Fatal(err)
	}
	want := "a " + b.ID + " " + c.ID
	for _, id := range []string{"a", b.ID, c.ID} {
		if chain, err := s.Chain(id); err != nil || strings.Join(chain, " ") != want {
			t.Errorf("Chain(%s) = %v, %v; want %s", id, chain, err, want)
		}
		if latest, err := s.Latest(id); err != nil || latest != c.ID {
			t.Errorf("Latest(%s) = %s, %v; want %s", id, latest, err, c.ID)
		}
	}
	// A fork names its parent too, but continues no chain.
	f, err := s.Fork(c.ID, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if chain, _ := s.Chain(f.ID); len(chain) != 1 {
		t.Errorf("Chain of a fork = %v", chain)
	}
	if _, err := s.End(c.ID, "user"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(c.ID, false); err != nil {
		t.Fatal(err)
	}
	if latest, err := s.Latest("a"); err != nil || latest != b.ID {
		t.Errorf("Latest after the newest was deleted = %s, %v; want %s", latest, err, b.ID)
	}
	if _, err := s.Compress(b.ID, 3, nil); !errors.Is(err, fsstore.ErrRefused) {
		t.Errorf("a second compression of %s = %v, want ErrRefused", b.ID, err)
	}
}
