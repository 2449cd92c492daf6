package gatewaystate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestDeliveredUnsynced: the delivery record is a cache written without a
// sync (issue 47: it was one of a turn's three syncs).
func TestDeliveredUnsynced(t *testing.T) {
	t.Parallel()
	g, _, _ := newTestGateway(t)
	// The first record makes the directories, once.
	if err := g.SetDelivered("s0", 2); err != nil {
		t.Fatal(err)
	}
	var synced []string
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		synced = append(synced, f.Name())
		return f.Sync()
	})
	if err := g.SetDelivered("s1", 2); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 0 {
		t.Errorf("SetDelivered synced %v, want nothing", synced)
	}
}

// TestDeliveredLost: a power cut may leave the unsynced log empty, its
// name on none, or with a torn last line: the first two read as nothing
// delivered (a repeat of the last turn then gets its stored reply again,
// and runs nothing), the torn line is passed over, without an error that
// would fail the request; the next record after a torn line writes the
// log afresh, and says so.
func TestDeliveredLost(t *testing.T) {
	g, _, w := newTestGateway(t)
	if err := g.SetDelivered("s1", 4); err != nil {
		t.Fatal(err)
	}
	path := g.deliveredPath("s1")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"session_id":"s1","message_cou`)
	f.Close()
	if n, err := g.Delivered("s1"); n != 4 || err != nil {
		t.Fatalf("a torn last line: %d, %v; want 4, nil", n, err)
	}
	if err := g.SetDelivered("s1", 6); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), `"message_count":6`) {
		t.Errorf("after a torn line, the log holds %q; want the new record alone", b)
	}
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], "torn") {
		t.Errorf("warnings %q", ws)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := g.Delivered("s1"); n != 0 || err != nil {
		t.Fatalf("an emptied log: %d, %v; want 0, nil", n, err)
	}
	if n, err := g.Delivered("s2"); n != 0 || err != nil {
		t.Fatalf("no record: %d, %v", n, err)
	}
}

// TestDeliveredAppends: a session's delivery records are appended to one
// file, not each written to a new one that replaces the last (a file made
// costs ext4 tens to hundreds of microseconds of CPU, an append a few);
// the log is written afresh, small, once it passes deliveredCompactAt.
func TestDeliveredAppends(t *testing.T) {
	g, _, _ := newTestGateway(t)
	if err := g.SetDelivered("s1", 2); err != nil {
		t.Fatal(err)
	}
	path := g.deliveredPath("s1")
	first, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	count := int64(2)
	for range 10 {
		count += 2
		if err := g.SetDelivered("s1", count); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(first, fi) {
			t.Fatalf("record %d is in a new file", count)
		}
		if n, err := g.Delivered("s1"); n != count || err != nil {
			t.Fatalf("Delivered: %d, %v; want %d", n, err, count)
		}
	}
	for first.Size() < deliveredCompactAt {
		count += 2
		if err := g.SetDelivered("s1", count); err != nil {
			t.Fatal(err)
		}
		if first, err = os.Stat(path); err != nil {
			t.Fatal(err)
		}
	}
	count += 2
	if err := g.SetDelivered("s1", count); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() >= deliveredCompactAt/4 {
		t.Errorf("past %d bytes the log is %d bytes; want it written afresh", deliveredCompactAt, fi.Size())
	}
	if n, err := g.Delivered("s1"); n != count || err != nil {
		t.Fatalf("after the rewrite: %d, %v; want %d", n, err, count)
	}
}

