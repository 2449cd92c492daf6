package checkpoints

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkNewObject1MB stores 1 MB whose hash is not known, each time
// new bytes: "hash-then-save" hashes them, then writes and syncs the
// object (Save); "save-hashing" writes and syncs it while it hashes
// (SaveHashing, what a file's first change does).
func BenchmarkNewObject1MB(b *testing.B) {
	for _, mode := range []string{"hash-then-save", "save-hashing"} {
		b.Run(mode, func(b *testing.B) {
			s := Open(b.TempDir())
			data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
			b.SetBytes(int64(len(data)))
			for i := range b.N {
				copy(data, fmt.Sprintf("%016d", i))
				if mode == "hash-then-save" {
					if err := s.Save(Hash(data), data); err != nil {
						b.Fatal(err)
					}
				} else if _, err := s.SaveHashing(data, func(string) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
