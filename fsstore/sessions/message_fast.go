package sessions

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/hermes/hermes/fsstore"
)

// parseStored reads a transcript line in the exact form Message.MarshalJSON
// writes: {"seq":N,"ts":"…","role":"…" then the optional fields, each value
// already compact. It slices values out of line instead of decoding them,
// which makes reading a long transcript (a resume of 100,000 messages) cost
// about as much as copying it. The returned message aliases line. It
// reports false for any line not in that form, and the caller falls back to
// ParseMessage, so lines written by other tools are still read, and
// judged, by the full decoder. str holds the same bytes as line: the
// strings of the message are cut from it, so that a caller holding a whole
// transcript as one string pays no allocation per string.
//
// It refuses every line ParseMessage refuses, so that a line damaged
// inside a value, with its shape intact, is reported by the fallback, and
// what it accepts it reads exactly as ParseMessage does. json.Valid on
// every line made a resume 3 to 4 times slower, so what makes most of a
// line is checked by hand: seq, ts (the form the store writes, or empty:
// any other is left to ParseMessage) and strings, which are most of the
// bytes (no control byte, only valid escapes). Objects, arrays, numbers
// and literals are rarer and small: json.Valid checks them. Values must
// be compact, as the store writes them: ParseMessage compacts what it
// keeps, so a value with spaces is left to it.
func parseStored(line []byte, str string) (Message, bool) {
	var m Message
	p := line
	// at is the offset in str of what p now holds.
	at := func() int { return len(line) - len(p) }
	cut := func(prefix string) bool {
		if !bytes.HasPrefix(p, []byte(prefix)) {
			return false
		}
		p = p[len(prefix):]
		return true
	}
	if !cut(`{"seq":`) {
		return m, false
	}
	// ParseInt would take a sign or leading zeros, which JSON does not.
	i := bytes.IndexByte(p, ',')
	if i <= 0 || p[0] < '1' || p[0] > '9' {
		return m, false
	}
	seq, err := strconv.ParseInt(string(p[:i]), 10, 64)
	if err != nil {
		return m, false
	}
	m.Seq = seq
	p = p[i:]
	// ts is taken in the form the store writes, which has no byte to
	// escape, or empty; any other is left to ParseMessage.
	if !cut(`,"ts":"`) {
		return m, false
	}
	i = bytes.IndexByte(p, '"')
	if i < 0 || i > 0 && !storedTime(p[:i]) {
		return m, false
	}
	m.TS = fsstore.Time(str[at() : at()+i])
	p = p[i+1:]
	var ok bool
	if !cut(`,"role":`) {
		return m, false
	}
	if m.Role, p, ok = cutRole(p); !ok {
		return m, false
	}
	for {
		if len(p) == 1 && p[0] == '}' {
			return m, true
		}
		if !cut(",") {
			return m, false
		}
		// Every message has content: its key is taken whole, not cut.
		key := "content"
		if !cut(`"content":`) {
			if key, p, ok = cutString(p, str[at():]); !ok || !cut(":") {
				return m, false
			}
		}
		n := valueEnd(p)
		if n <= 0 {
			return m, false
		}
		value := p[:n]
		switch key {
		case "content":
			if value[0] != '"' && value[0] != '[' && value[0] != 'n' {
				return m, false
			}
			m.Content = value
		case "tool_calls":
			if value[0] != '[' && string(value) != "null" {
				return m, false
			}
			m.ToolCalls = value
		case "seq", "ts", "role":
			return m, false // a repeated key: ParseMessage keeps the last
		case "tool_call_id":
			if m.ToolCallID, _, ok = cutString(value, str[at():]); !ok {
				return m, false
			}
		case "name":
			if m.Name, _, ok = cutString(value, str[at():]); !ok {
				return m, false
			}
		default:
			if m.Extra == nil {
				m.Extra = map[string]json.RawMessage{}
			}
			m.Extra[key] = value
		}
		p = p[n:]
	}
}

// cutRole reads one of the four roles without allocating.
func cutRole(p []byte) (string, []byte, bool) {
	for _, r := range [...]string{"user", "assistant", "tool", "system"} {
		if len(p) > len(r)+1 && p[0] == '"' && string(p[1:len(r)+1]) == r && p[len(r)+1] == '"' {
			return r, p[len(r)+2:], true
		}
	}
	return "", nil, false
}

// cutString reads a JSON string at the start of p and returns it decoded
// and the rest of p; str holds the same bytes as p.
func cutString(p []byte, str string) (string, []byte, bool) {
	n := stringEnd(p)
	if n <= 0 {
		return "", nil, false
	}
	raw := p[:n]
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return str[1 : n-1], p[n:], true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", nil, false
	}
	return s, p[n:], true
}

