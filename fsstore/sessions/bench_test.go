package sessions_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/scripts/fixture"
)

// The benchmarks build their stores with scripts/fixture, which writes
// the store's exact formats without a lock or an fsync per file, so that
// the setup of a 100,000-session profile takes seconds, not hours. Each
// fixture is built once per sub-benchmark run (b.Loop runs the body once).
// The targets they measure (scripts/bench-sessions.sh prints them):
//
//	BenchmarkAppend: history=100000 costs at most 1.2x history=10
//	BenchmarkList:   sessions=100000 costs at most 3x sessions=1000
//	BenchmarkListFiltered: share=S/sessions=100000 costs at most 1.2x
//	                 share=S/sessions=1000, for each S
//
// scripts/bench.sh measures the same paths as whole processes beside
// sqlite3, grep and cat.

// benchStore writes a fixture into a fresh profile and returns its store
// and session ids.
func benchStore(b *testing.B, o fixture.Options) (*sessions.Store, []string) {
	b.Helper()
	profileDir := b.TempDir()
	start := time.Now()
	ids, err := fixture.Write(filepath.Join(profileDir, "sessions"), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("fixture: %d sessions of %d messages in %.1fs", o.Sessions, o.Messages, time.Since(start).Seconds())
	return sessions.NewStore(profileDir, "default", 10*time.Second, func(msg string) { b.Errorf("warning: %s", msg) }), ids
}

func benchMessage() []sessions.Message {
	return []sessions.Message{{Role: "user", Content: sessions.TextContent("run the tests again and tell me what failed, with the first error in full")}}
}

// BenchmarkAppend appends one message, synced, to a session whose
// transcript already holds history messages: the cost must not grow with
// the history (Append reads the transcript's end, never its start).
func BenchmarkAppend(b *testing.B) {
	for _, history := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			s, ids := benchStore(b, fixture.Options{Sessions: 1, Messages: history, BytesPerMessage: 200})
			for b.Loop() {
				if _, err := s.Append(ids[0], benchMessage()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkList lists the 20 most recently active sessions: the cost must
// follow the limit, not the number of sessions (List walks the activity
// catalog from its end and opens only the documents it returns).
func BenchmarkList(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			s, _ := benchStore(b, fixture.Options{Sessions: n, Messages: 2, BytesPerMessage: 200})
			for b.Loop() {
				list, err := s.List(sessions.ListOptions{Limit: 20})
				if err != nil || len(list) != 20 {
					b.Fatalf("List: %d sessions, %v", len(list), err)
				}
			}
		})
	}
}

// BenchmarkListFiltered lists the 20 most recent sessions of a source
// that one session in ten has (share=10), that ten sessions have
// whatever their number (share=n/10), or none (share=0): the cost must
// follow the limit, not the number of sessions (sessions=100000 at most
// 1.2x sessions=1000). List rules the others out by their catalog lines
// and opens only the documents it returns; a source that few sessions
// have is read from its value file, which the first list writes.
func BenchmarkListFiltered(b *testing.B) {
	for _, share := range []string{"10", "n/10", "0"} {
		for _, n := range []int{1_000, 100_000} {
			b.Run(fmt.Sprintf("share=%s/sessions=%d", share, n), func(b *testing.B) {
				every, want := 10, 20
				switch share {
				case "n/10":
					every, want = n/10, 10
				case "0":
					every, want = 0, 0
				}
				s, _ := benchStore(b, fixture.Options{Sessions: n, Messages: 2, BytesPerMessage: 200, OtherSource: "gateway", OtherEvery: every})
				// The first list writes the value file (a walk of the whole
				// catalog, once); the lists after it are what is timed.
				if _, err := s.List(sessions.ListOptions{Limit: 20, Source: "gateway"}); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					list, err := s.List(sessions.ListOptions{Limit: 20, Source: "gateway"})
					if err != nil || len(list) != want {
						b.Fatalf("List: %d sessions, %v", len(list), err)
					}
				}
			})
		}
	}
}

// BenchmarkListHotSession lists the 20 most recent of 1,000 sessions
// after one of them took appends more than the others: each append adds
// a line for its session to the activity catalog, and List walks past
// them to find the 19 others. The lines are appended here as Append writes
// them (catalogLine), without the transcripts' messages, which List does
// not read.
func BenchmarkListHotSession(b *testing.B) {
	for _, appends := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("appends=%d", appends), func(b *testing.B) {
			s, ids := benchStore(b, fixture.Options{Sessions: 1_000, Messages: 2, BytesPerMessage: 200})
			catalog := filepath.Join(s.Dir, ".catalog.jsonl")
			f, err := os.OpenFile(catalog, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			at := time.Now().UTC()
			for i := range appends {
				fmt.Fprintf(w, `{"session_id":%q,"at":"%s","state":"active","source":"cli","message_count":%d,"bytes":%d}`+"\n",
					ids[0], at.Add(time.Duration(i)*time.Microsecond).Format("2006-01-02T15:04:05.000000Z"), 3+i, 400+100*i)
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			f.Close()
			for b.Loop() {
				list, err := s.List(sessions.ListOptions{Limit: 20})
				if err != nil || len(list) != 20 || list[0].ID != ids[0] {
					b.Fatalf("List: %d sessions, %v", len(list), err)
				}
			}
		})
	}
}

