package fsstore

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
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
// It delimits values but does not validate them (json.Valid on every line
// made a resume 3 to 4 times slower): a line damaged inside a value, which
// no crash of the store produces, may be read as it is; fsck, which reads
// every line with the full decoder, reports it.
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
	i := bytes.IndexByte(p, ',')
	if i <= 0 {
		return m, false
	}
	seq, err := strconv.ParseInt(string(p[:i]), 10, 64)
	if err != nil || seq <= 0 {
		return m, false
	}
	m.Seq = seq
	p = p[i:]
	var ok bool
	if !cut(`,"ts":`) {
		return m, false
	}
	if m.TS, p, ok = cutString(p, str[at():]); !ok || !cut(`,"role":`) {
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
		var key string
		if key, p, ok = cutString(p, str[at():]); !ok || !cut(":") {
			return m, false
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

// stringEnd returns the length of the JSON string at the start of p
// (quotes included), or 0.
func stringEnd(p []byte) int {
	if len(p) < 2 || p[0] != '"' {
		return 0
	}
	i := 1
	for {
		j := bytes.IndexByte(p[i:], '"')
		if j < 0 {
			return 0
		}
		i += j
		backslashes := 0
		for k := i - 1; k > 0 && p[k] == '\\'; k-- {
			backslashes++
		}
		i++
		if backslashes%2 == 0 {
			return i
		}
	}
}

// valueEnd returns the length of the compact JSON value at the start of p,
// or 0 when p does not start with one it can delimit.
func valueEnd(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	switch p[0] {
	case '"':
		return stringEnd(p)
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
			}
			i++
		}
		return 0
	}
	for i, c := range p {
		if c == ',' || c == '}' || c == ']' {
			return i
		}
	}
	return 0
}