// storedTime reports whether ts is a time of the form Timestamp writes,
// 2006-01-02T15:04:05.000000Z with 0 to 9 digits of fraction, that
// time.Parse(time.RFC3339Nano, ts) accepts, at a fraction of its cost.
func storedTime(ts []byte) bool {
	n := len(ts)
	if n < len("2006-01-02T15:04:05Z") || ts[n-1] != 'Z' {
		return false
	}
	// ts[0:19] is read as three words, each xored with its form, where
	// '0' stands for a digit: in the result, a byte where ts has a digit
	// is the digit's value, at most 9, and one where ts has the form's
	// separator is 0. (t + 0x76) | t has the high bit of each byte t
	// above 9 (a carry out of a byte comes only from one above 9).
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	le := binary.LittleEndian
	a := le.Uint64(ts[0:]) ^ 0x2d30302d30303030  // "0000-00-"
	b := le.Uint64(ts[8:]) ^ 0x30303a3030543030  // "00T00:00"
	c := le.Uint64(ts[11:]) ^ 0x30303a30303a3030 // "00:00:00"
	above9 := (a + ones*0x76) | a | (b + ones*0x76) | b | (c + ones*0x76) | c
	seps := a&0xff0000ff00000000 | b&0x0000ff0000ff0000 | c&0x0000ff0000ff0000
	if above9&highs != 0 || seps != 0 {
		return false
	}
	// digit returns the digit in byte k of w.
	digit := func(w uint64, k int) uint64 { return w >> (8 * k) & 0xff }
	month := digit(a, 5)*10 + digit(a, 6)
	day := digit(b, 0)*10 + digit(b, 1)
	hour := digit(c, 0)*10 + digit(c, 1)
	minute := digit(c, 3)*10 + digit(c, 4)
	sec := digit(c, 6)*10 + digit(c, 7)
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return false
	}
	if day > 28 {
		year := digit(a, 0)*1000 + digit(a, 1)*100 + digit(a, 2)*10 + digit(a, 3)
		if day > daysIn(month, year) {
			return false
		}
	}
	frac := ts[19 : n-1]
	if len(frac) == 0 {
		return true
	}
	if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
		return false
	}
	for _, c := range frac[1:] {
		if c-'0' > 9 {
			return false
		}
	}
	return true
}

// daysIn returns the number of days of month in year, as time does.
func daysIn(month, year uint64) uint64 {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// stringEnd returns the length of the JSON string at the start of p
// (quotes included), or 0 when p does not start with a valid one: it has
// no byte below 0x20 and every backslash starts an escape JSON has. It
// does not check UTF-8, and need not: encoding/json takes invalid UTF-8
// too, keeping it in a raw value as it is and reading it as U+FFFD into a
// string, which is what cutString does.
//
// Each byte is looked at three times, but by bytes.IndexByte (SIMD) for a
// quote and for a backslash and eight at a time for a control byte,
// which is faster than once by a loop that looks for the three at once.
func stringEnd(p []byte) int {
	if len(p) < 2 || p[0] != '"' {
		return 0
	}
	i := 1
	for {
		q := bytes.IndexByte(p[i:], '"')
		if q < 0 {
			return 0
		}
		q += i
		// The escapes before q, up to one that takes q itself (\").
		for i <= q {
			k := bytes.IndexByte(p[i:q], '\\')
			if k < 0 {
				break
			}
			n := escapeLen(p[i+k:])
			if n == 0 || hasControl(p[i:i+k]) {
				return 0
			}
			i += k + n
		}
		if i > q {
			continue
		}
		if hasControl(p[i:q]) {
			return 0
		}
		return q + 1
	}
}

// hasControl reports whether b has a byte below 0x20.
func hasControl(b []byte) bool {
	if len(b) < 8 {
		for _, c := range b {
			if c < 0x20 {
				return true
			}
		}
		return false
	}
	// (x - ones*0x20) &^ x & highs marks a byte of x below 0x20 (and may
	// mark bytes after it, never without one). The last eight bytes are
	// read whole, some of them again.
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	var marks uint64
	for i := 0; i < len(b)-8; i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		marks |= (x - ones*0x20) &^ x
	}
	x := binary.LittleEndian.Uint64(b[len(b)-8:])
	marks |= (x - ones*0x20) &^ x
	return marks&highs != 0
}

// escapeLen returns the length of the valid JSON escape at the start of
// p, or 0.
func escapeLen(p []byte) int {
	if len(p) < 2 {
		return 0
	}
	switch p[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(p) >= 6 && isHex(p[2]) && isHex(p[3]) && isHex(p[4]) && isHex(p[5]) {
			return 6
		}
	}
	return 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// valueEnd returns the length of the compact JSON value at the start of p,
// or 0 when p does not start with one: a valid string (stringEnd), or an
// object, array, number or literal it delimits and json.Valid accepts.
// Whitespace outside strings is refused, not skipped: the value is kept as
// it is, where ParseMessage would compact it.
func valueEnd(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	if p[0] == '"' {
		return stringEnd(p)
	}
	n := delimit(p)
	if n == 0 || !json.Valid(p[:n]) {
		return 0
	}
	return n
}

// delimit returns the length of what may be the compact object, array or
// scalar at the start of p, or 0.
func delimit(p []byte) int {
	switch p[0] {
	case '{', '[':
		depth := 0
		for i := 0; i < len(p); {
			switch p[i] {
			case '"':
				n := stringEnd(p[i:])
				if n == 0 {
					return 0
				}
				i += n
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			case ' ', '\t', '\n', '\r':
				return 0
			}
			i++
		}
		return 0
	}
	for i, c := range p {
		switch c {
		case ',', '}', ']':
			return i
		case ' ', '\t', '\n', '\r':
			return 0
		}
	}
	return 0
}
