package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// ParseValidMessage is ParseMessage for a message that encoding/json has
// already found valid (a json.RawMessage of a request it decoded), which
// is not checked again: the gateway reads a re-sent conversation of 1,000
// messages so in a third of the time.
func ParseValidMessage(raw []byte) (Message, error) {
	var m Message
	if !m.decodeCommon(raw) {
		return ParseMessage(raw)
	}
	return checkParsed(m)
}

// CutArray calls each with the bytes of each element of the JSON array b,
// which must be valid JSON (as encoding/json checks it before it calls an
// UnmarshalJSON), without copying them. It reports false for null, and
// an error for any other value than an array.
func CutArray(b []byte, each func(elem []byte)) (bool, error) {
	p := skipSpace(b)
	if bytes.HasPrefix(p, []byte("null")) {
		return false, nil
	}
	if len(p) == 0 || p[0] != '[' {
		return false, errors.New("not a list")
	}
	p = skipSpace(p[1:])
	if len(p) > 0 && p[0] == ']' {
		return true, nil
	}
	for {
		n := validValueEnd(p)
		if n <= 0 {
			return false, errors.New("not a list")
		}
		each(p[:n:n])
		p = skipSpace(p[n:])
		if len(p) == 0 {
			return false, errors.New("not a list")
		}
		if p[0] == ']' {
			return true, nil
		}
		p = skipSpace(p[1:])
	}
}

// CutObject calls each with the bytes of each key (its quotes included)
// and value of the JSON object b, which must be valid JSON, in order and
// without copying them. It reports false, having called each for none,
// for any other value than an object.
func CutObject(b []byte, each func(key, value []byte)) bool {
	p := skipSpace(b)
	if len(p) == 0 || p[0] != '{' {
		return false
	}
	p = skipSpace(p[1:])
	for len(p) > 0 && p[0] == '"' {
		k := stringEnd(p)
		if k == 0 {
			return false
		}
		key := p[:k:k]
		p = skipSpace(p[k:])
		if len(p) == 0 || p[0] != ':' {
			return false
		}
		p = skipSpace(p[1:])
		n := validValueEnd(p)
		if n <= 0 {
			return false
		}
		each(key, p[:n:n])
		p = skipSpace(p[n:])
		if len(p) > 0 && p[0] == ',' {
			p = skipSpace(p[1:])
		}
	}
	return true
}

// decodeCommon is UnmarshalJSON's fast path for the messages clients send
// most (an object of role, content, tool_calls, tool_call_id and name, in
// any order, spaced or not): it cuts the values out of b with one scan
// instead of decoding b into a map and each value again, which made a
// gateway turn that re-sends 1,000 messages cost 7 ms of decoding. It
// reports false, having set nothing, for any other object (another key, a
// key written with an escape or given twice, a value that is not as
// UnmarshalJSON would keep it), which the full decoder then reads: what
// it accepts, it reads exactly as that decoder does. b must be valid JSON,
// as encoding/json checks it before it calls UnmarshalJSON.
func (m *Message) decodeCommon(b []byte) bool {
	var out Message
	var seen [5]bool
	p := skipSpace(b)
	if len(p) == 0 || p[0] != '{' {
		return false
	}
	p = skipSpace(p[1:])
	if len(p) > 0 && p[0] == '}' {
		return false
	}
	for {
		if len(p) == 0 || p[0] != '"' {
			return false
		}
		end := bytes.IndexByte(p[1:], '"')
		if end < 0 {
			return false
		}
		key := p[1 : 1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		p = skipSpace(p[2+end:])
		if len(p) == 0 || p[0] != ':' {
			return false
		}
		p = skipSpace(p[1:])
		n := validValueEnd(p)
		if n <= 0 {
			return false
		}
		v := p[:n]
		p = skipSpace(p[n:])
		k := -1
		switch string(key) {
		case "role":
			k = 0
			s, ok := plainString(v)
			if !ok {
				return false
			}
			out.Role = s
		case "content":
			k = 1
			out.Content = compactCopy(v)
		case "tool_calls":
			k = 2
			out.ToolCalls = compactCopy(v)
		case "tool_call_id", "name":
			k = 3
			dst := &out.ToolCallID
			if key[0] == 'n' {
				k, dst = 4, &out.Name
			}
			if !bytes.Equal(v, []byte("null")) {
				s, ok := plainString(v)
				if !ok {
					return false
				}
				*dst = s
			}
		}
		if k < 0 || seen[k] {
			return false
		}
		seen[k] = true
		if len(p) == 0 {
			return false
		}
		if p[0] == '}' {
			break
		}
		if p[0] != ',' {
			return false
		}
		p = skipSpace(p[1:])
	}
	*m = out
	return true
}

func skipSpace(p []byte) []byte {
	for len(p) > 0 && (p[0] == ' ' || p[0] == '\t' || p[0] == '\n' || p[0] == '\r') {
		p = p[1:]
	}
	return p
}

// validValueEnd is the length of the value p begins with, p being valid
// JSON from there (a string, an object, an array, a number or a literal,
// spaced or not); 0 when p begins with none. valueEnd is its check of a
// compact value that may not be valid.
func validValueEnd(p []byte) int {
	depth := 0
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"':
			j := stringEnd(p[i:])
			if j == 0 {
				return 0
			}
			i += j - 1
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				// The end of what holds a number or a literal.
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return i
			}
		}
	}
	if depth != 0 {
		return 0
	}
	return len(p)
}

