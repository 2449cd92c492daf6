package fsstore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckID: an id CheckID accepts names one file directly inside its
// store directory, and nothing else.
func FuzzCheckID(f *testing.F) {
	for _, s := range []string{
		"20261121_020734_a1b2c3", "a", "a.b", "..", ".", ".hidden", "a..b", "a/b", `a\b`,
		"/abs", "a\x00b", "a\nb", "\x7f", "caf\u00e9", "\u0085", "\xff", "\xc0\xaf",
		strings.Repeat("x", MaxIDLen), strings.Repeat("x", MaxIDLen+1), strings.Repeat("\u00e9", 48),
		"a\u2215b", "a\uff0fb", "\u202eevil", " ", "-rf",
	} {
		f.Add(s)
	}
	const dir = "/store/sessions"
	f.Fuzz(func(t *testing.T, id string) {
		err := CheckID("id", id)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("CheckID(%q) = %v, not ErrInvalid", id, err)
			}
			return
		}
		switch {
		case id == "":
			t.Fatal("accepted the empty id")
		case len(id) > MaxIDLen:
			t.Fatalf("accepted an id of %d bytes", len(id))
		case !utf8.ValidString(id):
			t.Fatalf("accepted invalid UTF-8 %q", id)
		case strings.HasPrefix(id, "."):
			t.Fatalf("accepted %q with a leading '.'", id)
		case strings.Contains(id, ".."):
			t.Fatalf("accepted %q containing '..'", id)
		case strings.ContainsAny(id, `/\`):
			t.Fatalf("accepted %q containing a separator", id)
		}
		for _, r := range id {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("accepted %q with control character %U", id, r)
			}
		}
		for _, ext := range []string{".json", ".jsonl", ""} {
			p := filepath.Join(dir, id+ext)
			if filepath.Dir(p) != dir {
				t.Fatalf("filepath.Join(%q, %q) = %q leaves the directory", dir, id+ext, p)
			}
			if filepath.Base(p) != id+ext {
				t.Fatalf("filepath.Join(%q, %q) = %q renames the file", dir, id+ext, p)
			}
		}
	})
}
