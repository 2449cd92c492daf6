package importer

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// codexLine is one line of a Codex rollout. Current rollouts wrap every
// line as {timestamp, type, payload}; older ones had the bare session meta
// on the first line and bare response items after it (plus {"record_type":
// "state"} lines), which is what Type, RecordType and ID catch.
type codexLine struct {
	Timestamp  string          `json:"timestamp"`
	Type       string          `json:"type"`
	Payload    json.RawMessage `json:"payload"`
	RecordType string          `json:"record_type"`
	ID         string          `json:"id"`
}

type codexMeta struct {
	ID           string `json:"id"`
	Timestamp    string `json:"timestamp"`
	Instructions string `json:"instructions"`
	// BaseInstructions is the system prompt, {"text": …}, in the rollouts
	// of Codex 0.16x and later.
	BaseInstructions *struct {
		Text string `json:"text"`
	} `json:"base_instructions"`
	Model string `json:"model"`
	Cwd   string `json:"cwd"`
}

// codexMetaKnown are the session_meta keys the Session's fields take; the
// others (git, cli_version, originator, …) are its meta.
var codexMetaKnown = map[string]bool{"id": true, "timestamp": true, "instructions": true, "base_instructions": true, "model": true, "cwd": true}

// codexChatItems are the response item types that become chat messages.
var codexChatItems = map[string]bool{"message": true, "function_call": true, "custom_tool_call": true, "local_shell_call": true, "function_call_output": true, "custom_tool_call_output": true}

type codexItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Action    json.RawMessage `json:"action"`
	CallID    string          `json:"call_id"`
	ID        string          `json:"id"`
	Output    json.RawMessage `json:"output"`
}