// plainString is the text of the JSON string v when it holds no escape
// and is valid UTF-8 (encoding/json reads invalid bytes as U+FFFD).
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// compactCopy is a copy of the valid JSON value v without the spaces
// between its tokens, as json.Compact writes it.
func compactCopy(v []byte) json.RawMessage {
	if isCompact(v) {
		return append(json.RawMessage(nil), v...)
	}
	var buf bytes.Buffer
	json.Compact(&buf, v)
	return buf.Bytes()
}

// isCompact reports whether the valid JSON value v has no space between
// its tokens.
func isCompact(v []byte) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			n := stringEnd(v[i:])
			if n == 0 {
				return false
			}
			i += n - 1
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}

// ValidJSON is json.Valid, in a third of its time on text that is mostly
// strings (a re-sent conversation), which it reads by stringEnd rather than
// byte by byte. As json.Valid, it does not check UTF-8, and refuses values
// nested deeper than encoding/json decodes (10,000).
func ValidJSON(b []byte) bool {
	const maxDepth = 10000
	var open [64]byte
	stack := open[:0] // '{' or '[' for each container the value is in
	p := skipSpace(b)
	for {
		// A value begins at p.
		if len(p) == 0 {
			return false
		}
		switch c := p[0]; c {
		case '"':
			n := stringEnd(p)
			if n == 0 {
				return false
			}
			p = p[n:]
		case '{', '[':
			if len(stack) >= maxDepth {
				return false
			}
			p = skipSpace(p[1:])
			if len(p) > 0 && p[0] == c+2 { // '}' and ']' follow '{' and '[' by 2
				p = p[1:]
				break
			}
			stack = append(stack, c)
			if c == '{' && !objectKey(&p) {
				return false
			}
			continue
		case 't', 'f', 'n':
			lit := "null"
			switch c {
			case 't':
				lit = "true"
			case 'f':
				lit = "false"
			}
			if !bytes.HasPrefix(p, []byte(lit)) {
				return false
			}
			p = p[len(lit):]
		default:
			n := numberEnd(p)
			if n == 0 {
				return false
			}
			p = p[n:]
		}
		// A value ended: the containers it closes, then a comma before the
		// next one, or the end of b.
		for next := false; !next; {
			p = skipSpace(p)
			if len(stack) == 0 {
				return len(p) == 0
			}
			if len(p) == 0 {
				return false
			}
			top := stack[len(stack)-1]
			switch {
			case p[0] == ',':
				p = skipSpace(p[1:])
				if top == '{' && !objectKey(&p) {
					return false
				}
				next = true
			case p[0] == top+2:
				stack, p = stack[:len(stack)-1], p[1:]
			default:
				return false
			}
		}
	}
}

// objectKey moves *p past a member's name and its colon, and the spaces
// after them.
func objectKey(p *[]byte) bool {
	n := stringEnd(*p)
	if n == 0 {
		return false
	}
	q := skipSpace((*p)[n:])
	if len(q) == 0 || q[0] != ':' {
		return false
	}
	*p = skipSpace(q[1:])
	return true
}

// numberEnd is the length of the JSON number p begins with, or 0.
func numberEnd(p []byte) int {
	i := 0
	digits := func() bool {
		start := i
		for i < len(p) && '0' <= p[i] && p[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(p) && p[i] == '-' {
		i++
	}
	switch {
	case i < len(p) && p[i] == '0':
		i++
	case !digits():
		return 0
	}
	if i < len(p) && p[i] == '.' {
		i++
		if !digits() {
			return 0
		}
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		if !digits() {
			return 0
		}
	}
	return i
}
