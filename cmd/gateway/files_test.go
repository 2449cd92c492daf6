package gateway

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// files maps each file below dir to what it is (os.SameFile tells a file
// replaced by another of the same name).
func files(t *testing.T, dir string) map[string]os.FileInfo {
	t.Helper()
	out := map[string]os.FileInfo{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := os.Lstat(path)
		if err == nil {
			out[path] = fi
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTurnMakesNoFile: a later turn of a conversation a chat client
// re-sends makes no file in the profile, streamed or not (but a shard of
// the history index not yet made): it appends to files that are there. A
// file made (a new name, or a temp file renamed over a document) is an
// inode allocated, which cost the ext4 of the benchmarks' machine 0.25 to
// 0.4 ms of CPU, where an append costs a few microseconds: the delivery
// record and the history index entry, both written each turn, were a third
// of a turn's CPU (issue 47, item 5).
func TestTurnMakesNoFile(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e := newTestEnv(t, nil)
			var msgs []map[string]any
			for turn := range 6 {
				before := files(t, e.dir)
				msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprint("question ", turn)})
				resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": msgs, "stream": stream}, nil)
				mustStatus(t, resp, body, 200)
				msgs = append(msgs, map[string]any{"role": "assistant", "content": chatReply(t, body, stream)})
				delivered(t, e, resp.Header.Get(SessionHeader))
				// The first turns make the session's files, and the
				// log of its deliveries and of its index entries.
				if turn < 2 {
					continue
				}
				var made []string
				for path, fi := range files(t, e.dir) {
					// A shard of the history index is made once in a
					// profile's life (256 of them), by the first entry
					// whose digest falls in it.
					if _, ok := before[path]; !ok && filepath.Dir(path) == filepath.Join(e.dir, "gateway", "history") && len(filepath.Base(path)) == len("00.jsonl") {
						continue
					}
					if old, ok := before[path]; !ok || !os.SameFile(old, fi) {
						rel, _ := filepath.Rel(e.dir, path)
						made = append(made, rel)
					}
				}
				if len(made) > 0 {
					t.Errorf("turn %d made %v", turn, made)
				}
			}
		})
	}
}
