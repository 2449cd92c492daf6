package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkSearchFiles is search_files over a tree in which a rare word is
// in 5 files, so that every byte is read: $HERMES_SEARCH_TREE and
// $HERMES_SEARCH_WORD (scripts/bench-search.sh, which times grep -rn on
// the same tree), else 32 files of 1 MB made here.
func BenchmarkSearchFiles(b *testing.B) {
	root, word := os.Getenv("HERMES_SEARCH_TREE"), os.Getenv("HERMES_SEARCH_WORD")
	if root == "" {
		root, word = b.TempDir(), "quokka"
		writeSearchTree(b, root, 32, 1<<20, word)
	}
	env := &Env{Cwd: root, MaxOutput: DefaultMaxOutput}
	args := json.RawMessage(fmt.Sprintf(`{"pattern":%q,"max_results":1000}`, word))
	var size int64
	filepath.Walk(root, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			size += fi.Size()
		}
		return nil
	})
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		out, err := searchFilesTool{}.Run(context.Background(), env, args)
		if err != nil || strings.Count(out, word) < 5 {
			b.Fatalf("%q, %v", out, err)
		}
	}
}

// writeSearchTree writes files of about size bytes of JSON lines, the
// word planted in 5 of them.
func writeSearchTree(b *testing.B, root string, files, size int, word string) {
	words := strings.Fields("the session message tool call result assistant user system terminal file read write search note turn model provider history")
	r := rand.New(rand.NewPCG(1, 2))
	for i := range files {
		var sb strings.Builder
		for seq := 1; sb.Len() < size; seq++ {
			fmt.Fprintf(&sb, `{"seq":%d,"ts":"2026-11-25T14:00:00.000000Z","role":"user","content":"`, seq)
			for range 40 {
				sb.WriteString(words[r.IntN(len(words))])
				sb.WriteByte(' ')
			}
			if i%(files/5) == 0 && seq == 100 {
				sb.WriteString(word)
			}
			sb.WriteString("\"}\n")
		}
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("%04d.jsonl", i)), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
