package memory

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// benchStore is a store whose log holds 1,000 changes that leave
// MEMORY.md nearly full (100 entries, 7,000 characters of its 8,000):
// 100 adds, then 450 times the oldest entry removed and a new one added.
// The lines are written as such, not through Add, so that the setup costs
// no 1,000 syncs; one Add, then a Remove, through the store writes the
// files and the cache as a change does.
func benchStore(b *testing.B) *Store {
	s := NewStore(filepath.Join(b.TempDir(), "profile"), 10*time.Second, func(string) {})
	var log strings.Builder
	text := func(i int) string {
		return fmt.Sprintf("entry %04d: the build of component %04d needs -tags=c%04d", i, i, i)
	}
	seq := 0
	line := func(op, old, new string) {
		seq++
		fmt.Fprintf(&log, `{"seq":%d,"ts":"2026-11-21T02:07:34.000000Z","target":"memory","op":%q,"old":%q,"new":%q,"by":"agent"}`+"\n", seq, op, old, new)
	}
	for i := range 100 {
		line(OpAdd, "", text(i))
	}
	for i := 100; seq < 998; i++ {
		line(OpRemove, text(i-100), "")
		line(OpAdd, "", text(i))
	}
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		b.Fatal(err)
	}
	if err := fsstore.WriteFileAtomic(s.LogPath(), []byte(log.String())); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Add(Memory, "warm", Who{By: ByAgent}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Remove(Memory, "warm", Who{By: ByAgent}); err != nil {
		b.Fatal(err)
	}
	st, err := s.Read()
	if err != nil || st.Seq != 1000 || len(st.Memory) != 100 {
		b.Fatalf("fixture: seq %d, %d entries, %v", st.Seq, len(st.Memory), err)
	}
	return s
}

// BenchmarkAdd is a memory add on a log of 1,000 changes and a nearly
// full MEMORY.md: lock, read the state (the cache), check the bound,
// append a line (synced: the one sync), write MEMORY.md again and the
// cache (neither synced). Each op is an add and the remove that makes
// room for the next; ms/change is one of them.
func BenchmarkAdd(b *testing.B) {
	s := benchStore(b)
	i := 0
	start := time.Now()
	for b.Loop() {
		i++
		entry := fmt.Sprintf("benchmark entry %d", i)
		if _, err := s.Add(Memory, entry, Who{By: ByAgent}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Remove(Memory, entry, Who{By: ByAgent}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(2*i), "ms/change")
}

// BenchmarkRead is what a session's snapshot costs on that log: the
// state, from the cache.
func BenchmarkRead(b *testing.B) {
	s := benchStore(b)
	for b.Loop() {
		if _, err := s.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFold folds the whole log: a read when the cache is missing or
// stale (after a power cut), and a revert.
func BenchmarkFold(b *testing.B) {
	s := benchStore(b)
	for b.Loop() {
		if _, err := s.fold(nil); err != nil {
			b.Fatal(err)
		}
	}
}
