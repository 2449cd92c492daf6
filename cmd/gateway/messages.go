package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// messagesRequest is the part of an Anthropic Messages API request the
// gateway reads.
type messagesRequest struct {
	Model         string              `json:"model"`
	MaxTokens     json.RawMessage     `json:"max_tokens"`
	System        json.RawMessage     `json:"system"`
	Messages      []messagesMessage   `json:"messages"`
	Tools         []json.RawMessage   `json:"tools"`
	ToolChoice    *messagesToolChoice `json:"tool_choice"`
	Temperature   json.RawMessage     `json:"temperature"`
	TopP          json.RawMessage     `json:"top_p"`
	StopSequences json.RawMessage     `json:"stop_sequences"`
	Stream        bool                `json:"stream"`
	// Thinking, OutputConfig and ContextManagement go as they came to an
	// anthropic upstream (provider.AnthropicParams).
	Thinking          json.RawMessage `json:"thinking"`
	OutputConfig      json.RawMessage `json:"output_config"`
	ContextManagement json.RawMessage `json:"context_management"`
}

type messagesMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type messagesToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

// messagesBlock is a content block of a request's message.
type messagesBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

// isMessagesRoute reports whether a request is for the Anthropic
// Messages API, whose errors have its shape.
func isMessagesRoute(r *http.Request) bool {
	return r.URL.Path == "/v1/messages" || strings.HasPrefix(r.URL.Path, "/v1/messages/")
}

// decodeMessages reads a Messages API request into the chat completions
// terms the gateway routes and runs a turn in (see the package doc).
func (s *Server) decodeMessages(w http.ResponseWriter, r *http.Request) (request, *messagesRequest, error) {
	mr := &messagesRequest{}
	if err := s.decodeBody(w, r, mr); err != nil {
		return request{}, nil, err
	}
	msgs, err := messagesHistory(mr)
	if err != nil {
		return request{}, nil, err
	}
	tools, err := messagesTools(mr.Tools)
	if err != nil {
		return request{}, nil, err
	}
	// A request that names its client's thread (Claude Code's session) is
	// routed as a Responses request naming one is: the thread's session,
	// whatever the client made of its history (a compacted one).
	params := messagesParams(mr)
	params.Anthropic.Betas = betas(r)
	req := request{chat: threadOf(r) == "", msgs: msgs, stream: mr.Stream, wire: mr, model: mr.Model, tools: tools, params: params}
	if err := s.pickModel(&req); err != nil {
		return req, nil, err
	}
	return req, mr, s.checkTools(req.tools)
}

// messagesHistory is the request's system prompt and messages as hermes
// stores them.
func messagesHistory(mr *messagesRequest) ([]sessions.Message, error) {
	if len(mr.Messages) == 0 {
		return nil, badRequest("messages", "messages: at least one message is required")
	}
	var msgs []sessions.Message
	if sys := set(mr.System); sys != nil {
		content, err := systemContent(sys)
		if err != nil {
			return nil, err
		}
		if content != nil {
			msgs = append(msgs, sessions.Message{Role: "system", Content: content})
		}
	}
	for i, m := range mr.Messages {
		param := fmt.Sprintf("messages.%d", i)
		var blocks []json.RawMessage
		content := set(m.Content)
		switch {
		case content == nil:
			return nil, badRequest(param+".content", "%s.content: Field required", param)
		case content[0] == '"':
			blocks = nil
		case content[0] == '[':
			if err := json.Unmarshal(content, &blocks); err != nil {
				return nil, badRequest(param+".content", "%s.content: %v", param, err)
			}
			if len(blocks) == 0 {
				return nil, badRequest(param+".content", "%s: all messages must have non-empty content", param)
			}
		default:
			return nil, badRequest(param+".content", "%s.content: Input should be a valid string or list", param)
		}
		var converted []sessions.Message
		var err error
		switch m.Role {
		case "user":
			converted, err = userMessages(param, content, blocks)
		case "assistant":
			var am sessions.Message
			am, err = assistantMessage(param, content, blocks)
			converted = []sessions.Message{am}
		default:
			return nil, badRequest(param+".role", "%s.role: Input should be 'user' or 'assistant'", param)
		}
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, converted...)
	}
	return msgs, nil
}

