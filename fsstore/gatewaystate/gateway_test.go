package gatewaystate

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

func newTestGateway(t *testing.T) (*Store, *storetest.Clock, *storetest.Warnings) {
	t.Helper()
	w := &storetest.Warnings{}
	clock := storetest.NewClock()
	g := NewStore(filepath.Join(t.TempDir(), "profiles", "default"), 10*time.Second, w.Add)
	g.Now = clock.Now
	return g, clock, w
}

func putN(t *testing.T, g *Store, clock *storetest.Clock, n, max int) []string {
	t.Helper()
	var ids []string
	for range n {
		now := clock.Advance(time.Millisecond)
		r := Response{ID: responseID(now), SessionID: "s1", CreatedAt: fsstore.TimeOf(now), OutputText: "x"}
		if _, err := g.PutResponse(r, max); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// storedIDs lists the response documents on disk.
func storedIDs(t *testing.T, g *Store) []string {
	t.Helper()
	ids, err := g.responseIDsOnDisk()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func indexLines(t *testing.T, g *Store) int {
	t.Helper()
	b, err := os.ReadFile(g.indexPath())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// sameSet reports whether a and b hold the same ids, in any order.
func sameSet(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, ",") == strings.Join(b, ",")
}

func TestPutResponseEvictsOldest(t *testing.T) {
	g, clock, _ := newTestGateway(t)
	const max = 3
	ids := putN(t, g, clock, 200, max)
	if got := storedIDs(t, g); !sameSet(got, ids[len(ids)-max:]) {
		t.Fatalf("stored %v, want the newest %v", got, ids[len(ids)-max:])
	}
	// The index is compacted: it never holds many more names than the limit.
	if n := indexLines(t, g); n > 2*max+64 {
		t.Fatalf("index has %d lines", n)
	}
	for _, id := range ids[:len(ids)-max] {
		if _, err := g.GetResponse(id); !errors.Is(err, fsstore.ErrNotFound) {
			t.Fatalf("evicted %s: %v", id, err)
		}
	}
	r, err := g.GetResponse(ids[len(ids)-1])
	if err != nil || r.SessionID != "s1" || string(r.Output) != "[]" {
		t.Fatalf("newest: %+v, %v", r, err)
	}
}

// A store opened afresh (a restart) with a lower limit evicts down to it,
// reading the index, not the documents: documents that would not parse are
// evicted all the same.
func TestPutResponseAfterRestartWithLowerLimit(t *testing.T) {
	g, clock, _ := newTestGateway(t)
	ids := putN(t, g, clock, 10, 100)
	for _, id := range ids[:5] {
		if err := os.WriteFile(g.responsePath(id), []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g2 := NewStore(filepath.Dir(g.Dir), g.LockTimeout, g.Warn)
	g2.Now = clock.Now
	more := putN(t, g2, clock, 1, 2)
	want := []string{ids[len(ids)-1], more[0]}
	if got := storedIDs(t, g2); !sameSet(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
}

// A document whose index line was never written (a crash between the two)
// is found on the next load and evicted first; a lost index is rebuilt from
// the documents.
func TestResponseIndexRecovery(t *testing.T) {
	g, clock, _ := newTestGateway(t)
	ids := putN(t, g, clock, 3, 10)
	orphan := responseID(storetest.Epoch.Add(-time.Hour))
	if err := fsstore.WriteDoc(g.responsePath(orphan), &Response{ID: orphan}); err != nil {
		t.Fatal(err)
	}
	g2 := NewStore(filepath.Dir(g.Dir), g.LockTimeout, g.Warn)
	g2.Now = clock.Now
	more := putN(t, g2, clock, 1, 4)
	if got := storedIDs(t, g2); !sameSet(got, append(ids, more...)) {
		t.Fatalf("after the orphan: stored %v", got)
	}

	if err := os.Remove(g.indexPath()); err != nil {
		t.Fatal(err)
	}
	g3 := NewStore(filepath.Dir(g.Dir), g.LockTimeout, g.Warn)
	g3.Now = clock.Now
	last := putN(t, g3, clock, 1, 2)
	if got := storedIDs(t, g3); !sameSet(got, []string{more[0], last[0]}) {
		t.Fatalf("after the lost index: stored %v", got)
	}
}

// A corrupt line in the middle of the index: the index is quarantined and
// rebuilt from the documents, never silently reset; no document is lost.
func TestResponseIndexCorrupt(t *testing.T) {
	g, clock, w := newTestGateway(t)
	ids := putN(t, g, clock, 3, 10)
	b, _ := os.ReadFile(g.indexPath())
	lines := strings.SplitAfter(string(b), "\n")
	bad := lines[0] + "not json\n" + strings.Join(lines[1:], "")
	if err := os.WriteFile(g.indexPath(), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	g2 := NewStore(filepath.Dir(g.Dir), g.LockTimeout, w.Add)
	g2.Now = clock.Now
	more := putN(t, g2, clock, 1, 10)
	if got := storedIDs(t, g2); !sameSet(got, append(ids, more...)) {
		t.Fatalf("stored %v", got)
	}
	aside, _ := filepath.Glob(g.indexPath() + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("corrupt index not kept aside: %v", aside)
	}
	if got, _ := os.ReadFile(aside[0]); string(got) != bad {
		t.Fatalf("the quarantined index differs from what was there")
	}
	if len(w.List()) == 0 {
		t.Fatal("the quarantine was not reported")
	}
}

func TestGetResponseErrors(t *testing.T) {
	g, clock, _ := newTestGateway(t)
	if _, err := g.GetResponse("resp_nope"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := g.GetResponse("../x"); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
	ids := putN(t, g, clock, 1, 10)
	os.WriteFile(g.responsePath(ids[0]), []byte("{"), 0o600)
	var corrupt *fsstore.CorruptError
	if _, err := g.GetResponse(ids[0]); !errors.As(err, &corrupt) {
		t.Fatalf("corrupt: %v", err)
	}
	if aside, _ := filepath.Glob(g.responsePath(ids[0]) + ".corrupt-*"); len(aside) != 1 {
		t.Fatalf("not quarantined: %v", aside)
	}
}

func TestConversationMapping(t *testing.T) {
	g, _, _ := newTestGateway(t)
	if _, err := g.GetConversation("c1"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("new conversation: %v", err)
	}
	for _, bad := range []string{"", "../c", ".hidden", "a/b", strings.Repeat("x", 97)} {
		if _, err := g.LockConversation(bad); !errors.Is(err, fsstore.ErrInvalid) {
			t.Fatalf("LockConversation(%q): %v", bad, err)
		}
		if err := g.PutConversation(Conversation{Conversation: bad, SessionID: "s"}); !errors.Is(err, fsstore.ErrInvalid) {
			t.Fatalf("PutConversation(%q): %v", bad, err)
		}
	}
	unlock, err := g.LockConversation("c1")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.PutConversation(Conversation{Conversation: "c1", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	unlock()
	c, err := g.GetConversation("c1")
	if err != nil || c.SessionID != "s1" || c.CreatedAt == "" {
		t.Fatalf("%+v, %v", c, err)
	}
	path := filepath.Join(g.conversationsDir(), "c1.json")
	os.WriteFile(path, []byte("{}"), 0o600)
	var corrupt *fsstore.CorruptError
	if _, err := g.GetConversation("c1"); !errors.As(err, &corrupt) {
		t.Fatalf("a mapping without a session: %v", err)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Fatalf("not quarantined: %v", aside)
	}
}

func TestGatewayStateAndMarkers(t *testing.T) {
	g, clock, _ := newTestGateway(t)
	if _, ok, err := g.ReadState(); ok || err != nil {
		t.Fatalf("fresh: %v %v", ok, err)
	}
	st := State{PID: 42, Addr: "127.0.0.1:1", StartedAt: fsstore.TimeOf(clock.Now())}
	if err := g.WriteState(st); err != nil {
		t.Fatal(err)
	}
	got, ok, err := g.ReadState()
	if !ok || err != nil || got.PID != 42 || got.InterruptedSessions == nil {
		t.Fatalf("%+v %v %v", got, ok, err)
	}
	for _, clean := range []bool{true, false, false, true} {
		if err := g.SetCleanShutdown(clean, clock.Now()); err != nil {
			t.Fatal(err)
		}
		if got, err := g.CleanShutdown(); err != nil || got != clean {
			t.Fatalf("clean=%v: %v %v", clean, got, err)
		}
	}
	// Private by default.
	for _, p := range []string{g.statePath(), g.CleanShutdownPath()} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(g.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v", g.Dir, err)
	}
}

func TestServeLock(t *testing.T) {
	g, _, _ := newTestGateway(t)
	if running, err := g.Serving(); running || err != nil {
		t.Fatalf("fresh: %v %v", running, err)
	}
	unlock, err := g.LockServe(0)
	if err != nil {
		t.Fatal(err)
	}
	if running, err := g.Serving(); !running || err != nil {
		t.Fatalf("held: %v %v", running, err)
	}
	var timeout *fsstore.LockTimeoutError
	if _, err := g.LockServe(10 * time.Millisecond); !errors.As(err, &timeout) {
		t.Fatalf("second LockServe: %v", err)
	}
	unlock()
	if running, err := g.Serving(); running || err != nil {
		t.Fatalf("released: %v %v", running, err)
	}
}

// responseID is a response id as the gateway makes them: time-ordered, so
// that a listing sorts by creation.
func responseID(now time.Time) string {
	return "resp_" + strings.Replace(now.UTC().Format("20060102_150405.000000"), ".", "_", 1)
}

// A run's process is named with its host when that is another one.
func TestStateProcess(t *testing.T) {
	for _, c := range []struct {
		st   State
		want string
	}{
		{State{PID: 42}, "pid 42"},
		{State{Host: fsstore.ThisHost(), PID: 42}, "pid 42"},
		{State{Host: "host-b", PID: 42}, "pid 42 on host host-b"},
	} {
		if got := c.st.Process(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.st, got, c.want)
		}
	}
}

// A response id names its session after its time and random part; an id
// of the form before names none, and CacheResponse refuses a response
// whose id does not name its session. CacheResponse syncs nothing: its
// document is a cache of the session's transcript.
func TestCacheResponse(t *testing.T) {
	t.Parallel()
	const old = "resp_20261121_020734_123456_a1b2c3d4e5f60718"
	for id, want := range map[string]string{
		old:                             "",
		old + "_20261121_020700_a1b2c3": "20261121_020700_a1b2c3",
		old + "_":                       "",
		old + "_../x":                   "",
		"resp_x":                        "",
		old[:len(old)-1] + "_s1":        "",
	} {
		if got := ResponseSession(id); got != want {
			t.Errorf("ResponseSession(%q) = %q, want %q", id, got, want)
		}
	}
	g, clock, _ := newTestGateway(t)
	putN(t, g, clock, 1, 0) // the directory and the index exist
	var synced []string
	stop := fsstore.ObserveSyncs(g.Dir, func(name string) { synced = append(synced, name) })
	defer stop()
	r := Response{ID: old + "_s1", SessionID: "s1", CreatedAt: fsstore.TimeOf(clock.Now())}
	if _, err := g.CacheResponse(r, 0); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 0 {
		t.Fatalf("CacheResponse synced %v", synced)
	}
	if got, err := g.GetResponse(r.ID); err != nil || got.SessionID != "s1" {
		t.Fatalf("GetResponse: %+v, %v", got, err)
	}
	r.ID, r.SessionID = old+"_s1", "s2"
	if _, err := g.CacheResponse(r, 0); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("a response whose id names another session: %v, want ErrInvalid", err)
	}
}

// Evicted: of responses whose documents are missing, those that max
// others come after, the index's listed in its order and the unlisted
// put in time order among them; a response the index lost, newer than
// those it lists, was not evicted.
func TestEvicted(t *testing.T) {
	t.Parallel()
	g, clock, _ := newTestGateway(t)
	ids := putN(t, g, clock, 4, 2)
	lost := responseID(clock.Advance(time.Millisecond)) // stored, its document and index line lost
	ancient := "resp_20000101_000000_000000"
	got, err := g.Evicted([]string{ids[0], ids[1], lost, ancient}, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ids[0]: true, ids[1]: true, ancient: true}
	if len(got) != len(want) || !got[ids[0]] || !got[ids[1]] || !got[ancient] {
		t.Fatalf("Evicted = %v, want %v", got, want)
	}
	if got, _ := g.Evicted([]string{lost}, 2); got[lost] {
		t.Fatal("the latest response, lost, counts as evicted")
	}
	if got, _ := g.Evicted([]string{ids[0]}, 0); got[ids[0]] {
		t.Fatal("with no limit a response counts as evicted")
	}
}
