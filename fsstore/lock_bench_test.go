package fsstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// BenchmarkLock is a lock nobody else holds, taken and let go, as each
// append of a turn takes its session's and the catalog's: exclusive
// (with its holder record) and shared.
func BenchmarkLock(b *testing.B) {
	for _, take := range []struct {
		name string
		f    func(string, time.Duration) (func(), error)
	}{{"exclusive", fsstore.Lock}, {"shared", fsstore.RLock}} {
		b.Run(take.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "x.lock")
			b.ReportAllocs()
			for b.Loop() {
				unlock, err := take.f(path, time.Second)
				if err != nil {
					b.Fatal(err)
				}
				unlock()
			}
		})
	}
}
