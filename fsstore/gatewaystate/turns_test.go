package gatewaystate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

func TestKeys(t *testing.T) {
	g, clock, _ := newTestGateway(t)
	if _, err := g.GetKey("k"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("a new key: %v", err)
	}
	// Any text is a key: only its digest touches a path.
	for _, key := range []string{"k", "../../etc/passwd", "stainless-node-retry-0b1c", "\x00"} {
		k := Key{KeySHA256: KeyDigest(key), RequestSHA256: "r", SessionID: "s1", From: 2}
		if err := g.PutKey(k); err != nil {
			t.Fatalf("PutKey(%q): %v", key, err)
		}
		got, err := g.GetKey(key)
		if err != nil || got.SessionID != "s1" || got.From != 2 || got.CreatedAt == "" {
			t.Fatalf("GetKey(%q) = %+v, %v", key, got, err)
		}
	}
	if err := g.PutKey(Key{KeySHA256: "../x", SessionID: "s1"}); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("a digest that is not one: %v", err)
	}
	// Records older than the cutoff go; younger ones stay.
	clock.Advance(48 * time.Hour)
	if err := g.PutKey(Key{KeySHA256: KeyDigest("young"), SessionID: "s2"}); err != nil {
		t.Fatal(err)
	}
	n, err := g.PruneKeys(clock.Now().Add(-24 * time.Hour))
	if err != nil || n != 4 {
		t.Fatalf("PruneKeys = %d, %v; want the 4 old records", n, err)
	}
	if _, err := g.GetKey("k"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("a pruned key: %v", err)
	}
	if _, err := g.GetKey("young"); err != nil {
		t.Fatalf("a young key: %v", err)
	}
	// A record that is not one is quarantined, not taken for a new key.
	path := filepath.Join(g.Dir, "keys", KeyDigest("young")+".json")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := g.GetKey("young"); err == nil || errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("a corrupt record: %v", err)
	}
}

func TestDelivered(t *testing.T) {
	g, _, _ := newTestGateway(t)
	if n, err := g.Delivered("s1"); n != 0 || err != nil {
		t.Fatalf("nothing delivered: %d, %v", n, err)
	}
	if err := g.SetDelivered("s1", 4); err != nil {
		t.Fatal(err)
	}
	if n, err := g.Delivered("s1"); n != 4 || err != nil {
		t.Fatalf("Delivered = %d, %v", n, err)
	}
	if err := g.SetDelivered("../s1", 4); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("a hostile session id: %v", err)
	}
}
