package fsstore

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLoneSurrogate(t *testing.T) {
	for _, tc := range []struct {
		text string
		at   int
	}{
		{`"plain"`, -1},
		{`"caf\u00e9 \ud83d\ude00 \uD83D\uDE00 \uD83d\udE00"`, -1},
		{`"\ud800"`, 1},
		{`"\uD800"`, 1},
		{`"ab\udc00"`, 3},
		{`"\uDFFF"`, 1},
		{`"\ude00\ud83d"`, 1},       // reversed
		{`"\ud83d\ud83d\ude00"`, 1}, // a high one followed by a high one
		{`"\ud83d\u0041"`, 1},
		{`"\ud83d\n"`, 1},
		{`"\ud83d"`, 1},
		{`"\ud83d\`, 1},
		{`"\\ud800"`, -1}, // an escaped backslash, then text
		{`"\\\ud800"`, 3},
		{`"\u12"`, -1},
		{`{"a":["x",{"b":"\ud7ff\ue000"}],"c":"\udbff\udfff"}`, -1},
		{`{"a":["x",{"b":"\ud7ff\ue000"}],"c":"\udbff\udfff\udfff"}`, 49},
	} {
		if got := LoneSurrogate([]byte(tc.text)); got != tc.at {
			t.Errorf("LoneSurrogate(%s) = %d, want %d", tc.text, got, tc.at)
		}
	}
}

// What LoneSurrogate passes, encoding/json reads without a replacement
// character it was not sent, and what it refuses, it reads with one.
func FuzzLoneSurrogate(f *testing.F) {
	f.Add(`"\ud83d\ude00"`)
	f.Add(`"\ud800x"`)
	f.Add(`"\\\udc00"`)
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		var v string
		if !utf8.Valid(b) || json.Unmarshal(b, &v) != nil {
			return
		}
		sent := 0
		for i := 0; i+5 < len(b); i++ {
			if b[i] == '\\' && b[i+1] == '\\' {
				i++
			} else if string(b[i:i+6]) == `\ufffd` || string(b[i:i+6]) == `\uFFFD` {
				sent++
			}
		}
		for _, r := range s {
			if r == utf8.RuneError {
				sent++
			}
		}
		got := 0
		for _, r := range v {
			if r == utf8.RuneError {
				got++
			}
		}
		if lone := LoneSurrogate(b) >= 0; lone != (got > sent) {
			t.Fatalf("%s: lone %v, but %d replacement characters read for %d sent", s, lone, got, sent)
		}
	})
}

// BenchmarkLoneSurrogate is the cost the check adds to each message an
// append writes: a content of 200 bytes without escapes, and one whose
// every character is an escaped pair.
func BenchmarkLoneSurrogate(b *testing.B) {
	plain := []byte(`"` + strings.Repeat("run the tests again, ", 10) + `"`)
	pairs := []byte(`"` + strings.Repeat(`\ud83d\ude00`, 17) + `"`)
	for name, text := range map[string][]byte{"plain": plain, "pairs": pairs} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if LoneSurrogate(text) >= 0 {
					b.Fatal("found one")
				}
			}
		})
	}
}
