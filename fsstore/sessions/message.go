package sessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// Message is one line of a transcript: an OpenAI-style chat message plus
// the store's seq (1, 2, 3 … with no gaps) and ts. Content and tool calls
// are kept as the JSON they came in (compacted), so a string and a list of
// parts both round-trip unchanged; fields the store does not know are kept
// in Extra and written back.
type Message struct {
	Seq        int64
	TS         fsstore.Time
	Role       string
	Content    json.RawMessage
	ToolCalls  json.RawMessage
	ToolCallID string
	Name       string
	Extra      map[string]json.RawMessage
}

// Roles a message may have.
var roles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

// ParseMessage decodes one chat message and checks it: a known role, and
// content that is a string, a list of parts or null. seq and ts in the input
// are read but the store assigns seq itself.
func ParseMessage(line []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, fsstore.Invalidf("malformed message: %w", err)
	}
	return checkParsed(m)
}

// checkParsed is ParseMessage's check of a decoded message.
func checkParsed(m Message) (Message, error) {
	if !roles[m.Role] {
		return Message{}, fsstore.Invalidf("message role %q is not one of system, user, assistant, tool", m.Role)
	}
	if len(m.Content) > 0 {
		switch m.Content[0] {
		case '"', '[', 'n':
		default:
			return Message{}, fsstore.Invalidf("message content must be a string, a list of parts or null")
		}
	}
	if len(m.ToolCalls) > 0 && m.ToolCalls[0] != '[' && string(m.ToolCalls) != "null" {
		return Message{}, fsstore.Invalidf("message tool_calls must be a list")
	}
	if _, err := m.TS.Canonical(); err != nil {
		return Message{}, fsstore.Invalidf("message ts %q is not an RFC 3339 time", m.TS)
	}
	return m, nil
}

// LoneSurrogate returns the first field of m (content, tool_calls, or one
// of Extra in the order of their names) whose JSON holds a lone surrogate
// escape (fsstore.LoneSurrogate), and the escape; "" when none does. The
// string fields are decoded, so they cannot hold one.
func (m Message) LoneSurrogate() (field, escape string) {
	at := func(v json.RawMessage) string {
		if i := fsstore.LoneSurrogate(v); i >= 0 {
			return string(v[i : i+6])
		}
		return ""
	}
	if e := at(m.Content); e != "" {
		return "content", e
	}
	if e := at(m.ToolCalls); e != "" {
		return "tool_calls", e
	}
	for k, v := range m.Extra {
		if e := at(v); e != "" && (field == "" || k < field) {
			field, escape = k, e
		}
	}
	return field, escape
}

// checkUnicode refuses messages holding text that is not Unicode: a lone
// surrogate escape, which a raw value would keep as it came, so that the
// stored line could not be read by a strict JSON reader (jq) again.
func checkUnicode(msgs []Message) error {
	for i, m := range msgs {
		if field, esc := m.LoneSurrogate(); field != "" {
			return fsstore.Invalidf("message %d: %s holds %s, a lone surrogate escape (half of a UTF-16 pair), which is not Unicode", i+1, field, esc)
		}
	}
	return nil
}

