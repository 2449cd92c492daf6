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

// TestDeliveredLost: a power cut may leave the unsynced record empty, or
// its name on none: either reads as nothing delivered (a repeat of the
// last turn then gets its stored reply again, and runs nothing), without
// an error that would fail the request; the empty one is moved aside and
// warned of.
func TestDeliveredLost(t *testing.T) {
	g, _, w := newTestGateway(t)
	if err := g.SetDelivered("s1", 4); err != nil {
		t.Fatal(err)
	}
	path := g.deliveredPath("s1")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := g.Delivered("s1"); n != 0 || err != nil {
		t.Fatalf("an emptied record: %d, %v; want 0, nil", n, err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the emptied record stays: %v", err)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("kept aside: %v", aside)
	}
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], "delivery of session s1") {
		t.Errorf("warnings %q", ws)
	}
	if n, err := g.Delivered("s2"); n != 0 || err != nil {
		t.Fatalf("no record: %d, %v", n, err)
	}
}

// TestUpdateConversationSyncs: moving an existing mapping to a turn's
// response syncs the mapping and not its directory (its name is
// committed); a mapping that is not there yet is written as
// PutConversation writes it, its directory synced too.
func TestUpdateConversationSyncs(t *testing.T) {
	t.Parallel()
	g, _, _ := newTestGateway(t)
	if err := g.PutConversation(Conversation{Conversation: "c1", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	var synced []string
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		synced = append(synced, filepath.Base(f.Name()))
		return f.Sync()
	})
	if err := g.UpdateConversation(Conversation{Conversation: "c1", SessionID: "s1", ResponseID: "resp_1", MessageCount: 2}); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || !strings.HasPrefix(synced[0], ".c1.json.tmp-") {
		t.Errorf("an update synced %v, want the mapping alone", synced)
	}
	if c, err := g.GetConversation("c1"); err != nil || c.ResponseID != "resp_1" || c.MessageCount != 2 || c.SessionID != "s1" {
		t.Fatalf("GetConversation = %+v, %v", c, err)
	}
	synced = nil
	if err := g.UpdateConversation(Conversation{Conversation: "c2", SessionID: "s2", ResponseID: "resp_2", MessageCount: 2}); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 || synced[1] != "conversations" {
		t.Errorf("a new mapping synced %v, want it and its directory", synced)
	}
}
