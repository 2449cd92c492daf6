package fsstore_test

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// TestLockSurvivesRemoval: a holder may remove the lock file (a session's
// delete does, fsck --repair removes one no session has). A waiter that
// opened the file before the removal and locks it after holds a file no
// one else will open: it must see the path no longer names it, and lock
// the path again, so that two holders are never inside at once.
func TestLockSurvivesRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	const workers, rounds = 8, 400
	var inside, most, removed atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				unlock, err := fsstore.Lock(path, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				runtime.Gosched()
				inside.Add(-1)
				// The removal is the holder's last act under the lock, as
				// a delete's is: from it on, the next holder may enter.
				if (i+w)%2 == 0 && os.Remove(path) == nil {
					removed.Add(1)
				}
				runtime.Gosched()
				unlock()
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d holders inside at once (the lock file removed %d times)", most.Load(), removed.Load())
	}
}
