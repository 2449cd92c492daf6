package provider

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/hermes/hermes/fsstore/sessions"
)

// reasoningHosts are the API hosts whose thinking models refuse (HTTP 400)
// an assistant message with tool calls replayed without its
// reasoning_content: DeepSeek, Moonshot's Kimi, Xiaomi's MiMo. A host
// matches itself and its subdomains. Hosts that re-serve those models
// (OpenRouter, Groq, Cerebras) refuse the field instead, so the choice
// goes by host, not by model name.
var reasoningHosts = []string{"deepseek.com", "moonshot.ai", "moonshot.cn", "kimi.com", "xiaomimimo.com"}

// replaysReasoning resolves a ReasoningContent setting for the base URL
// (already checked to parse).
func replaysReasoning(setting, baseURL string) bool {
	switch setting {
	case ReasoningReplay:
		return true
	case ReasoningDrop:
		return false
	}
	u, _ := url.Parse(baseURL)
	host := strings.ToLower(u.Hostname())
	for _, h := range reasoningHosts {
		if host == h || strings.HasSuffix(host, "."+h) {
			return true
		}
	}
	return false
}

// writeMessage writes m as a chat completions request message: the fields
// the API defines for its role and nothing else, whatever the transcript
// holds besides (an importer's or another program's keys, tool_calls
// null, call_id in a tool call). The stored message is not changed.
//
//   - role, always.
//   - content: as stored; null only on an assistant message with tool
//     calls (the shape the API itself returns), "" where the transcript has
//     none or null, since the API requires it.
//   - name, when set: the API defines it on system, user and assistant
//     messages, and servers read it on tool messages too (OpenAI's and
//     Groq's tool-use examples set it to the function's name).
//   - tool_calls: on assistant messages, when they hold at least one call;
//     each call as id, type ("function" when missing) and function (name
//     and arguments) only.
//   - tool_call_id: on tool messages.
//   - reasoning_content, with replay, on assistant messages: the stored
//     one, else "".
func writeMessage(b *bytes.Buffer, m sessions.Message, replay bool) {
	b.WriteString(`{"role":`)
	writeJSON(b, m.Role)
	calls := requestToolCalls(m)
	b.WriteString(`,"content":`)
	switch {
	case !isNull(m.Content):
		b.Write(m.Content)
	case calls != nil:
		b.WriteString("null")
	default:
		b.WriteString(`""`)
	}
	if m.Name != "" {
		b.WriteString(`,"name":`)
		writeJSON(b, m.Name)
	}
	if calls != nil {
		b.WriteString(`,"tool_calls":`)
		writeJSON(b, calls)
	}
	if m.Role == "tool" {
		b.WriteString(`,"tool_call_id":`)
		writeJSON(b, m.ToolCallID)
	}
	if replay && m.Role == "assistant" {
		b.WriteString(`,"reasoning_content":`)
		var text string
		json.Unmarshal(m.Extra["reasoning_content"], &text) // anything but a string counts as none
		writeJSON(b, text)
	}
	b.WriteByte('}')
}

// requestToolCalls returns the calls of an assistant message, in the
// API's shape; nil when it has none, or when they do not decode as calls,
// in which case the turn engine does not treat them as calls either (its
// history answers none of them).
func requestToolCalls(m sessions.Message) []ToolCall {
	if m.Role != "assistant" || len(m.ToolCalls) == 0 || m.ToolCalls[0] != '[' {
		return nil
	}
	var calls []ToolCall
	if json.Unmarshal(m.ToolCalls, &calls) != nil || len(calls) == 0 {
		return nil
	}
	for i := range calls {
		if calls[i].Type == "" {
			calls[i].Type = "function"
		}
	}
	return calls
}

// writeJSON writes v as JSON without escaping <, > and &, which the API
// reads either way; v is always encodable. A string that needs no escape
// is written at once.
func writeJSON(b *bytes.Buffer, v any) {
	if s, ok := v.(string); ok && plain(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// plain reports whether s is written in JSON as it is: printable ASCII
// without a quote or a backslash.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