// systemContent is the system prompt as a message's content: a string as
// it is, text blocks as text parts (without their cache_control).
func systemContent(sys json.RawMessage) (json.RawMessage, error) {
	if sys[0] == '"' {
		return sys, nil
	}
	var blocks []messagesBlock
	if err := json.Unmarshal(sys, &blocks); err != nil {
		return nil, badRequest("system", "system: Input should be a valid string or list of text blocks")
	}
	var parts []json.RawMessage
	for i, b := range blocks {
		if b.Type != "text" {
			return nil, badRequest(fmt.Sprintf("system.%d.type", i), "system.%d.type: Input should be 'text'", i)
		}
		parts = append(parts, textPart(b.Text))
	}
	if len(parts) == 0 {
		return nil, nil
	}
	return joinParts(parts), nil
}

// textPart is a text content part.
func textPart(text string) json.RawMessage {
	out, _ := marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
	return out
}

// userMessages converts a user message: each tool_result block is a tool
// message, then the other blocks, if any, a user message.
func userMessages(param string, content json.RawMessage, blocks []json.RawMessage) ([]sessions.Message, error) {
	if blocks == nil {
		return []sessions.Message{{Role: "user", Content: content}}, nil
	}
	var out []sessions.Message
	var parts []json.RawMessage
	for j, raw := range blocks {
		var b messagesBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, badRequest(fmt.Sprintf("%s.content.%d", param, j), "%s.content.%d: %v", param, j, err)
		}
		if b.Type != "tool_result" {
			parts = append(parts, part(raw, b))
			continue
		}
		if b.ToolUseID == "" {
			return nil, badRequest(fmt.Sprintf("%s.content.%d.tool_use_id", param, j), "%s.content.%d.tool_use_id: Field required", param, j)
		}
		m := sessions.Message{Role: "tool", ToolCallID: b.ToolUseID, Content: sessions.TextContent("")}
		if c := set(b.Content); c != nil {
			if c[0] == '"' {
				m.Content = c
			} else {
				var inner []json.RawMessage
				if err := json.Unmarshal(c, &inner); err != nil {
					return nil, badRequest(fmt.Sprintf("%s.content.%d.content", param, j), "%s.content.%d.content: Input should be a valid string or list", param, j)
				}
				m.Content = partsContent(inner)
			}
		}
		if b.IsError {
			m.Extra = map[string]json.RawMessage{"is_error": jsonTrue}
		}
		out = append(out, m)
	}
	if len(parts) > 0 {
		out = append(out, sessions.Message{Role: "user", Content: joinParts(parts)})
	}
	return out, nil
}

// partsContent is blocks as a list of content parts.
func partsContent(blocks []json.RawMessage) json.RawMessage {
	parts := make([]json.RawMessage, 0, len(blocks))
	for _, raw := range blocks {
		var b messagesBlock
		json.Unmarshal(raw, &b)
		parts = append(parts, part(raw, b))
	}
	return joinParts(parts)
}

func joinParts(parts []json.RawMessage) json.RawMessage {
	b := []byte{'['}
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return append(b, ']')
}

// part is a content block as a content part: text as a text part, an
// image as an image_url part (a data: URL for a base64 one), any other
// block as it came; none with its cache_control, which marks where a
// request's cache breakpoints are and moves from request to request.
func part(raw json.RawMessage, b messagesBlock) json.RawMessage {
	switch {
	case b.Type == "text":
		return textPart(b.Text)
	case b.Type == "image" && b.Source != nil && b.Source.Type == "base64":
		out, _ := marshal(map[string]any{"type": "image_url", "image_url": map[string]string{"url": "data:" + b.Source.MediaType + ";base64," + b.Source.Data}})
		return out
	case b.Type == "image" && b.Source != nil && b.Source.Type == "url":
		out, _ := marshal(map[string]any{"type": "image_url", "image_url": map[string]string{"url": b.Source.URL}})
		return out
	}
	return withoutCacheControl(raw)
}

