package provider

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/hermes/hermes/fsstore/sessions"
)

// span is one content block of a request: bytes [start, end) of the
// request's block buffer.
type span struct{ start, end int }

// apiMessage is one Messages API message: consecutive transcript messages
// of the same role merged, as the API requires roles to alternate.
type apiMessage struct {
	role   string
	blocks []span
	// results counts the tool_result blocks at the front of blocks (a
	// user message's results go before its other blocks).
	results int
	// calls are the ids of an assistant message's tool_use blocks.
	calls []string
}

// conversion turns a transcript into the Messages API's system and
// messages, each block written once into one buffer.
type conversion struct {
	buf      bytes.Buffer
	system   []span
	messages []apiMessage
	// leading is true until the first message that is not a system one:
	// the system messages before it are the request's system prompt.
	leading bool
	// scratch holds the blocks of the message being converted.
	scratch []span
}

func (c *conversion) block(write func(b *bytes.Buffer)) span {
	s := span{start: c.buf.Len()}
	write(&c.buf)
	s.end = c.buf.Len()
	return s
}

// textBlock writes {"type":"text","text":…}; the API refuses an empty one,
// so empty text gives none (ok false).
func (c *conversion) textBlock(text string) (span, bool) {
	if text == "" {
		return span{}, false
	}
	return c.block(func(b *bytes.Buffer) {
		b.WriteString(`{"type":"text","text":`)
		writeJSON(b, text)
		b.WriteByte('}')
	}), true
}

// to returns the message that blocks of role go to: the last one when it
// has that role, else a new one.
func (c *conversion) to(role string) *apiMessage {
	n := len(c.messages)
	if n > 0 && c.messages[n-1].role == role {
		return &c.messages[n-1]
	}
	if n < cap(c.messages) {
		// A pooled conversion's message: its lists' room is reused.
		c.messages = c.messages[:n+1]
		m := &c.messages[n]
		*m = apiMessage{role: role, blocks: m.blocks[:0], calls: m.calls[:0]}
		return m
	}
	c.messages = append(c.messages, apiMessage{role: role})
	return &c.messages[n]
}

// conversions keeps conversions for reuse: a turn's request is as long as
// the last one and more, and growing the buffers again each turn would cost
// more than the conversion itself.
var conversions = sync.Pool{New: func() any { return &conversion{} }}

// add converts one transcript message.
func (c *conversion) add(m sessions.Message) {
	if m.Role == "system" && c.leading {
		c.system = c.parts(c.system, m.Content)
		return
	}
	c.leading = false
	switch m.Role {
	case "assistant":
		c.addAssistant(m)
	case "tool":
		c.addResult(m)
	default: // user, and system notes amid the conversation, which the API has no place for
		if c.scratch = c.parts(c.scratch[:0], m.Content); len(c.scratch) > 0 {
			to := c.to("user")
			to.blocks = append(to.blocks, c.scratch...)
		}
	}
}

// parts appends to dst the blocks of a content value: a string is one
// text block;
// in a list, a text part is a text block, an image_url part an image
// block, and a part of any other type (one in the Messages API's own
// shape, as a client of the gateway's Anthropic route sent it) goes as it
// is.
func (c *conversion) parts(dst []span, content json.RawMessage) []span {
	if isNull(content) {
		return dst
	}
	if content[0] == '"' {
		// A string content is a JSON string already: its bytes are the
		// block's text as they are.
		if string(content) == `""` {
			return dst
		}
		return append(dst, c.block(func(b *bytes.Buffer) {
			b.WriteString(`{"type":"text","text":`)
			b.Write(content)
			b.WriteByte('}')
		}))
	}
	if content[0] != '[' {
		return dst
	}
	var parts []json.RawMessage
	json.Unmarshal(content, &parts) // the store checked it is a list
	out := dst
	for _, raw := range parts {
		var p struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		json.Unmarshal(raw, &p)
		switch p.Type {
		case "text":
			if s, ok := c.textBlock(p.Text); ok {
				out = append(out, s)
			}
		case "image_url":
			out = append(out, c.block(func(b *bytes.Buffer) { writeImage(b, p.ImageURL.URL) }))
		case "refusal":
		default:
			out = append(out, c.block(func(b *bytes.Buffer) { b.Write(raw) }))
		}
	}
	return out
}

// writeImage writes an image block for a URL: a data: URL as base64
// source, any other as a url source.
func writeImage(b *bytes.Buffer, u string) {
	b.WriteString(`{"type":"image","source":`)
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok && strings.HasSuffix(meta, ";base64") {
			b.WriteString(`{"type":"base64","media_type":`)
			writeJSON(b, strings.TrimSuffix(meta, ";base64"))
			b.WriteString(`,"data":`)
			writeJSON(b, data)
			b.WriteString("}}")
			return
		}
	}
	b.WriteString(`{"type":"url","url":`)
	writeJSON(b, u)
	b.WriteString("}}")
}

