package usage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// model is what the property test knows it stored: each live session's
// calls, in transcript order.
type model map[string][]Entry

// TestReportCountsDistinctCalls: random profiles of sessions made by
// turns, forks, compressions, files imported twice, deletes and prunes;
// every report equals the sum over the distinct calls the live sessions
// hold, worked out from the test's own record of what it stored, each
// call in the oldest session (by id) that holds it.
func TestReportCountsDistinctCalls(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			checkProfile(t, rand.New(rand.NewPCG(seed, 42)))
		})
	}
}

func checkProfile(t *testing.T, rng *rand.Rand) {
	st := sessions.NewStore(t.TempDir(), "p", time.Second, func(string) {})
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := base
	st.Now = func() time.Time { return clock }
	live := model{}
	calls := 0
	models := []string{"claude-sonnet-4-5", "gpt-4o", "local-7b", ""}
	newMsgs := func(n int) []sessions.Message {
		var out []sessions.Message
		for range n {
			clock = clock.Add(time.Duration(rng.IntN(20)) * time.Hour)
			m := sessions.Message{Role: "user", Content: sessions.TextContent("q"), TS: fsstore.TimeOf(clock)}
			r := sessions.Message{Role: "assistant", Content: sessions.TextContent("a"), TS: fsstore.TimeOf(clock.Add(time.Second))}
			if rng.IntN(4) > 0 {
				calls++
				Put(&r, Call{ID: fmt.Sprintf("c%d", calls), Input: rng.Int64N(1000), Output: rng.Int64N(100), CacheRead: rng.Int64N(5000),
					CacheWrite5m: rng.Int64N(50), InputHasCache: rng.IntN(2) == 0, Model: models[rng.IntN(len(models))]})
			}
			out = append(out, m, r)
		}
		return out
	}
	entries := func(id string, msgs []sessions.Message) []Entry {
		var out []Entry
		for _, m := range msgs {
			if c, ok, _ := Of(m); ok {
				at, _ := m.TS.Instant()
				out = append(out, Entry{Call: c, Time: at, Session: id})
			}
		}
		return out
	}
	ids := func() []string {
		var out []string
		for id := range live {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	pick := func() string {
		all := ids()
		if len(all) == 0 {
			return ""
		}
		return all[rng.IntN(len(all))]
	}
	for step := range 40 {
		clock = clock.Add(time.Duration(rng.IntN(3)) * time.Second)
		switch op := rng.IntN(7); {
		case op <= 1 || len(live) == 0: // a new session and its turns
			msgs := newMsgs(1 + rng.IntN(3))
			s, _, err := st.CreateWith(sessions.Session{Source: "chat"}, sessions.CopyMessages(msgs))
			if err != nil {
				t.Fatal(err)
			}
			live[s.ID] = entries(s.ID, msgs)
		case op == 2: // more turns
			id := pick()
			msgs := newMsgs(1 + rng.IntN(2))
			if _, err := st.Append(id, sessions.CopyMessages(msgs)); err != nil {
				t.Fatal(err)
			}
			live[id] = append(live[id], entries(id, msgs)...)
		case op == 3: // a fork
			id := pick()
			all, err := st.Messages(id)
			if err != nil {
				t.Fatal(err)
			}
			at := int64(1 + rng.IntN(len(all)))
			child, err := st.Fork(id, at, "")
			if err != nil {
				t.Fatal(err)
			}
			live[child.ID] = entries(child.ID, all[:at])
		case op == 4: // a compression: a summary with its own call, the last messages copied
			id := pick()
			if s, _ := st.Get(id); s.CompressedInto != "" {
				continue
			}
			all, err := st.Messages(id)
			if err != nil {
				t.Fatal(err)
			}
			summary := newMsgs(1)[1]
			summary.Role = "system"
			if c, ok, _ := Of(summary); ok {
				c.Purpose = PurposeCompress
				Put(&summary, c)
			}
			keep := all[len(all)-min(len(all), 2):]
			msgs := append([]sessions.Message{summary}, sessions.CopyMessages(keep)...)
			child, err := st.Compress(id, int64(len(all)), msgs)
			if err != nil {
				t.Fatal(err)
			}
			live[child.ID] = entries(child.ID, msgs)
		case op == 5: // the same file imported again, under another id
			id := pick()
			all, err := st.Messages(id)
			if err != nil {
				t.Fatal(err)
			}
			copied := sessions.CopyMessages(all)
			for i := range copied {
				copied[i].Seq = 0
			}
			s, _, err := st.CreateWith(sessions.Session{Source: "import:claude-code"}, copied)
			if err != nil {
				t.Fatal(err)
			}
			live[s.ID] = entries(s.ID, all)
		case op == 6: // a delete or a prune
			id := pick()
			if _, err := st.End(id, "user"); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				if _, err := st.Delete(id, false); err != nil {
					t.Fatal(err)
				}
				delete(live, id)
				break
			}
			removed, err := st.Prune(clock.Add(time.Hour), "", false)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range removed {
				delete(live, r.SessionID)
			}
		}
		if step%8 == 7 {
			compare(t, st, live)
		}
	}
	compare(t, st, live)
}

// compare checks the daily and session reports against the model.
func compare(t *testing.T, st *sessions.Store, live model) {
	t.Helper()
	owner := map[string]Entry{}
	for id, es := range live {
		for _, e := range es {
			if o, ok := owner[e.ID]; !ok || id < o.Session {
				e.Session = id
				owner[e.ID] = e
			}
		}
	}
	for _, by := range []string{"daily", "session"} {
		want := map[string]Row{}
		for _, e := range owner {
			k := Keys[by](e)
			r := want[k]
			r.Key = k
			r.add(e, Table{}.Of)
			want[k] = r
		}
		rows, _, err := Report(NewRollup(filepath.Dir(st.Dir), st, time.Second, func(string) {}), by, Filter{}, Table{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", by, len(rows), len(want))
		}
		for _, r := range rows {
			w := want[r.Key]
			if r.Calls != w.Calls || r.Input != w.Input || r.Output != w.Output || r.CacheCreate != w.CacheCreate || r.CacheRead != w.CacheRead ||
				r.Total != w.Total || r.Unpriced != w.Unpriced || fmt.Sprintf("%.9f", r.Cost) != fmt.Sprintf("%.9f", w.Cost) {
				t.Errorf("%s %s:\n got %+v\nwant %+v", by, r.Key, r, w)
			}
		}
	}
}
