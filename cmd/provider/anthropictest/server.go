// Package anthropictest is a fake Anthropic Messages API for tests, as
// strict as the real one where translations are careless. It answers 400,
// in the API's error shape, to what the API refuses:
//
//   - no max_tokens, an empty messages list, a first message that is not
//     the user's, two messages in a row of the same role;
//   - an empty content, an empty text block;
//   - a tool_result that answers no tool_use of the assistant message just
//     before it, a tool_result after other blocks of its message, a
//     tool_use left unanswered by the next message;
//   - a thinking block whose signature is not the one the fake gives its
//     thinking (Signature), a redacted_thinking block whose data it did not give, and,
//     with thinking on, an assistant message with tool calls whose results
//     end the request that does not start with its thinking;
//   - more than 4 cache_control breakpoints, a 1h one after a 5m one.
//
// It keeps a prompt cache as the API does: the bytes of the request's
// prefix (tools, system, messages, each block less its cache_control) up
// to a breakpoint are written; a later request whose prefix up to one of
// its breakpoints, or up to one of the 20 blocks before it, is byte for
// byte one written reads it. Tokens are counted as a block's bytes / 4;
// POST /v1/messages/count_tokens answers the count of a request (and
// refuses max_tokens and stream, which it does not take). Every request is
// recorded, with the usage the fake answered.
package anthropictest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Block is a content block, of a request or of a reply.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
}

// Message is a request's message, its content as blocks.
type Message struct {
	Role    string
	Content []Block
}

// Usage is what the fake answered a request's usage was.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Request is a request the fake received.
type Request struct {
	Header   http.Header
	Body     []byte
	Model    string
	Messages []Message
	Thinking bool // thinking was enabled or adaptive
	Stream   bool
	// Count: a request of POST /v1/messages/count_tokens, answered its
	// Usage.InputTokens.
	Count  bool
	Status int    // the status it was answered with
	Error  string // the message of a refusal
	Usage  Usage
}

// LastText is the text of the request's last message's text blocks and
// tool results.
func (r *Request) LastText() string {
	if len(r.Messages) == 0 {
		return ""
	}
	var b bytes.Buffer
	for _, bl := range r.Messages[len(r.Messages)-1].Content {
		b.WriteString(bl.Text)
		if len(bl.Content) > 0 {
			var s string
			if json.Unmarshal(bl.Content, &s) != nil {
				var parts []Block
				json.Unmarshal(bl.Content, &parts)
				for _, p := range parts {
					s += p.Text
				}
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// Server is the fake. Reply decides each answer's blocks (text and
// tool_use; a thinking block is put first when the request thinks); when
// nil, the answer is the text "ok".
type Server struct {
	Reply func(r *Request) []Block
	// Stop, when set and not empty for a request, is its answer's stop
	// reason (max_tokens, refusal, …); else tool_use when the answer calls
	// a tool, end_turn when not.
	Stop func(r *Request) string
	// SplitJSON is the size, in characters, of a streamed tool input's
	// input_json_delta pieces; 0 sends each whole.
	SplitJSON int

	mu       sync.Mutex
	requests []*Request
	redacted map[string]bool
	cache    map[string]bool // prefix digests written
	n        int
}

// Requests are the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

type wireRequest struct {
	Model     *string           `json:"model"`
	MaxTokens *int              `json:"max_tokens"`
	System    json.RawMessage   `json:"system"`
	Messages  []wireMessage     `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
	Thinking  *struct {
		Type string `json:"type"`
	} `json:"thinking"`
	Stream bool `json:"stream"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// notOffered is the name of the first tool blocks call that the request
// body does not offer, "" when it offers them all: a real model calls only
// the tools it was given.
func notOffered(body []byte, blocks []Block) string {
	var w struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &w) // checked already: it decodes
	offered := make([]string, len(w.Tools))
	for i, t := range w.Tools {
		offered[i] = t.Name
	}
	for _, b := range blocks {
		if b.Type == "tool_use" && !slices.Contains(offered, b.Name) {
			return b.Name
		}
	}
	return ""
}

// refusal is a request the API would answer 400.
type refusal string

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := &Request{Header: r.Header.Clone(), Body: body, Count: strings.HasSuffix(r.URL.Path, "/count_tokens")}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	err := s.check(req)
	s.mu.Unlock()
	if err != "" {
		req.Status, req.Error = http.StatusBadRequest, string(err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, string(err))
		return
	}
	req.Status = http.StatusOK
	if req.Count {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, req.Usage.InputTokens)
		return
	}
	blocks := []Block{{Type: "text", Text: "ok"}}
	if s.Reply != nil {
		blocks = s.Reply(req)
	}
	if name := notOffered(body, blocks); name != "" {
		req.Status, req.Error = http.StatusInternalServerError, "the fake's script calls "+name+", a tool the request does not offer"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(req.Status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":%q}}`, req.Error)
		return
	}
	stop := "end_turn"
	for _, b := range blocks {
		if b.Type == "tool_use" {
			stop = "tool_use"
		}
	}
	if s.Stop != nil && s.Stop(req) != "" {
		stop = s.Stop(req)
	}
	s.mu.Lock()
	s.n++
	if req.Thinking {
		text := fmt.Sprintf("thinking %d about %q", s.n, req.LastText())
		blocks = append([]Block{{Type: "thinking", Thinking: text, Signature: Signature(text)}}, blocks...)
	}
	for _, b := range blocks {
		req.Usage.OutputTokens += tokens([]byte(b.Text + b.Thinking + string(b.Input)))
	}
	id := fmt.Sprintf("msg_%d", s.n)
	s.mu.Unlock()
	if req.Stream {
		s.stream(w, id, req, blocks, stop)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": req.Usage,
	})
}

func (s *Server) stream(w http.ResponseWriter, id string, req *Request, blocks []Block, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ string, v map[string]any) {
		v["type"] = typ
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
	}
	start := req.Usage
	start.OutputTokens = 1
	event("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	event("ping", map[string]any{})
	for i, b := range blocks {
		switch b.Type {
		case "text":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text}})
		case "thinking":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": b.Thinking}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "signature_delta", "signature": b.Signature}})
		case "tool_use":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			in := []rune(string(b.Input))
			step := s.SplitJSON
			if step <= 0 {
				step = len(in)
			}
			for j := 0; j < len(in); j += step {
				event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in[j:min(j+step, len(in))])}})
			}
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": req.Usage.OutputTokens}})
	event("message_stop", map[string]any{})
}

