package gatewaystate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// digestIn returns a digest of the shard whose name is prefix, the nth.
func digestIn(prefix string, n int) string {
	return prefix + fmt.Sprintf("%062x", n)
}

// TestHistoryAppends: the entries of a shard are lines appended to one
// file, never a file made each (a file made costs ext4 tens to hundreds
// of microseconds of CPU, an append a few); a later entry of a digest
// replaces the earlier one.
func TestHistoryAppends(t *testing.T) {
	g, _, _ := newTestGateway(t)
	if err := g.PutHistory(History{Digest: digestIn("ab", 0), SessionID: "s0", MessageCount: 2}); err != nil {
		t.Fatal(err)
	}
	path := g.historyShardPath(digestIn("ab", 0))
	first, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		if err := g.PutHistory(History{Digest: digestIn("ab", i), SessionID: fmt.Sprint("s", i), MessageCount: int64(2 * i)}); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || !os.SameFile(first, fi) {
			t.Fatalf("entry %d is in a new file (%v)", i, err)
		}
		for _, j := range []int{0, i / 2, i} {
			h, ok, err := g.GetHistory(digestIn("ab", j))
			if err != nil || !ok || h.SessionID != fmt.Sprint("s", j) {
				t.Fatalf("after %d entries, entry %d: %+v %v %v", i, j, h, ok, err)
			}
		}
	}
	if err := g.PutHistory(History{Digest: digestIn("ab", 3), SessionID: "s99", MessageCount: 7}); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := g.GetHistory(digestIn("ab", 3)); err != nil || !ok || h.SessionID != "s99" || h.MessageCount != 7 {
		t.Fatalf("the later entry of a digest: %+v %v %v", h, ok, err)
	}
	if _, ok, err := g.GetHistory(digestIn("ab", 21)); ok || err != nil {
		t.Fatalf("a digest with no entry: %v %v", ok, err)
	}
	if _, ok, err := g.GetHistory(digestIn("cd", 0)); ok || err != nil {
		t.Fatalf("a shard with no file: %v %v", ok, err)
	}
}

// TestHistoryOtherWriters: what a store knows of a shard is checked at
// each lookup, so it finds the entries another process (another store)
// appended since, and a shard written anew (fsck) is read afresh, even
// when it is as long as the one read.
func TestHistoryOtherWriters(t *testing.T) {
	a, _, _ := newTestGateway(t)
	b := NewStore(filepath.Dir(a.Dir), a.LockTimeout, a.Warn)
	if err := a.PutHistory(History{Digest: digestIn("ab", 1), SessionID: "s1", MessageCount: 2}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.GetHistory(digestIn("ab", 1)); !ok {
		t.Fatal("b does not find a's entry")
	}
	if err := a.PutHistory(History{Digest: digestIn("ab", 2), SessionID: "s2", MessageCount: 2}); err != nil {
		t.Fatal(err)
	}
	if h, ok, _ := b.GetHistory(digestIn("ab", 2)); !ok || h.SessionID != "s2" {
		t.Fatal("b does not find the entry a appended after b read the shard")
	}
	// The shard written anew by another, as long as before, its first
	// entry naming another session.
	path := a.historyShardPath(digestIn("ab", 1))
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fresh := strings.Replace(string(old), `"session_id":"s1"`, `"session_id":"s9"`, 1)
	if err := fsstore.WriteCacheFile(path, []byte(fresh)); err != nil {
		t.Fatal(err)
	}
	if h, ok, _ := b.GetHistory(digestIn("ab", 1)); !ok || h.SessionID != "s9" {
		t.Fatalf("after the shard was written anew: %+v, %v; want s9", h, ok)
	}
}

// TestHistoryTorn: a power cut may leave a shard with a torn last line
// (its appends are not synced): lookups pass over it, and the next entry
// moves it aside first, and says so.
func TestHistoryTorn(t *testing.T) {
	g, _, w := newTestGateway(t)
	if err := g.PutHistory(History{Digest: digestIn("ab", 1), SessionID: "s1", MessageCount: 2}); err != nil {
		t.Fatal(err)
	}
	path := g.historyShardPath(digestIn("ab", 1))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"digest":"` + digestIn("ab", 2) + `","sess`)
	f.Close()
	if h, ok, err := g.GetHistory(digestIn("ab", 1)); !ok || err != nil || h.SessionID != "s1" {
		t.Fatalf("before a torn line: %+v %v %v", h, ok, err)
	}
	if _, ok, err := g.GetHistory(digestIn("ab", 2)); ok || err != nil {
		t.Fatalf("the torn entry: %v %v", ok, err)
	}
	if err := g.PutHistory(History{Digest: digestIn("ab", 3), SessionID: "s3", MessageCount: 2}); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := g.GetHistory(digestIn("ab", 3)); !ok || err != nil || h.SessionID != "s3" {
		t.Fatalf("the entry after the torn line: %+v %v %v", h, ok, err)
	}
	if aside, _ := filepath.Glob(path + ".torn-*"); len(aside) != 1 {
		t.Errorf("torn tail kept aside: %v", aside)
	}
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], "torn tail") {
		t.Errorf("warnings %q", ws)
	}
}

// TestHistoryLegacy: the document an earlier build wrote for a digest
// (history/<digest>.json) is read while no shard holds the digest; an
// entry in the shard takes its place.
func TestHistoryLegacy(t *testing.T) {
	g, _, _ := newTestGateway(t)
	d := digestIn("ab", 1)
	if err := os.MkdirAll(g.historyDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.legacyHistoryPath(d), []byte(`{"digest":"`+d+`","session_id":"s1","message_count":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := g.GetHistory(d); !ok || err != nil || h.SessionID != "s1" {
		t.Fatalf("the document: %+v %v %v", h, ok, err)
	}
	if err := g.PutHistory(History{Digest: d, SessionID: "s2", MessageCount: 4}); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := g.GetHistory(d); !ok || err != nil || h.SessionID != "s2" {
		t.Fatalf("after an entry in the shard: %+v %v %v", h, ok, err)
	}
}

// TestHistoryLockNamesNoHolder: an entry is appended under a lock that
// holds no holder record (fsstore.LockLogUntil): the shards are logs,
// fenced by their ends, and the record was most of the lock's cost.
func TestHistoryLockNamesNoHolder(t *testing.T) {
	g, _, _ := newTestGateway(t)
	size := int64(-1)
	storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) {
		if fi, err := os.Stat(g.historyLockPath()); err == nil {
			size = fi.Size()
		}
		return f.Write(b)
	})
	if err := g.PutHistory(History{Digest: digestIn("ab", 0), SessionID: "s0", MessageCount: 2}); err != nil {
		t.Fatal(err)
	}
	if size != 0 {
		t.Errorf("the history index's lock file held %d bytes as the entry was written, want none", size)
	}
}