// addAssistant converts an assistant message: its thinking blocks as they
// were stored, then its text, then a tool_use block for each call.
func (c *conversion) addAssistant(m sessions.Message) {
	blocks := c.scratch[:0]
	var thinking []json.RawMessage
	if raw, ok := m.Extra[ThinkingBlocks]; ok {
		json.Unmarshal(raw, &thinking) // anything but a list counts as none
	}
	for _, t := range thinking {
		blocks = append(blocks, c.block(func(b *bytes.Buffer) { b.Write(t) }))
	}
	blocks = c.parts(blocks, m.Content)
	calls := requestToolCalls(m)
	for _, call := range calls {
		blocks = append(blocks, c.block(func(b *bytes.Buffer) {
			b.WriteString(`{"type":"tool_use","id":`)
			writeJSON(b, call.ID)
			b.WriteString(`,"name":`)
			writeJSON(b, call.Function.Name)
			b.WriteString(`,"input":`)
			writeInput(b, call.Function.Arguments)
			b.WriteByte('}')
		}))
	}
	c.scratch = blocks
	if len(blocks) == 0 {
		return // the API refuses an empty message; the one around it merge
	}
	to := c.to("assistant")
	to.blocks = append(to.blocks, blocks...)
	for _, call := range calls {
		to.calls = append(to.calls, call.ID)
	}
}

// writeInput writes a call's arguments as a tool_use input: the JSON
// object they hold, compacted; {} for arguments that are not one.
func writeInput(b *bytes.Buffer, args string) {
	start := b.Len()
	if json.Compact(b, []byte(args)) == nil && b.Len() > start && b.Bytes()[start] == '{' {
		return
	}
	b.Truncate(start)
	b.WriteString("{}")
}

// addResult converts a tool message: a tool_result block when the
// assistant message just before called it, else (a result whose call is
// not in the message before it, which the API refuses) a text block
// saying whose result it is.
func (c *conversion) addResult(m sessions.Message) {
	n := len(c.messages)
	called := false
	if n > 0 && c.messages[n-1].role == "assistant" {
		called = slices.Contains(c.messages[n-1].calls, m.ToolCallID)
	} else if n > 1 && c.messages[n-1].role == "user" && c.messages[n-2].role == "assistant" {
		called = slices.Contains(c.messages[n-2].calls, m.ToolCallID)
	}
	if !called {
		if s, ok := c.textBlock("result of tool call " + m.ToolCallID + ": " + sessions.ContentText(m.Content)); ok {
			to := c.to("user")
			to.blocks = append(to.blocks, s)
		}
		return
	}
	content := c.scratch[:0]
	if len(m.Content) > 0 && m.Content[0] == '[' {
		content = c.parts(content, m.Content)
	}
	c.scratch = content
	s := c.block(func(b *bytes.Buffer) {
		b.WriteString(`{"type":"tool_result","tool_use_id":`)
		writeJSON(b, m.ToolCallID)
		switch {
		case len(content) > 0:
			b.WriteString(`,"content":[`)
			for i, p := range content {
				if i > 0 {
					b.WriteByte(',')
				}
				b.Write(c.buf.Bytes()[p.start:p.end])
			}
			b.WriteByte(']')
		case len(m.Content) > 0 && m.Content[0] == '"' && string(m.Content) != `""`:
			b.WriteString(`,"content":`)
			b.Write(m.Content)
		}
		if string(m.Extra["is_error"]) == "true" {
			b.WriteString(`,"is_error":true`)
		}
		b.WriteByte('}')
	})
	to := c.to("user")
	to.blocks = append(to.blocks, span{})
	copy(to.blocks[to.results+1:], to.blocks[to.results:])
	to.blocks[to.results] = s
	to.results++
}