// UnmarshalJSON reads a message, keeping unknown fields in Extra.
func (m *Message) UnmarshalJSON(b []byte) error {
	if m.decodeCommon(b) {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if fields == nil {
		return fmt.Errorf("message is null")
	}
	*m = Message{}
	for k, v := range fields {
		var err error
		switch k {
		case "seq":
			err = json.Unmarshal(v, &m.Seq)
		case "ts":
			err = json.Unmarshal(v, &m.TS)
		case "role":
			err = json.Unmarshal(v, &m.Role)
		case "content":
			m.Content, err = compact(v)
		case "tool_calls":
			m.ToolCalls, err = compact(v)
		case "tool_call_id":
			err = unmarshalOptString(v, &m.ToolCallID)
		case "name":
			err = unmarshalOptString(v, &m.Name)
		default:
			if m.Extra == nil {
				m.Extra = map[string]json.RawMessage{}
			}
			m.Extra[k], err = compact(v)
		}
		if err != nil {
			return fmt.Errorf("field %q: %w", k, err)
		}
	}
	return nil
}

func unmarshalOptString(v json.RawMessage, s *string) error {
	if string(v) == "null" {
		return nil
	}
	return json.Unmarshal(v, s)
}

func compact(v json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// MarshalJSON writes seq and ts first, so a reader can learn a line's
// position from its first bytes, then the chat fields, then Extra sorted.
// The ts is written in fsstore.TimeLayout; one that is not a time is an
// error.
func (m Message) MarshalJSON() ([]byte, error) {
	ts, err := m.TS.Canonical()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"seq":`)
	b.WriteString(strconv.FormatInt(m.Seq, 10))
	b.WriteString(`,"ts":`)
	writeString(&b, string(ts))
	m.writeChatFields(&b)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ChatJSON returns the message as a provider expects it: the chat fields
// only, without seq, ts and the fields in Extra (an API may refuse keys it
// does not know, such as an imported "reasoning").
func (m Message) ChatJSON() []byte {
	var b bytes.Buffer
	m.Extra = nil
	m.writeChatFields(&b)
	out := b.Bytes()
	out[0] = '{' // writeChatFields starts with a comma
	return append(out, '}')
}

func (m Message) writeChatFields(b *bytes.Buffer) {
	b.WriteString(`,"role":`)
	writeString(b, m.Role)
	if len(m.Content) > 0 {
		b.WriteString(`,"content":`)
		b.Write(m.Content)
	}
	if len(m.ToolCalls) > 0 {
		b.WriteString(`,"tool_calls":`)
		b.Write(m.ToolCalls)
	}
	if m.ToolCallID != "" {
		b.WriteString(`,"tool_call_id":`)
		writeString(b, m.ToolCallID)
	}
	if m.Name != "" {
		b.WriteString(`,"name":`)
		writeString(b, m.Name)
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteByte(',')
		writeString(b, k)
		b.WriteByte(':')
		b.Write(m.Extra[k])
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// SameAs reports whether m and o say the same thing: everything but seq and
// ts, compared after canonicalizing the JSON (so "\u00e9" equals "é" and key
// order does not matter). The truncation guard uses it to decide whether a
// whole-transcript write extends the stored one.
func (m Message) SameAs(o Message) bool {
	if m.Role != o.Role || m.ToolCallID != o.ToolCallID || m.Name != o.Name || len(m.Extra) != len(o.Extra) {
		return false
	}
	if !sameJSON(m.Content, o.Content) || !sameJSON(m.ToolCalls, o.ToolCalls) {
		return false
	}
	for k, v := range m.Extra {
		if ov, ok := o.Extra[k]; !ok || !sameJSON(v, ov) {
			return false
		}
	}
	return true
}

func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ca, erra := canonical(a)
	cb, errb := canonical(b)
	return erra == nil && errb == nil && bytes.Equal(ca, cb)
}

func canonical(v json.RawMessage) ([]byte, error) {
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	return json.Marshal(x)
}

// Text returns the message's text: the string content, or the text parts of
// a list joined by newlines. Other parts (images, files) are skipped.
func (m Message) Text() string {
	return ContentText(m.Content)
}

// ContentText is Message.Text for a bare content value.
func ContentText(content json.RawMessage) string {
	if len(content) == 0 {
		return ""
	}
	switch content[0] {
	case '"':
		// Most content is a string without escapes: its text is its bytes.
		if len(content) >= 2 && bytes.IndexByte(content, '\\') < 0 {
			return string(content[1 : len(content)-1])
		}
		var s string
		json.Unmarshal(content, &s)
		return s
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		json.Unmarshal(content, &parts)
		var texts []string
		for _, p := range parts {
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// TextContent returns s as a JSON string content value.
func TextContent(s string) json.RawMessage {
	var b bytes.Buffer
	writeString(&b, s)
	return b.Bytes()
}