// withoutCacheControl is a block without its cache_control member.
func withoutCacheControl(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte("cache_control")) {
		return compactJSON(raw)
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return raw
	}
	delete(fields, "cache_control")
	out, _ := marshal(fields)
	return out
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// assistantMessage converts an assistant message as the anthropic
// provider stores a reply (provider.AssistantMessage): its text blocks'
// text as content, its tool_use blocks as tool calls, its thinking and
// redacted_thinking blocks kept as they came, less their cache_control.
// Other blocks (server tools') are left out.
func assistantMessage(param string, content json.RawMessage, blocks []json.RawMessage) (sessions.Message, error) {
	if blocks == nil {
		return sessions.Message{Role: "assistant", Content: content}, nil
	}
	kept := make([]json.RawMessage, len(blocks))
	for j, raw := range blocks {
		kept[j] = withoutCacheControl(raw)
	}
	m, err := provider.AssistantMessage(kept)
	if err != nil {
		return m, badRequest(param+".content", "%s.%v", param, err)
	}
	return m, nil
}

// messagesTools are the client's tools as chat completions function
// entries. Server tools (those with a type other than custom) have none
// and are left out.
func messagesTools(raw []json.RawMessage) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, r := range raw {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(r, &t); err != nil {
			return nil, badRequest(fmt.Sprintf("tools.%d", i), "tools.%d: %v", i, err)
		}
		if t.Type != "" && t.Type != "custom" {
			continue
		}
		if t.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools.%d.name", i), "tools.%d.name: Field required", i)
		}
		type function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters,omitempty"`
		}
		b, _ := marshal(struct {
			Type     string   `json:"type"`
			Function function `json:"function"`
		}{"function", function{t.Name, t.Description, compactJSON(set(t.InputSchema))}})
		out = append(out, b)
	}
	return out, nil
}

// betas are the values of a request's anthropic-beta headers.
func betas(r *http.Request) []string {
	var bs []string
	for _, h := range r.Header.Values("Anthropic-Beta") {
		for _, b := range strings.Split(h, ",") {
			if b = strings.TrimSpace(b); b != "" {
				bs = append(bs, b)
			}
		}
	}
	return bs
}

// messagesParams are the request's parameters in chat completions' names,
// and those only the Messages API has as they came.
func messagesParams(mr *messagesRequest) provider.Params {
	p := provider.Params{MaxTokens: set(mr.MaxTokens), Temperature: set(mr.Temperature), TopP: set(mr.TopP), Stop: set(mr.StopSequences),
		Anthropic: provider.AnthropicParams{Thinking: set(mr.Thinking), OutputConfig: set(mr.OutputConfig), ContextManagement: set(mr.ContextManagement)}}
	if tc := mr.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "none":
			p.ToolChoice, _ = marshal(tc.Type)
		case "any":
			p.ToolChoice = json.RawMessage(`"required"`)
		case "tool":
			p.ToolChoice, _ = marshal(map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}})
		}
		if tc.DisableParallelToolUse {
			p.ParallelToolCalls = json.RawMessage("false")
		}
	}
	return p
}