// requestBody is the Messages API request. The bytes of everything a
// turn does not change (tools, system prompt, earlier messages) are the
// same from one request to the next, so that the cache breakpoints find
// what the previous request wrote: the breakpoints go after the tools,
// after the system prompt, on the last block of the message the previous
// request ended with and on the last block of this one. For count_tokens
// (count), it holds what that endpoint takes: model, system, messages,
// tools and thinking, without breakpoints.
func (p *anthropic) requestBody(model string, req Request, count bool) ([]byte, error) {
	cache := p.cache
	if count {
		cache = ""
	}
	c := conversions.Get().(*conversion)
	c.buf.Reset()
	c.system, c.messages, c.leading = c.system[:0], c.messages[:0], true
	defer conversions.Put(c)
	if err := req.History.Each(func(m sessions.Message) error { c.add(m); return nil }); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(c.buf.Len() + 1024)
	b.WriteString(`{"model":`)
	writeJSON(&b, model)
	if !count {
		b.WriteString(`,"max_tokens":`)
		if max := firstRaw(req.Params.MaxTokens, req.Params.MaxCompletionTokens); max != nil {
			b.Write(max)
		} else {
			b.WriteString(itoa(p.maxTokens))
		}
	}
	blocks := c.buf.Bytes()
	writeBlock := func(s span, breakpoint bool) {
		if breakpoint && cache != "" && s.end > s.start {
			b.Write(blocks[s.start : s.end-1])
			b.WriteString(`,"cache_control":`)
			b.WriteString(cache)
			b.WriteByte('}')
			return
		}
		b.Write(blocks[s.start:s.end])
	}
	if len(c.system) > 0 {
		b.WriteString(`,"system":[`)
		for i, s := range c.system {
			if i > 0 {
				b.WriteByte(',')
			}
			writeBlock(s, i == len(c.system)-1)
		}
		b.WriteByte(']')
	}
	// The message the previous request ended with is the last user
	// message before the last assistant one.
	previous := -1
	for i := len(c.messages) - 1; i >= 0; i-- {
		if c.messages[i].role == "assistant" {
			if i > 0 {
				previous = i - 1
			}
			break
		}
	}
	b.WriteString(`,"messages":[`)
	for i, m := range c.messages {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"`)
		b.WriteString(m.role)
		b.WriteString(`","content":[`)
		for j, s := range m.blocks {
			if j > 0 {
				b.WriteByte(',')
			}
			writeBlock(s, j == len(m.blocks)-1 && (i == previous || i == len(c.messages)-1))
		}
		b.WriteString("]}")
	}
	b.WriteByte(']')
	if len(req.Tools) > 0 {
		b.WriteString(`,"tools":[`)
		for i, t := range req.Tools {
			if i > 0 {
				b.WriteByte(',')
			}
			writeTool(&b, t)
			if i == len(req.Tools)-1 && cache != "" {
				b.Truncate(b.Len() - 1)
				b.WriteString(`,"cache_control":`)
				b.WriteString(cache)
				b.WriteByte('}')
			}
		}
		b.WriteByte(']')
	}
	client := req.Params.Anthropic
	thinking, output := []byte(p.thinking), []byte(p.output)
	if client.Thinking != nil || client.OutputConfig != nil {
		thinking, output = client.Thinking, client.OutputConfig
	}
	if len(thinking) > 0 {
		b.WriteString(`,"thinking":`)
		b.Write(thinking)
	}
	if count {
		b.WriteByte('}')
		return b.Bytes(), nil
	}
	writeAnthropicParams(&b, req.Params, len(req.Tools) > 0)
	if len(output) > 0 {
		b.WriteString(`,"output_config":`)
		b.Write(output)
	}
	if client.ContextManagement != nil {
		b.WriteString(`,"context_management":`)
		b.Write(client.ContextManagement)
	}
	if req.Stream != nil {
		b.WriteString(`,"stream":true`)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func firstRaw(values ...json.RawMessage) json.RawMessage {
	for _, v := range values {
		if !isNull(v) {
			return v
		}
	}
	return nil
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// writeTool writes a function-calling entry as a Messages API tool: name,
// description and input_schema (the function's parameters as they came;
// an empty object schema when it has none).
func writeTool(b *bytes.Buffer, raw json.RawMessage) {
	var t struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	json.Unmarshal(raw, &t)
	f := t.Function
	b.WriteString(`{"name":`)
	writeJSON(b, f.Name)
	if f.Description != "" {
		b.WriteString(`,"description":`)
		writeJSON(b, f.Description)
	}
	b.WriteString(`,"input_schema":`)
	if isNull(f.Parameters) {
		b.WriteString(`{"type":"object"}`)
	} else {
		b.Write(compact(f.Parameters))
	}
	b.WriteByte('}')
}

// writeAnthropicParams writes the parameters the Messages API has a
// counterpart for: tool_choice (with parallel_tool_calls), temperature,
// top_p, stop as stop_sequences. The others have none and are not sent.
func writeAnthropicParams(b *bytes.Buffer, p Params, tools bool) {
	choice := ""
	var s string
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	switch {
	case json.Unmarshal(p.ToolChoice, &s) == nil:
		choice = map[string]string{"auto": "auto", "required": "any", "none": "none"}[s]
	case json.Unmarshal(p.ToolChoice, &named) == nil && named.Function.Name != "":
		choice = "tool"
	}
	serial := string(p.ParallelToolCalls) == "false"
	if tools && (choice != "" || serial) {
		b.WriteString(`,"tool_choice":{"type":"`)
		b.WriteString(firstNonEmpty(choice, "auto"))
		b.WriteByte('"')
		if choice == "tool" {
			b.WriteString(`,"name":`)
			writeJSON(b, named.Function.Name)
		}
		if serial && choice != "none" {
			b.WriteString(`,"disable_parallel_tool_use":true`)
		}
		b.WriteByte('}')
	}
	if !isNull(p.Temperature) {
		b.WriteString(`,"temperature":`)
		b.Write(p.Temperature)
	}
	if !isNull(p.TopP) {
		b.WriteString(`,"top_p":`)
		b.Write(p.TopP)
	}
	if !isNull(p.Stop) {
		b.WriteString(`,"stop_sequences":`)
		if p.Stop[0] == '"' {
			b.WriteByte('[')
			b.Write(p.Stop)
			b.WriteByte(']')
		} else {
			b.Write(p.Stop)
		}
	}
}
