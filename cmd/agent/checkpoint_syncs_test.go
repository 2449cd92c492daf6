package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/checkpoints"
)

// TestEditSyncs counts the syncs a checkpointed edit_file makes in the
// store, through the store's sync seam (the tool's own, of its temp file
// and its directory, are not the store's): an edit whose before-image is
// stored already makes 1, the append of its pending record to the
// session's pending log; one whose before-image is new makes 3, the
// object, its directory and the pending record (and 1 more, the sync of
// objects/, when the object is the first of its objects/<2 hex>). The
// removal of the pending record once the result is stored makes none
// (fsstore/checkpoints doc, "The cost of a checkpoint").
func TestEditSyncs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	profile := filepath.Join(dir, "profile")
	if err := os.WriteFile(filepath.Join(dir, "f.go"), []byte("counter 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{SessionID: "s", Cwd: dir, Checkpoints: checkpoints.Open(profile)}
	var mu sync.Mutex
	var names []string
	stop := fsstore.ObserveSyncs(profile, func(name string) {
		mu.Lock()
		defer mu.Unlock()
		rel, _ := filepath.Rel(profile, name)
		names = append(names, rel)
	})
	defer stop()
	take := func() (int, string) {
		mu.Lock()
		defer mu.Unlock()
		n, s := len(names), strings.Join(names, ", ")
		names = nil
		return n, s
	}
	// Each edit flips the counter: the first two store the before-images
	// of 0 and 1, the later ones find theirs stored.
	for i := range 6 {
		from, to := "counter 0\n", "counter 1\n"
		if i%2 == 1 {
			from, to = to, from
		}
		fan := filepath.Join(profile, "checkpoints", "objects", strings.TrimPrefix(checkpoints.Hash([]byte(from)), "b3-")[:2])
		_, statErr := os.Stat(fan)
		call := "call_" + string(rune('a'+i))
		cenv := env.withCall(call)
		if _, err := (editFileTool{}).Run(context.Background(), cenv, []byte(args("path", "f.go", "old_string", from, "new_string", to))); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			take() // the store's directories and its pending log, made once
		} else {
			want := 1
			if i < 2 {
				want = 3
				if os.IsNotExist(statErr) {
					want++
				}
			}
			if n, which := take(); n > want {
				t.Errorf("edit %d made %d syncs in the store, want at most %d: %s", i, n, want, which)
			}
		}
		if err := env.Checkpoints.ClearPending("s", call); err != nil {
			t.Fatal(err)
		}
		if n, which := take(); n > 0 {
			t.Errorf("the removal of edit %d's pending record made %d syncs: %s", i, n, which)
		}
	}
	if p, err := env.Checkpoints.AllPending(); err != nil || len(p) != 0 {
		t.Errorf("pending records left: %v %v", p, err)
	}
}