var cacheControl = regexp.MustCompile(`,\s*"cache_control"\s*:\s*\{[^{}]*\}`)

func tokens(b []byte) int { return (len(b) + 3) / 4 }

// check decodes and checks the request, and does its cache accounting;
// it returns why the API would refuse it, or "". s.mu is held.
func (s *Server) check(req *Request) refusal {
	if s.cache == nil {
		s.redacted, s.cache = map[string]bool{}, map[string]bool{}
	}
	var w wireRequest
	if err := json.Unmarshal(req.Body, &w); err != nil {
		return refusal("malformed request: " + err.Error())
	}
	if w.Model == nil || *w.Model == "" {
		return "model: Field required"
	}
	req.Model, req.Stream = *w.Model, w.Stream
	switch {
	case req.Count && w.MaxTokens != nil:
		return "max_tokens: Extra inputs are not permitted"
	case req.Count && w.Stream:
		return "stream: Extra inputs are not permitted"
	case !req.Count && (w.MaxTokens == nil || *w.MaxTokens < 1):
		return "max_tokens: Field required"
	}
	req.Thinking = w.Thinking != nil && (w.Thinking.Type == "enabled" || w.Thinking.Type == "adaptive")
	if len(w.Messages) == 0 {
		return "messages: at least one message is required"
	}
	// The prefix, block by block, for the cache.
	var segs [][]byte
	var ttls []string // each segment's breakpoint TTL, "" for none
	add := func(raw []byte) {
		var cc struct {
			CacheControl *struct {
				TTL string `json:"ttl"`
			} `json:"cache_control"`
		}
		json.Unmarshal(raw, &cc)
		ttl := ""
		if cc.CacheControl != nil {
			ttl = firstNonEmpty(cc.CacheControl.TTL, "5m")
		}
		segs = append(segs, cacheControl.ReplaceAll(raw, nil))
		ttls = append(ttls, ttl)
	}
	for _, t := range w.Tools {
		add(t)
	}
	if len(w.System) > 0 && w.System[0] == '[' {
		var sys []json.RawMessage
		if json.Unmarshal(w.System, &sys) != nil {
			return "system: Input should be a valid list"
		}
		for _, b := range sys {
			add(b)
		}
	} else if len(w.System) > 0 {
		add(w.System)
	}
	var calls []string // the tool_use ids the last assistant message left to answer
	for i, m := range w.Messages {
		where := fmt.Sprintf("messages.%d", i)
		if m.Role != "user" && m.Role != "assistant" {
			return refusal(where + ".role: Input should be 'user' or 'assistant'")
		}
		if i == 0 && m.Role != "user" {
			return "messages: first message must use the \"user\" role"
		}
		if i > 0 && w.Messages[i-1].Role == m.Role {
			return "messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"" + refusal(m.Role) + "\" roles in a row"
		}
		var raws []json.RawMessage
		if len(m.Content) > 0 && m.Content[0] == '"' {
			var text string
			json.Unmarshal(m.Content, &text)
			if text == "" {
				return refusal(where + ": all messages must have non-empty content")
			}
			b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
			raws = []json.RawMessage{b}
		} else if json.Unmarshal(m.Content, &raws) != nil || len(raws) == 0 {
			return refusal(where + ": all messages must have non-empty content")
		}
		msg := Message{Role: m.Role}
		results := map[string]bool{}
		others := false
		for j, raw := range raws {
			var b Block
			if err := json.Unmarshal(raw, &b); err != nil {
				return refusal(fmt.Sprintf("%s.content.%d: %v", where, j, err))
			}
			if b.Type == "text" && b.Text == "" {
				return refusal(fmt.Sprintf("%s.content.%d.text: text content blocks must be non-empty", where, j))
			}
			switch b.Type {
			case "tool_result":
				if m.Role != "user" || !slices.Contains(calls, b.ToolUseID) || results[b.ToolUseID] {
					return refusal(fmt.Sprintf("%s.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", where, j, b.ToolUseID))
				}
				if others {
					return refusal(fmt.Sprintf("%s.content.%d: tool_result blocks must come first in the content", where, j))
				}
				results[b.ToolUseID] = true
			case "thinking":
				if m.Role != "assistant" || b.Signature != Signature(b.Thinking) {
					return refusal(fmt.Sprintf("%s.content.%d: Invalid `signature` in `thinking` block", where, j))
				}
			case "redacted_thinking":
				if m.Role != "assistant" || !s.redacted[b.Data] {
					return refusal(fmt.Sprintf("%s.content.%d: Invalid `data` in `redacted_thinking` block", where, j))
				}
			default:
				others = true
			}
			msg.Content = append(msg.Content, b)
			add(raw)
		}
		if m.Role == "user" {
			for _, id := range calls {
				if !results[id] {
					return refusal(fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, id))
				}
			}
			calls = nil
		} else {
			calls = nil
			for _, b := range msg.Content {
				if b.Type == "tool_use" {
					calls = append(calls, b.ID)
				}
			}
			if len(calls) > 0 && req.Thinking && i == len(w.Messages)-2 {
				if t := msg.Content[0].Type; t != "thinking" && t != "redacted_thinking" {
					return refusal(fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.", i, t))
				}
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	if len(calls) > 0 {
		return refusal(fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after", len(w.Messages)-1))
	}
	if req.Count {
		for _, seg := range segs {
			req.Usage.InputTokens += tokens(seg)
		}
		return ""
	}
	return s.account(req, segs, ttls)
}

// account checks the breakpoints and does the cache's reads and writes.
func (s *Server) account(req *Request, segs [][]byte, ttls []string) refusal {
	var breakpoints []int
	for i, ttl := range ttls {
		if ttl == "" {
			continue
		}
		if ttl != "5m" && ttl != "1h" {
			return refusal("cache_control.ttl: Input should be '5m' or '1h'")
		}
		if ttl == "1h" && len(breakpoints) > 0 && ttls[breakpoints[len(breakpoints)-1]] == "5m" {
			return "a cache_control entry with ttl 1h must not come after one with ttl 5m"
		}
		breakpoints = append(breakpoints, i)
	}
	if len(breakpoints) > 4 {
		return refusal("A maximum of 4 blocks with cache_control may be provided. Found " + strconv.Itoa(len(breakpoints)) + ".")
	}
	digests := make([]string, len(segs))
	h := sha256.New()
	for i, seg := range segs {
		fmt.Fprintf(h, "%d:", len(seg))
		h.Write(seg)
		digests[i] = string(h.Sum(nil))
	}
	read := -1
	for k := len(breakpoints) - 1; k >= 0 && read < 0; k-- {
		for j := breakpoints[k]; j >= 0 && j >= breakpoints[k]-20; j-- {
			if s.cache[digests[j]] {
				read = j
				break
			}
		}
	}
	last := -1
	if len(breakpoints) > 0 {
		last = breakpoints[len(breakpoints)-1]
	}
	for _, b := range breakpoints {
		if b > read {
			s.cache[digests[b]] = true
		}
	}
	for i, seg := range segs {
		n := tokens(seg)
		switch {
		case i <= read:
			req.Usage.CacheReadInputTokens += n
		case i <= last:
			req.Usage.CacheCreationInputTokens += n
		default:
			req.Usage.InputTokens += n
		}
	}
	return ""
}

// Signature is the signature the fake gives a thinking block's text, and
// the one it accepts: like the API's, it does not depend on the server
// process, so a history stays valid across the fake's restarts.
func Signature(thinking string) string {
	sum := sha256.Sum256([]byte("anthropictest\x00" + thinking))
	return hex.EncodeToString(sum[:])
}

// Redact makes data a redacted_thinking block's data the fake accepts,
// as if it had given it.
func (s *Server) Redact(data string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.redacted == nil {
		s.redacted, s.cache = map[string]bool{}, map[string]bool{}
	}
	s.redacted[data] = true
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
