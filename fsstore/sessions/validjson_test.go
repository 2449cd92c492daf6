package sessions

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzValidJSON checks ValidJSON against json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, seed := range []string{
		``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `{"a":1}`, `{"a" : [1, 2.5, -0, 1e5, 1E-3, -12.0e+7] , "b":{}}`,
		`"x\n\u00e9\"\\"`, `"\x"`, "\"a\x01\"", `"\u00g0"`, `01`, `-`, `1.`, `.5`, `1e`, `+1`, `- 1`,
		`true`, `tru`, `truex`, `nul`, `null `, `[1,]`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`,
		`[1 2]`, `]`, `[}`, `{]`, `[[[]]]`, `[{"a":[{"b":null}]}]`, `1 2`, `"a" "b"`, "\xff", "\"\xff\"",
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
		strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
		strings.Repeat("[", 10001),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