// createMessage serves POST /v1/messages: the client sends its whole
// conversation, routed as a chat completion's is.
func (s *Server) createMessage(w http.ResponseWriter, r *http.Request) error {
	req, mr, err := s.decodeMessages(w, r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	run := s.runSide
	delivered := func(int64) {}
	if !isSideRequest(r, mr) {
		rt, err := s.router.routeRequest(ctx, r, req)
		defer rt.release()
		if err != nil {
			return err
		}
		sid := rt.a.sess.ID
		w.Header().Set(SessionHeader, sid)
		run = func(ctx context.Context, req request, stream io.Writer, started func()) (turnOutcome, error) {
			return s.run(ctx, &rt, req, stream, started)
		}
		delivered = func(count int64) { s.whenDelivered(w, sid, count) }
	}
	id := "msg_" + randomID()
	if !req.stream {
		out, err := run(ctx, req, nil, nil)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, messageObject(id, orDefault(out.model, req.reported), out))
		delivered(out.count)
		return nil
	}
	var sse *sseWriter
	index, open, streamed, thought := 0, false, false, false
	closeText := func() {
		if open {
			sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
			index++
			open = false
		}
	}
	stream := &blockStream{text: func(p []byte) {
		if !open {
			sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
			open, streamed = true, true
		}
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": string(p)}})
	}, block: func(b map[string]any) {
		closeText()
		thinkingEvents(sse, index, b)
		index++
		thought = true
	}}
	out, err := run(ctx, req, stream, func() {
		sse = startSSE(w)
		sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.reported, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 0, "output_tokens": 0},
		}})
	})
	if err != nil {
		if sse == nil {
			return err
		}
		ae := s.toAPIError(err)
		sse.event("error", messagesErrorBody(ae))
		return nil
	}
	closeText()
	msg := messageObject(id, orDefault(out.model, req.reported), out)
	for _, b := range msg.Content {
		if t := b["type"]; (t == "thinking" || t == "redacted_thinking") && thought {
			continue // in its place, as it came
		}
		switch b["type"] {
		case "thinking", "redacted_thinking":
			thinkingEvents(sse, index, b)
			index++
			continue
		case "tool_use":
			sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(b["input"].(json.RawMessage))}})
		case "text":
			if streamed {
				continue // as it came
			}
			// A provider that does not stream gave it whole.
			sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		default:
			sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": b})
		}
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": nil}, "usage": msg.Usage})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
	delivered(out.count)
	return nil
}

// blockStream is the stream a streamed /v1/messages turn is run with:
// the provider's text as it comes, and an anthropic reply's thinking
// blocks as each ends (provider.BlockWriter), so that each block reaches
// the client in its place.
type blockStream struct {
	text  func([]byte)
	block func(map[string]any)
}

func (s *blockStream) Write(p []byte) (int, error) {
	s.text(p)
	return len(p), nil
}

func (s *blockStream) WriteBlock(raw json.RawMessage) error {
	var b map[string]any
	if err := json.Unmarshal(raw, &b); err != nil {
		return err
	}
	s.block(b)
	return nil
}

// thinkingEvents sends a thinking or redacted_thinking block b at index,
// as the API streams it: a thinking block's text and signature as deltas.
func thinkingEvents(sse *sseWriter, index int, b map[string]any) {
	if b["type"] == "redacted_thinking" {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": b})
	} else {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "thinking_delta", "thinking": b["thinking"]}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "signature_delta", "signature": b["signature"]}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
}

// isSideRequest reports whether a request is one of Claude Code's side
// requests: one that names a Claude Code session but offers no tools (a
// title for the conversation, a check of the key's quota, a command's
// classification), which every turn of the conversation itself offers.
// It is no turn of the conversation, and makes no session of its own.
func isSideRequest(r *http.Request, mr *messagesRequest) bool {
	return r.Header.Get("X-Claude-Code-Session-Id") != "" && len(mr.Tools) == 0
}

// runSide answers a side request with one call of the provider, storing
// nothing. A drain waits for it as for a turn.
func (s *Server) runSide(ctx context.Context, req request, stream io.Writer, started func()) (turnOutcome, error) {
	s.mu.Lock()
	if s.abandoned {
		s.mu.Unlock()
		return turnOutcome{}, &apiError{status: 503, typ: "server_error", code: "shutting_down", msg: errStopping.Error()}
	}
	s.turns.Add(1)
	s.mu.Unlock()
	defer s.turns.Done()
	prov := req.provider
	if prov == nil {
		prov = s.opts.Provider
	}
	if started != nil {
		started()
	}
	reply, err := prov.Complete(ctx, provider.Request{History: provider.Messages(req.msgs), Model: req.upstream, Params: req.params, Stream: stream})
	if err != nil {
		return turnOutcome{}, err
	}
	return turnOutcome{reply: reply, model: reply.Model}, nil
}