// BenchmarkListAfterAppends lists the 20 most recent of 1,000 sessions
// after 1,000 and 1,000,000 appends to one of them, each writing its
// activity line as Append does and compacting the catalog when Append
// would (without the transcript's write and the syncs, which do not
// change what the catalog holds). The compaction by ratio is what keeps
// the second within 2x of the first: the lines List walks are bounded by
// the catalog's size after its last compaction, not by the appends. It
// reports the catalog's size when listed.
func BenchmarkListAfterAppends(b *testing.B) {
	for _, appends := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("appends=%d", appends), func(b *testing.B) {
			s, ids := benchStore(b, fixture.Options{Sessions: 1_000, Messages: 2, BytesPerMessage: 200})
			at := time.Now().UTC()
			for i := range appends {
				if err := s.TouchCatalogForBench(ids[0], at.Add(time.Duration(i)*time.Microsecond), int64(3+i), int64(400+100*i)); err != nil {
					b.Fatal(err)
				}
			}
			fi, err := os.Stat(filepath.Join(s.Dir, ".catalog.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				list, err := s.List(sessions.ListOptions{Limit: 20})
				if err != nil || len(list) != 20 || list[0].ID != ids[0] {
					b.Fatalf("List: %d sessions, %v", len(list), err)
				}
			}
			b.ReportMetric(float64(fi.Size())/1e6, "catalog-MB")
		})
	}
}

// BenchmarkAppendConcurrent runs 8 writers (goroutines with their own
// flocks, which contend as processes would) appending to one session or
// each to its own; ns/op is wall time per append, the inverse of
// throughput. Writers to different sessions share only the catalog lock.
func BenchmarkAppendConcurrent(b *testing.B) {
	const writers = 8
	for _, n := range []int{1, writers} {
		// RunParallel calls the function once per round of b.N: the
		// fixture is made once, outside it.
		s, ids := benchStore(b, fixture.Options{Sessions: n, Messages: 10, BytesPerMessage: 200})
		s.LockTimeout = time.Minute
		b.Run(fmt.Sprintf("writers=%d/sessions=%d", writers, n), func(b *testing.B) {
			var next atomic.Int64
			b.SetParallelism((writers + 1) / 2) // goroutines = parallelism × GOMAXPROCS
			b.RunParallel(func(pb *testing.PB) {
				id := ids[int(next.Add(1)-1)%len(ids)]
				for pb.Next() {
					if _, err := s.Append(id, benchMessage()); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkSearch looks for a word that none of 100 transcripts of 2,000
// messages (about 75 MB) holds, so every byte is read: the pre-filter on
// raw lines is what keeps it near the speed of grep -F
// (scripts/bench.sh compares the whole process over 1 GB).
func BenchmarkSearch(b *testing.B) {
	s, _ := benchStore(b, fixture.Options{Sessions: 100, Messages: 2_000, BytesPerMessage: 300})
	b.SetBytes(100 * 2_000 * 370)
	for b.Loop() {
		hits, err := s.Search("quokka", 50)
		if err != nil || len(hits) != 0 {
			b.Fatalf("Search: %d hits, %v", len(hits), err)
		}
	}
}

// BenchmarkGet reads one session as every command that names a session
// does: its document, then the last line of its transcript for the count
// and last activity (appends do not rewrite the document).
func BenchmarkGet(b *testing.B) {
	s, ids := benchStore(b, fixture.Options{Sessions: 1, Messages: 100_000, BytesPerMessage: 200})
	for b.Loop() {
		sess, err := s.Get(ids[0])
		if err != nil || sess.MessageCount != 100_000 {
			b.Fatalf("Get: %d messages, %v", sess.MessageCount, err)
		}
	}
}

// BenchmarkCheck checks a profile of n titled sessions of mixed sizes and
// reports, beside the bytes allocated, the peak of the heap's objects,
// live and not yet collected, during the check (peak-heap-B, sampled
// every millisecond): it grows by what the check keeps of each session
// (see "Check's memory" in doc.go), never by whole documents. fsck's peak
// resident size, a whole process, is in scripts/bench-scale.sh.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			s, _ := benchStore(b, fixture.Options{Sessions: n, Messages: 10, Mixed: true, BytesPerMessage: 100, Titled: true})
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				runtime.GC()
				stop, done := make(chan struct{}), make(chan uint64)
				go func() {
					sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
					var most uint64
					for t := time.NewTicker(time.Millisecond); ; {
						metrics.Read(sample)
						most = max(most, sample[0].Value.Uint64())
						select {
						case <-stop:
							t.Stop()
							done <- most
							return
						case <-t.C:
						}
					}
				}()
				found, err := s.Check(false, filepath.Join(b.TempDir(), "lost+found"))
				close(stop)
				peak = max(peak, <-done)
				if err != nil || len(found) != 0 {
					b.Fatalf("Check: %d findings, %v", len(found), err)
				}
			}
			b.ReportMetric(float64(peak), "peak-heap-B")
		})
	}
}