// TestDeliveredFirstRecordInPlace: a session's first delivery record
// makes its log in place, with no temp file renamed over it: a file made
// costs ext4 tens to hundreds of microseconds of CPU, and the temp file
// and its rename were a second one on a conversation's first turn. The
// record is read back, and the next one is appended to the same file.
func TestDeliveredFirstRecordInPlace(t *testing.T) {
	t.Parallel()
	g, _, _ := newTestGateway(t)
	if err := g.SetDelivered("s0", 2); err != nil {
		t.Fatal(err)
	}
	var temps []string
	storetest.SetSeams(t, func(dir, pattern string) (*os.File, error) {
		temps = append(temps, pattern)
		return os.CreateTemp(dir, pattern)
	}, nil, nil)
	if err := g.SetDelivered("s1", 2); err != nil {
		t.Fatal(err)
	}
	if len(temps) != 0 {
		t.Errorf("the first record made temp files %v, want none", temps)
	}
	first, err := os.Lstat(g.deliveredPath("s1"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Mode().Perm() != 0o600 {
		t.Errorf("the log's mode is %v, want 0600", first.Mode().Perm())
	}
	if err := g.SetDelivered("s1", 4); err != nil {
		t.Fatal(err)
	}
	if n, err := g.Delivered("s1"); n != 4 || err != nil {
		t.Fatalf("Delivered: %d, %v; want 4", n, err)
	}
	if fi, err := os.Lstat(g.deliveredPath("s1")); err != nil || !os.SameFile(first, fi) {
		t.Errorf("the second record is in another file (%v)", err)
	}
}

// TestDeliveredLegacy: the document an earlier build wrote
// (delivered/<session>.json) is read while the session has no log, and
// its first record replaces it.
func TestDeliveredLegacy(t *testing.T) {
	g, _, _ := newTestGateway(t)
	legacy := g.legacyDeliveredPath("s1")
	if err := os.MkdirAll(filepath.Dir(legacy), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(legacy, []byte(`{"session_id":"s1","message_count":3,"at":"2026-11-01T00:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := g.Delivered("s1"); n != 3 || err != nil {
		t.Fatalf("the document: %d, %v; want 3", n, err)
	}
	if err := g.SetDelivered("s1", 5); err != nil {
		t.Fatal(err)
	}
	if n, err := g.Delivered("s1"); n != 5 || err != nil {
		t.Fatalf("after a record: %d, %v; want 5", n, err)
	}
	if _, err := os.Lstat(legacy); !os.IsNotExist(err) {
		t.Errorf("the document stays beside the log: %v", err)
	}
}

// TestCacheConversationSyncs: a conversation's first mapping is written
// without a sync, neither it nor its directory; SyncConversations (a
// clean stop) syncs each mapping so written, once, and then their
// directory; a mapping written since by PutConversation stays as it is.
func TestCacheConversationSyncs(t *testing.T) {
	t.Parallel()
	g, _, _ := newTestGateway(t)
	// The profile's directories are made once; they are not a mapping's cost.
	if err := g.PutConversation(Conversation{Conversation: "c0", SessionID: "s0"}); err != nil {
		t.Fatal(err)
	}
	var synced []string
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		synced = append(synced, filepath.Base(f.Name()))
		return f.Sync()
	})
	for _, slug := range []string{"c1", "c2"} {
		if err := g.CacheConversation(Conversation{Conversation: slug, SessionID: "s-" + slug}); err != nil {
			t.Fatal(err)
		}
	}
	if len(synced) != 0 {
		t.Errorf("a first mapping synced %v, want nothing", synced)
	}
	if c, err := g.GetConversation("c1"); err != nil || c.SessionID != "s-c1" || c.CreatedAt == "" {
		t.Fatalf("GetConversation = %+v, %v", c, err)
	}
	if err := g.SyncConversations(); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 3 || !strings.HasPrefix(synced[0], ".c1.json.tmp-") || !strings.HasPrefix(synced[1], ".c2.json.tmp-") || synced[2] != "conversations" {
		t.Errorf("SyncConversations synced %v, want both mappings and their directory", synced)
	}
	if c, err := g.GetConversation("c2"); err != nil || c.SessionID != "s-c2" {
		t.Fatalf("GetConversation after the sync = %+v, %v", c, err)
	}
	synced = nil
	if err := g.SyncConversations(); err != nil || len(synced) != 0 {
		t.Errorf("a second SyncConversations synced %v, %v; want nothing", synced, err)
	}
}
