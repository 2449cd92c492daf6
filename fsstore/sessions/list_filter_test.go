package sessions

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// wantFiltered is the slow path of a filtered list: the unfiltered list,
// which opens every document it lists, filtered on the documents.
func wantFiltered(all []Session, opts ListOptions) []Session {
	var want []Session
	for _, sess := range all {
		if (opts.State == "" || sess.State == opts.State) && (opts.Source == "" || sess.Source == opts.Source) && (opts.Limit == 0 || len(want) < opts.Limit) {
			want = append(want, sess)
		}
	}
	return want
}

var (
	filterStates  = []string{StateActive, StateEnded, StateSuspended, StateResumePending}
	filterSources = []string{"cli", "gateway", "import:claude", "", `we"ird<src>`, "rare"}
)

// checkFilters compares every filtered list with the slow path's.
func checkFilters(t *testing.T, s *Store, step string) {
	t.Helper()
	all, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var filters []ListOptions
	for _, state := range append(filterStates, "") {
		for _, source := range append(filterSources, "none") {
			if state == "" && source == "" {
				continue
			}
			for _, limit := range []int{0, 1, 3} {
				filters = append(filters, ListOptions{State: state, Source: source, Limit: limit})
			}
		}
	}
	for _, opts := range filters {
		got, err := s.List(opts)
		if want := wantFiltered(all, opts); err != nil || ids(got) != ids(want) {
			t.Fatalf("%s: List(%+v) = %s, %v; want %s", step, opts, ids(got), err, ids(want))
		}
	}
}

// TestListFilterProperty: on profiles made by random writes (creates of
// various sources, imports of older history, appends, renames, ends,
// reopens, interrupts, deletes, compactions of the catalog and its
// rebuild), every list filtered by state or source, with and without a
// limit, equals the unfiltered list filtered on the documents.
func TestListFilterProperty(t *testing.T) {
	for seed := range int64(storetest.Seeds(8)) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			listFilterProperty(t, seed, false)
		})
	}
}

// TestListFilterPropertyThroughValueIndex is TestListFilterProperty with
// every filtered list read from the value index (values.go), whose files
// are also torn, filled with garbage, emptied or removed at random steps.
func TestListFilterPropertyThroughValueIndex(t *testing.T) {
	forceValueIndex(t)
	for seed := range int64(storetest.Seeds(8)) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			listFilterProperty(t, seed, true)
		})
	}
}

// forceValueIndex makes every filtered list a rare one, read from the
// value index, for the rest of the test.
func forceValueIndex(t *testing.T) {
	lines, share := filterWalkLines, filterRareShare
	filterWalkLines, filterRareShare = 1, 0
	t.Cleanup(func() { filterWalkLines, filterRareShare = lines, share })
}

func listFilterProperty(t *testing.T, seed int64, damage bool) {
	rng := rand.New(rand.NewSource(seed))
	s, clock, _ := newTestStore(t)
	var made []string
	pick := func() string { return made[rng.Intn(len(made))] }
	ops := 12
	if damage {
		ops = 14
	}
	for step := range 150 {
		clock.Advance(time.Duration(1+rng.Intn(3)) * time.Second)
		op := rng.Intn(ops)
		if len(made) == 0 {
			op = 0
		}
		var err error
		switch op {
		case 0, 1:
			id := fmt.Sprintf("s%03d", step)
			_, _, err = s.Create(Session{ID: id, Source: filterSources[rng.Intn(len(filterSources))]})
			made = append(made, id)
		case 2:
			id := fmt.Sprintf("i%03d", step)
			old := clock.Now().Add(-time.Duration(rng.Intn(300)) * time.Second)
			msg := textMsg("user", "imported")
			msg.TS = fsstore.TimeOf(old)
			_, _, err = s.CreateWith(Session{ID: id, Source: "import:claude", CreatedAt: fsstore.TimeOf(old), UpdatedAt: fsstore.TimeOf(old)}, []Message{msg})
			made = append(made, id)
		case 3, 4:
			_, err = s.Append(pick(), []Message{textMsg("user", "more")})
		case 5:
			_, err = s.Rename(pick(), fmt.Sprintf("title %d", step))
		case 6:
			_, err = s.End(pick(), "done")
		case 7:
			_, err = s.Reopen(pick())
		case 8:
			_, err = s.MarkInterrupted(pick(), "restart_timeout", 2)
		case 9:
			id := pick()
			if _, err := s.End(id, "done"); err == nil {
				_, err = s.Delete(id, false)
			}
		case 10:
			err = s.compactCatalog()
		case 11:
			if rng.Intn(4) == 0 {
				err = os.Remove(s.catalogPath())
			}
		case 12, 13:
			err = damageValueFile(s, rng)
		}
		if err != nil && !errors.Is(err, fsstore.ErrNotFound) {
			t.Logf("step %d op %d: %v", step, op, err)
		}
		if step%10 == 9 {
			checkFilters(t, s, fmt.Sprintf("step %d", step))
		}
	}
	checkFilters(t, s, "end")
}

