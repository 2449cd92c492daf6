package skills

import (
	"reflect"
	"testing"
)

// TestIndexEncoding: the index reads back what it wrote, and a file cut
// at any byte, or with a byte after its end, is no index at all.
func TestIndexEncoding(t *testing.T) {
	entries := map[string]indexEntry{
		"/p/skills/a/SKILL.md": {Stamp{Size: 120, MTime: 1764322800123456789, Inode: 42}, Meta{Name: "a", Description: "does a", AllowedTools: []string{"Read", "Bash(git *)"}}},
		"/p/skills/b/SKILL.md": {Stamp{Size: 7, MTime: -1, Inode: 1 << 63}, Meta{Name: "b", Description: "é ü"}},
	}
	b := encodeIndex(entries)
	if got := decodeIndex(b); !reflect.DeepEqual(got, entries) {
		t.Fatalf("decoded %+v, want %+v", got, entries)
	}
	for n := range len(b) {
		if got := decodeIndex(b[:n]); got != nil {
			t.Fatalf("cut at %d of %d: decoded %+v", n, len(b), got)
		}
	}
	if got := decodeIndex(append(b, 0)); got != nil {
		t.Errorf("a byte after the end: decoded %+v", got)
	}
}
