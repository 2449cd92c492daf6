package fsstore

import "bytes"

// LoneSurrogate returns the offset in the JSON text b of the first \u
// escape that is half of a UTF-16 surrogate pair without its other half
// (a high one, \uD800 to \uDBFF, not followed at once by a low one,
// \uDC00 to \uDFFF, or a low one not preceded by a high one), or -1 when
// there is none. Such an escape is valid JSON but names no character:
// encoding/json reads it as U+FFFD, while a raw value copied through keeps
// it, and jq and other strict readers refuse the text that holds it. The
// hex digits are read in either case. Only backslashes are looked at, so
// a text without one costs a single bytes.IndexByte. b is taken to be
// valid JSON: a backslash outside a string is not told apart.
func LoneSurrogate(b []byte) int {
	for i := 0; ; {
		k := bytes.IndexByte(b[i:], '\\')
		if k < 0 {
			return -1
		}
		i += k
		if i+1 >= len(b) {
			return -1
		}
		if b[i+1] != 'u' {
			// \\ is taken whole, so its second backslash starts nothing.
			i += 2
			continue
		}
		r, ok := hex4(b[i+2:])
		switch {
		case !ok:
			i += 2
			continue
		case 0xDC00 <= r && r <= 0xDFFF:
			return i
		case 0xD800 <= r && r <= 0xDBFF:
			if len(b) < i+12 || b[i+6] != '\\' || b[i+7] != 'u' {
				return i
			}
			if lo, ok := hex4(b[i+8:]); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return i
			}
			i += 12
			continue
		}
		i += 6
	}
}

// hex4 reads the four hex digits at the start of p.
func hex4(p []byte) (rune, bool) {
	if len(p) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