func parseCodex(data []byte) (Session, error) {
	const format = FormatCodex
	s := Session{Source: "import:" + format, Skipped: map[string]int{}}
	var instructions, system string
	var sawMeta bool
	first := true
	var msgs []sessions.Message
	var tokens codexTokens
	for n, raw := range lines(data) {
		var l codexLine
		if err := decodeLine(format, n, raw, &l); err != nil {
			return Session{}, err
		}
		isFirst := first
		first = false
		payload := l.Payload
		kind := l.Type
		switch {
		case len(payload) > 0 && string(payload) != "null":
			// the wrapped format
		case l.RecordType != "":
			s.Skipped[l.RecordType]++
			continue
		case isFirst && l.Type == "" && l.ID != "":
			kind, payload = "session_meta", raw
		case l.Type != "":
			kind, payload = "response_item", raw
		default:
			s.Skipped["untyped"]++
			continue
		}
		switch kind {
		case "session_meta":
			var m codexMeta
			if err := json.Unmarshal(payload, &m); err != nil {
				return Session{}, invalidf(format, n, "session_meta: %v", err)
			}
			if sawMeta {
				s.Skipped[kind]++
				continue // a forked or resumed rollout repeats its parent's meta
			}
			sawMeta = true
			s.ID, instructions, s.Cwd = m.ID, m.Instructions, m.Cwd
			if m.BaseInstructions != nil {
				system = m.BaseInstructions.Text
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(payload, &fields); err != nil {
				return Session{}, invalidf(format, n, "session_meta: %v", err)
			}
			meta, err := metaObject(fields, codexMetaKnown, nil)
			if err != nil {
				return Session{}, invalidf(format, n, "session_meta: %v", err)
			}
			s.Meta = meta
			if s.Model == "" {
				s.Model = m.Model
			}
			stamp := m.Timestamp
			if stamp == "" {
				stamp = l.Timestamp
			}
			if stamp != "" {
				t, err := parseTime(stamp)
				if err != nil {
					return Session{}, invalidf(format, n, "session_meta: %v", err)
				}
				s.CreatedAt = t
			}
		case "turn_context":
			var c struct {
				Model string `json:"model"`
			}
			if err := json.Unmarshal(payload, &c); err != nil {
				return Session{}, invalidf(format, n, "turn_context: %v", err)
			}
			if s.Model == "" {
				s.Model = c.Model
			}
			if c.Model != "" {
				tokens.model = c.Model
			}
		case "event_msg":
			// Repeats or summaries of the response items, but for the
			// token counts, which are the calls.
			s.Skipped[kind]++
			if err := tokens.event(payload, s.ID, msgs); err != nil {
				return Session{}, invalidf(format, n, "token_count: %v", err)
			}
		case "response_item":
			var it codexItem
			if err := json.Unmarshal(payload, &it); err != nil {
				return Session{}, invalidf(format, n, "response_item: %v", err)
			}
			stamp, err := ts(l.Timestamp)
			if err != nil {
				return Session{}, invalidf(format, n, "timestamp: %v", err)
			}
			if !codexChatItems[it.Type] {
				s.Skipped[it.Type]++ // reasoning, web_search_call, ghost_snapshot, …
				continue
			}
			if msgs, err = codexAppend(msgs, it, stamp); err != nil {
				return Session{}, invalidf(format, n, "%s: %v", it.Type, err)
			}
		default:
			// compacted and unknown line types repeat or summarize what
			// the response items hold.
			s.Skipped[kind]++
		}
	}
	if tokens.place(msgs); len(tokens.pending) > 0 {
		s.Skipped["token_count without a reply"] += len(tokens.pending)
	}
	if !sawMeta && len(msgs) == 0 {
		return Session{}, invalidf(format, 0, "no session_meta line and no messages")
	}
	// Codex records the user's instructions as a message too; they are
	// added only when no message carries them. The base instructions, the
	// system prompt, are in no message: they come first.
	if instructions = strings.TrimSpace(instructions); instructions != "" && !anyContains(msgs, instructions) {
		sys := sessions.Message{Role: "system", Content: sessions.TextContent(instructions)}
		msgs = append([]sessions.Message{sys}, msgs...)
	}
	if system != "" {
		sys := sessions.Message{Role: "system", Content: sessions.TextContent(system)}
		msgs = append([]sessions.Message{sys}, msgs...)
	}
	if len(s.Skipped) == 0 {
		s.Skipped = nil
	}
	s.Messages = msgs
	return s, nil
}

var codexRoles = map[string]string{"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}

// codexAppend adds the chat form of one response item to msgs.
func codexAppend(msgs []sessions.Message, it codexItem, stamp fsstore.Time) ([]sessions.Message, error) {
	var call provider.ToolCall
	switch it.Type {
	case "message":
		role, ok := codexRoles[it.Role]
		if !ok {
			return nil, fmt.Errorf("role %q is not one of user, assistant, system, developer", it.Role)
		}
		content, err := codexContent(it.Content)
		if err != nil {
			return nil, err
		}
		return append(msgs, sessions.Message{TS: stamp, Role: role, Content: content}), nil
	case "function_call":
		call = newToolCall(it.CallID, it.Name, jsonString(it.Arguments))
	case "custom_tool_call":
		call = newToolCall(it.CallID, it.Name, jsonString(it.Input))
	case "local_shell_call":
		id := it.CallID
		if id == "" {
			id = it.ID
		}
		call = newToolCall(id, "local_shell", jsonString(it.Action))
	case "function_call_output", "custom_tool_call_output":
		return append(msgs, sessions.Message{TS: stamp, Role: "tool", Content: sessions.TextContent(codexOutputText(it.Output)), ToolCallID: it.CallID}), nil
	default:
		panic("unreachable: " + it.Type + " is not in codexChatItems")
	}
	if call.ID == "" {
		return nil, fmt.Errorf("no call_id")
	}
	// A call joins the assistant message just before it: the text the model
	// said with it, or the calls it made alongside.
	if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
		last := &msgs[n-1]
		var calls []provider.ToolCall
		if len(last.ToolCalls) > 0 {
			if err := json.Unmarshal(last.ToolCalls, &calls); err != nil {
				return nil, err
			}
		}
		last.ToolCalls = toolCallsJSON(append(calls, call))
		return msgs, nil
	}
	return append(msgs, sessions.Message{TS: stamp, Role: "assistant", Content: json.RawMessage("null"), ToolCalls: toolCallsJSON([]provider.ToolCall{call})}), nil
}

// codexContent maps Responses API content items to chat content: text
// items to text (a string when there is one), images to image_url parts.
func codexContent(content json.RawMessage) (json.RawMessage, error) {
	if len(content) == 0 || string(content) == "null" {
		return json.RawMessage("null"), nil
	}
	if content[0] == '"' {
		return json.RawMessage(compactJSON(content)), nil
	}
	var items []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
	}
	if err := json.Unmarshal(content, &items); err != nil {
		return nil, err
	}
	var parts []json.RawMessage
	for _, it := range items {
		switch it.Type {
		case "input_text", "output_text", "text":
			parts = append(parts, textPart(it.Text))
		case "input_image":
			if url := jsonString(it.ImageURL); url != "" {
				parts = append(parts, imagePart(url))
			}
		}
	}
	return partsContent(parts), nil
}