// apiMessage is a Messages API message object.
type apiMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        map[string]int   `json:"usage"`
}

// messageObject is the message object of a turn: the thinking blocks of
// its last assistant message, its text, a tool_use block for each call
// it ends with; the stop reason tool_use when it ends with calls, else
// the one stored with the message, else end_turn.
func messageObject(id, model string, out turnOutcome) apiMessage {
	msg := apiMessage{ID: id, Type: "message", Role: "assistant", Model: model, Content: []map[string]any{}, StopReason: "end_turn"}
	var last sessions.Message
	for _, m := range out.reply.Messages {
		if m.Role == "assistant" {
			last = m
		}
	}
	var thinking []map[string]any
	json.Unmarshal(last.Extra[provider.ThinkingBlocks], &thinking)
	msg.Content = append(msg.Content, thinking...)
	if text := replyText(out.reply.Messages); text != "" {
		msg.Content = append(msg.Content, map[string]any{"type": "text", "text": text})
	}
	var stop string
	if json.Unmarshal(last.Extra[provider.StopReason], &stop) == nil && stop != "" {
		msg.StopReason = stop
	}
	for _, c := range pendingToolCalls(out.reply.Messages) {
		input := json.RawMessage(c.Function.Arguments)
		if !json.Valid(input) || bytes.TrimSpace(input)[0] != '{' {
			input = json.RawMessage("{}")
		}
		msg.Content = append(msg.Content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Function.Name, "input": input})
		msg.StopReason = "tool_use"
	}
	msg.Usage = map[string]int{"input_tokens": 0, "output_tokens": 0}
	if u := out.reply.Usage; u != nil {
		msg.Usage = map[string]int{
			"input_tokens":                u.PromptTokens - u.CacheReadInputTokens - u.CacheCreationInputTokens,
			"output_tokens":               u.CompletionTokens,
			"cache_creation_input_tokens": u.CacheCreationInputTokens,
			"cache_read_input_tokens":     u.CacheReadInputTokens,
		}
	}
	return msg
}

// countTokens serves POST /v1/messages/count_tokens: the provider's own
// count when it has one (anthropic's count_tokens), else an estimate that
// errs high, one token for every 3 bytes of the request's system prompt,
// messages and tools as JSON. It stores nothing.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) error {
	req, mr, err := s.decodeMessages(w, r)
	if err != nil {
		return err
	}
	prov := req.provider
	if prov == nil {
		prov = s.opts.Provider
	}
	if tc, ok := prov.(provider.TokenCounter); ok {
		n, err := tc.CountTokens(r.Context(), provider.Request{History: provider.Messages(req.msgs), Tools: req.tools, Model: req.upstream, Params: req.params})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": n})
		return nil
	}
	n := len(mr.System)
	for _, m := range mr.Messages {
		n += len(m.Content) + len(m.Role) + 8
	}
	for _, t := range mr.Tools {
		n += len(t)
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": (n + 2) / 3})
	return nil
}

// messagesErrorType is the Messages API's error type for a status.
func messagesErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusMethodNotAllowed, http.StatusUnsupportedMediaType, http.StatusRequestTimeout:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	return "api_error"
}

// messagesError is an error in the Messages API's shape.
type messagesError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func messagesErrorBody(ae *apiError) messagesError {
	e := messagesError{Type: "error"}
	e.Error.Type, e.Error.Message = messagesErrorType(ae.status), ae.msg
	return e
}

// anthropicModels lists the models as the Messages API does, for a
// client that asks with anthropic-version.
func (s *Server) anthropicModels(w http.ResponseWriter) {
	names := []string{s.opts.Model}
	for _, m := range s.opts.Models {
		if m.Name != s.opts.Model {
			names = append(names, m.Name)
		}
	}
	data := make([]map[string]any, len(names))
	for i, n := range names {
		data[i] = map[string]any{"type": "model", "id": n, "display_name": n, "created_at": "1970-01-01T00:00:00Z"}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false, "first_id": names[0], "last_id": names[len(names)-1]})
}