// TestListFiltersByCatalog: a list filtered by state or source opens no
// document of a session its last catalog line rules out: those are made
// unreadable, and the filtered list neither warns of nor quarantines
// them. It is how a filter that few sessions pass stays a walk of the
// catalog, not a read of every document.
func TestListFiltersByCatalog(t *testing.T) {
	s, clock, w := newTestStore(t)
	sources := []string{"cli", "gateway", "import"}
	for i := range 30 {
		clock.Advance(time.Second)
		id := fmt.Sprintf("s%02d", i)
		if _, _, err := s.Create(Session{ID: id, Source: sources[i%3]}); err != nil {
			t.Fatal(err)
		}
		switch i % 4 {
		case 1:
			if _, err := s.End(id, "test"); err != nil {
				t.Fatal(err)
			}
		case 2:
			if _, err := s.End(id, "test"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
			if _, err := s.Reopen(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	filters := []ListOptions{{State: StateEnded}, {State: StateActive}, {Source: "gateway"}, {Source: "gateway", State: StateEnded}, {State: StateEnded, Limit: 3}, {Source: "none"}}
	for _, opts := range filters {
		want := wantFiltered(all, opts)
		for _, sess := range all {
			if !containsID(want, sess.ID) && (opts.Limit == 0 || sess.State != opts.State) {
				if err := os.WriteFile(s.docPath(sess.ID), []byte("not json"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := s.List(opts)
		if err != nil || ids(got) != ids(want) {
			t.Errorf("List(%+v) = %s, %v; want %s", opts, ids(got), err, ids(want))
		}
		if msgs := w.List(); len(msgs) > 0 {
			t.Errorf("List(%+v) read %d documents it does not list, first %s", opts, len(msgs), msgs[0])
		}
		w.Reset()
		for _, sess := range all {
			if err := fsstore.WriteDoc(s.docPath(sess.ID), &sess); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestListFilterConfirmsDocument: a catalog line that says more than the
// document (a crash between a write's line and its document) lists
// nothing the document does not say: the session whose line says ended
// and whose document says active is not in the list of ended sessions.
func TestListFilterConfirmsDocument(t *testing.T) {
	s, clock, _ := newTestStore(t)
	mustCreate(t, s, "a")
	clock.Advance(time.Second)
	sess := docOf(t, s, "a")
	sess.State = StateEnded
	if err := s.syncCatalog(s.entryOf(&sess, clock.Now(), clock.Now())); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ListOptions{State: StateEnded})
	if err != nil || len(got) != 0 {
		t.Fatalf("List(--state ended) = %s, %v; want none", ids(got), err)
	}
}

func containsID(list []Session, id string) bool {
	for _, s := range list {
		if s.ID == id {
			return true
		}
	}
	return false
}