// codexOutputText is the text of a function_call_output's output: a
// string as it is (often itself JSON, which is what the model saw), or an
// object's "content" or "output", or the text items of a list.
func codexOutputText(out json.RawMessage) string {
	if len(out) == 0 || out[0] == '"' || string(out) == "null" {
		return jsonString(out)
	}
	if out[0] == '{' {
		var o struct {
			Content json.RawMessage `json:"content"`
			Output  json.RawMessage `json:"output"`
		}
		if json.Unmarshal(out, &o) == nil {
			for _, v := range []json.RawMessage{o.Content, o.Output} {
				if len(v) > 0 && string(v) != "null" {
					return codexOutputText(v)
				}
			}
		}
	}
	if out[0] == '[' {
		var items []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(out, &items) == nil {
			var texts []string
			for _, it := range items {
				if it.Text != "" {
					texts = append(texts, it.Text)
				}
			}
			return strings.Join(texts, "\n")
		}
	}
	return jsonString(out)
}

func anyContains(msgs []sessions.Message, text string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Text(), text) {
			return true
		}
	}
	return false
}

// codexTokens turns a rollout's token_count events into the calls they
// count. Codex writes one after each response, with the response's
// tokens (last_token_usage) and the session's running total
// (total_token_usage); an event whose total has not moved (Codex repeats
// them) or that has no info counts nothing. A call is stored on the last
// assistant message that holds none, else, when the response made none
// (only reasoning), on the next one; one left with no message after it is
// reported as skipped. Its id is the session's and the call's rank among
// the session's counted events, the same at every import of a file that
// grew.
type codexTokens struct {
	model   string // the model the last turn_context named
	total   *codexTokenUsage
	n       int          // the events counted
	pending []usage.Call // calls waiting for an assistant message
}

type codexTokenUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	TotalTokens           int64 `json:"total_tokens"`
}

func (c *codexTokens) event(payload json.RawMessage, sessionID string, msgs []sessions.Message) error {
	var ev struct {
		Type string `json:"type"`
		Info *struct {
			Total *codexTokenUsage `json:"total_token_usage"`
			Last  *codexTokenUsage `json:"last_token_usage"`
		} `json:"info"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil || ev.Type != "token_count" {
		return nil // other events are not read
	}
	if ev.Info == nil || ev.Info.Total == nil || (c.total != nil && *ev.Info.Total == *c.total) {
		return nil
	}
	last := ev.Info.Last
	if last == nil {
		// No last_token_usage: the difference of the totals.
		prev := codexTokenUsage{}
		if c.total != nil {
			prev = *c.total
		}
		t := *ev.Info.Total
		last = &codexTokenUsage{t.InputTokens - prev.InputTokens, t.CachedInputTokens - prev.CachedInputTokens,
			t.OutputTokens - prev.OutputTokens, t.ReasoningOutputTokens - prev.ReasoningOutputTokens, t.TotalTokens - prev.TotalTokens}
	}
	c.total = ev.Info.Total
	c.n++
	call := usage.Call{ID: fmt.Sprintf("codex:%s:%d", sessionID, c.n), Input: last.InputTokens, Output: last.OutputTokens,
		CacheRead: last.CachedInputTokens, Reasoning: last.ReasoningOutputTokens, InputHasCache: true, Model: c.model, Provider: "openai"}
	if err := call.Check(); err != nil {
		return err
	}
	c.pending = append(c.pending, call)
	c.place(msgs)
	return nil
}

// place stores the pending calls on the assistant messages at the end of
// msgs that hold none, oldest first.
func (c *codexTokens) place(msgs []sessions.Message) {
	free := len(msgs)
	for free > 0 && (msgs[free-1].Role != "assistant" || msgs[free-1].Extra[usage.Field] == nil) {
		free--
	}
	for i := free; i < len(msgs) && len(c.pending) > 0; i++ {
		if msgs[i].Role == "assistant" {
			usage.Put(&msgs[i], c.pending[0])
			c.pending = c.pending[1:]
		}
	}
}
