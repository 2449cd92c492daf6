package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

const (
	defaultAnthropicURL     = "https://api.anthropic.com"
	defaultAnthropicVersion = "2023-06-01"
)

// joinBetas is the anthropic-beta value of configured (comma-separated)
// and then each of more not already in it.
func joinBetas(configured string, more []string) string {
	all := strings.Split(configured, ",")
	if configured == "" {
		all = nil
	}
	for _, b := range more {
		if b = strings.TrimSpace(b); b != "" && !slices.Contains(all, b) {
			all = append(all, b)
		}
	}
	return strings.Join(all, ",")
}

// ThinkingBlocks is the key of an assistant message's Extra that holds the
// thinking and redacted_thinking blocks of an anthropic reply, a list of
// the blocks as the API gave them, signatures included: they go back with
// the message unchanged.
const ThinkingBlocks = "thinking_blocks"

// StopReason is the key of an assistant message's Extra that holds an
// anthropic reply's stop reason when it is neither end_turn nor tool_use
// (max_tokens, stop_sequence, refusal, pause_turn,
// model_context_window_exceeded).
const StopReason = "stop_reason"

// anthropic speaks the Messages API with net/http, as openai speaks chat
// completions: one endpoint does not justify a client library in the
// binary.
type anthropic struct {
	url        string
	model      string
	apiKey     string
	keyFrom    string // the variable apiKey came from (Config.KeyFrom)
	bearer     bool
	version    string
	beta       string
	maxTokens  int
	thinking   string // the request's thinking member, "" for none
	output     string // the request's output_config member, "" for none
	cache      string // the cache_control value of each breakpoint, "" for none
	timeout    time.Duration
	maxRetries int
	client     *http.Client
}

func newAnthropic(cfg Config, timeout time.Duration) (Provider, error) {
	if cfg.Model == "" {
		return nil, modelRequired("anthropic")
	}
	base := strings.TrimRight(firstNonEmpty(cfg.BaseURL, defaultAnthropicURL), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, configErrorf("anthropic provider: base URL %q is not an http or https URL", cfg.BaseURL)
	}
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	p := &anthropic{
		url:        base + "/messages",
		model:      cfg.Model,
		apiKey:     cfg.APIKey,
		keyFrom:    cfg.KeyFrom,
		bearer:     cfg.Anthropic.Bearer,
		version:    firstNonEmpty(cfg.Anthropic.Version, defaultAnthropicVersion),
		beta:       strings.Join(cfg.Anthropic.Beta, ","),
		maxTokens:  cfg.Anthropic.MaxTokens,
		timeout:    timeout,
		maxRetries: retries(cfg.MaxRetries),
		client:     newClient(cfg.MaxIdlePerHost),
	}
	if p.maxTokens < 0 {
		return nil, configErrorf("anthropic provider: max_tokens %d is negative", p.maxTokens)
	}
	if p.maxTokens == 0 {
		p.maxTokens = defaultMaxTokens(cfg.Model)
	}
	if p.thinking, p.output, err = thinkingMembers(cfg.Anthropic.Thinking); err != nil {
		return nil, err
	}
	switch cfg.Anthropic.Cache {
	case "", "5m":
		p.cache = `{"type":"ephemeral"}`
	case "1h":
		p.cache = `{"type":"ephemeral","ttl":"1h"}`
	case "off":
	default:
		return nil, configErrorf("anthropic provider: cache %q is not one of 5m, 1h, off", cfg.Anthropic.Cache)
	}
	return p, nil
}

// thinkingMembers reads the thinking setting: off (or empty), a budget in
// tokens, adaptive, or adaptive:<effort>.
func thinkingMembers(setting string) (thinking, output string, err error) {
	switch {
	case setting == "" || setting == "off":
		return "", "", nil
	case setting == "adaptive":
		return `{"type":"adaptive"}`, "", nil
	case strings.HasPrefix(setting, "adaptive:"):
		effort := strings.TrimPrefix(setting, "adaptive:")
		switch effort {
		case "low", "medium", "high", "xhigh", "max":
			return `{"type":"adaptive"}`, `{"effort":"` + effort + `"}`, nil
		}
		return "", "", configErrorf("anthropic provider: thinking effort %q is not one of low, medium, high, xhigh, max", effort)
	}
	budget, err := strconv.Atoi(setting)
	if err != nil || budget < 1024 {
		return "", "", configErrorf("anthropic provider: thinking %q is not off, adaptive, adaptive:<effort> or a budget of at least 1024 tokens", setting)
	}
	return `{"type":"enabled","budget_tokens":` + strconv.Itoa(budget) + `}`, "", nil
}

// defaultMaxTokens is max_tokens for a model when none is configured: the
// largest output the Claude 3 models accept, 32000 for the later ones
// (whose limits are 32000 and more).
func defaultMaxTokens(model string) int {
	switch {
	case strings.HasPrefix(model, "claude-3-5") || strings.HasPrefix(model, "claude-3-7"):
		return 8192
	case strings.HasPrefix(model, "claude-3-"):
		return 4096
	}
	return 32000
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func (p *anthropic) Name() string { return "anthropic" }

func (p *anthropic) Complete(ctx context.Context, req Request) (Reply, error) {
	ctx, cancel := withTimeout(ctx, p.timeout)
	defer cancel()
	body, err := p.requestBody(firstNonEmpty(req.Model, p.model), req, false)
	if err != nil {
		return Reply{}, &Error{Provider: "anthropic", Message: "anthropic: reading the transcript: " + oneLine(err.Error()), Err: err}
	}
	stream := &streamWriter{w: req.Stream}
	start := time.Now()
	var requestID string
	reply, err := withRetries(ctx, "anthropic", p.timeout, p.maxRetries, stream, func() (Reply, *Error) {
		reply, id, perr := p.attempt(ctx, body, req.Params.Anthropic.Betas, stream)
		requestID = id
		return reply, perr
	})
	if err == nil && reply.Usage != nil {
		c := reply.Usage.anthropicCall()
		c.Model, c.RequestID = reply.Model, requestID
		record(reply.Messages, c, "anthropic", start)
	}
	return reply, err
}

// anthropicCall is the stored record of u, an anthropic reply's usage
// (anthropicUsage.usage): the input as the API means it, read afresh,
// apart from the cache writes and reads; a cache write the API did not
// split by lifetime is of the default one, 5 minutes.
func (u *Usage) anthropicCall() usage.Call {
	w5, w1 := u.CacheCreation5mInputTokens, u.CacheCreation1hInputTokens
	if w5+w1 == 0 {
		w5 = u.CacheCreationInputTokens
	}
	return usage.Call{
		Input:        int64(u.PromptTokens - u.CacheCreationInputTokens - u.CacheReadInputTokens),
		Output:       int64(u.CompletionTokens),
		CacheRead:    int64(u.CacheReadInputTokens),
		CacheWrite5m: int64(w5),
		CacheWrite1h: int64(w1),
	}
}

// TokenCounter is a provider that can say how many input tokens a
// request would take: anthropic, by the API's count_tokens endpoint.
type TokenCounter interface {
	CountTokens(ctx context.Context, req Request) (int, error)
}

// CountTokens asks the API's count_tokens endpoint how many input tokens
// req would take, with the provider's retries and timeout.
func (p *anthropic) CountTokens(ctx context.Context, req Request) (int, error) {
	ctx, cancel := withTimeout(ctx, p.timeout)
	defer cancel()
	body, err := p.requestBody(firstNonEmpty(req.Model, p.model), req, true)
	if err != nil {
		return 0, &Error{Provider: "anthropic", Message: "anthropic: reading the transcript: " + oneLine(err.Error()), Err: err}
	}
	var n int
	_, err = withRetries(ctx, "anthropic", p.timeout, p.maxRetries, &streamWriter{}, func() (Reply, *Error) {
		resp, perr := p.post(ctx, p.url+"/count_tokens", body, false, req.Params.Anthropic.Betas)
		if perr != nil {
			return Reply{}, perr
		}
		defer resp.Body.Close()
		var count struct {
			InputTokens *int `json:"input_tokens"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&count); err != nil || count.InputTokens == nil {
			return Reply{}, anthropicBad("malformed count_tokens response")
		}
		n = *count.InputTokens
		return Reply{}, nil
	})
	return n, err
}

// attempt sends one request (betas: the client's, see post), and returns
// the reply and the upstream's request id. Its error says whether a retry
// may help, and holds the call, failed, when the stream broke after the
// API counted its tokens (Error.Failed).
func (p *anthropic) attempt(ctx context.Context, body []byte, betas []string, stream *streamWriter) (Reply, string, *Error) {
	start := time.Now()
	resp, perr := p.post(ctx, p.url, body, stream.w != nil, betas)
	if perr != nil {
		return Reply{}, "", perr
	}
	defer resp.Body.Close()
	id := resp.Header.Get("Request-Id")
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if stream.w != nil && mediaType != "application/json" {
		st := &anthropicStream{}
		reply, perr := st.read(resp.Body, stream)
		if u := st.usage.usage(); perr != nil && u != nil {
			c := u.anthropicCall()
			c.Model, c.RequestID, c.Failed = st.model, id, true
			stamp(&c, "anthropic", start)
			perr.Failed = append(perr.Failed, c)
		}
		return reply, id, perr
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return Reply{}, id, &Error{Provider: "anthropic", Message: "anthropic: reading response: " + oneLine(err.Error()), Err: err, retryable: true, retryAfter: -1}
	}
	var msg anthropicMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		return Reply{}, id, anthropicBad("malformed response: %v: %s", err, errorText(data))
	}
	if msg.Type == "error" {
		return Reply{}, id, anthropicBad("%s", errorText(data))
	}
	reply, perr := msg.reply()
	if perr == nil && stream.w != nil {
		stream.WriteString(reply.Messages[0].Text())
	}
	return reply, id, perr
}

// post sends body to url with the API's headers, anthropic-beta holding
// the configured betas and then those of betas not among them; a response
// with an error status is its *Error, its body read and closed.
func (p *anthropic) post(ctx context.Context, url string, body []byte, stream bool, betas []string) (*http.Response, *Error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Provider: "anthropic", Message: "anthropic: " + err.Error(), Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Anthropic-Version", p.version)
	if beta := joinBetas(p.beta, betas); beta != "" {
		hreq.Header.Set("Anthropic-Beta", beta)
	}
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if p.apiKey != "" {
		if p.bearer {
			hreq.Header.Set("Authorization", "Bearer "+p.apiKey)
		} else {
			hreq.Header.Set("X-Api-Key", p.apiKey)
		}
	}
	resp, err := p.client.Do(hreq)
	if err != nil {
		return nil, &Error{Provider: "anthropic", Message: "anthropic: " + oneLine(err.Error()), Err: err, retryable: true, retryAfter: -1}
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	text := errorText(data)
	return nil, &Error{
		Provider:   "anthropic",
		StatusCode: resp.StatusCode,
		Said:       text,
		Code:       anthropicErrorType(data),
		Message:    fmt.Sprintf("anthropic: HTTP %d: %s%s", resp.StatusCode, text, keyHint(resp.StatusCode, p.keyFrom, "ANTHROPIC_API_KEY")),
		// 529 is the API's "overloaded".
		retryable:  resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
		retryAfter: parseRetryAfter(resp.Header.Get("Retry-After")),
	}
}

// anthropicErrorType is the error.type of an error body
// ({"type":"error","error":{"type":…,"message":…}}), else "".
func anthropicErrorType(body []byte) string {
	var e struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	json.Unmarshal(body, &e)
	return e.Error.Type
}

func anthropicBad(format string, args ...any) *Error {
	return &Error{Provider: "anthropic", Message: "anthropic: " + fmt.Sprintf(format, args...), retryAfter: -1}
}

// anthropicMessage is a Messages API response, or the message of a
// stream's message_start.
type anthropicMessage struct {
	Type       string            `json:"type"`
	Model      string            `json:"model"`
	Content    []json.RawMessage `json:"content"`
	StopReason string            `json:"stop_reason"`
	Usage      anthropicUsage    `json:"usage"`
}

// anthropicBlock is a content block of a reply.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// anthropicUsage is a reply's usage; pointers, since a stream's
// message_delta gives only the counts that changed.
type anthropicUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// merge takes the counts u2 gives over u's.
func (u *anthropicUsage) merge(u2 anthropicUsage) {
	if u2.InputTokens != nil {
		u.InputTokens = u2.InputTokens
	}
	if u2.OutputTokens != nil {
		u.OutputTokens = u2.OutputTokens
	}
	if u2.CacheCreationInputTokens != nil {
		u.CacheCreationInputTokens = u2.CacheCreationInputTokens
	}
	if u2.CacheReadInputTokens != nil {
		u.CacheReadInputTokens = u2.CacheReadInputTokens
	}
	if u2.CacheCreation != nil {
		u.CacheCreation = u2.CacheCreation
	}
}

// usage is u in hermes's terms: the prompt counts every input token,
// cached or not, as chat completions' prompt_tokens does.
func (u anthropicUsage) usage() *Usage {
	n := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	if u.InputTokens == nil && u.OutputTokens == nil {
		return nil
	}
	out := &Usage{
		CompletionTokens:         n(u.OutputTokens),
		CacheCreationInputTokens: n(u.CacheCreationInputTokens),
		CacheReadInputTokens:     n(u.CacheReadInputTokens),
	}
	out.PromptTokens = n(u.InputTokens) + out.CacheCreationInputTokens + out.CacheReadInputTokens
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	if c := u.CacheCreation; c != nil {
		out.CacheCreation5mInputTokens, out.CacheCreation1hInputTokens = c.Ephemeral5m, c.Ephemeral1h
	}
	return out
}

// reply turns a whole response into hermes's assistant message.
func (msg anthropicMessage) reply() (Reply, *Error) {
	blocks := make([]anthropicBlock, len(msg.Content))
	for i, raw := range msg.Content {
		if err := json.Unmarshal(raw, &blocks[i]); err != nil {
			return Reply{}, anthropicBad("malformed response: content block %d: %v", i, err)
		}
	}
	return assistantReply(blocks, msg.Content, msg.StopReason, msg.Model, msg.Usage)
}

// assistantReply builds the reply message from its content blocks (raw[i]
// is blocks[i] as the API sent it), as fromBlocks does, with the stop
// reason in Extra when it is worth telling.
func assistantReply(blocks []anthropicBlock, raw []json.RawMessage, stopReason, model string, u anthropicUsage) (Reply, *Error) {
	if stopReason == "" {
		return Reply{}, anthropicBad("response has no stop_reason")
	}
	m := fromBlocks(blocks, raw)
	if stopReason != "end_turn" && stopReason != "tool_use" {
		if m.Extra == nil {
			m.Extra = map[string]json.RawMessage{}
		}
		m.Extra[StopReason] = sessions.TextContent(stopReason)
	}
	if field, esc := m.LoneSurrogate(); field != "" {
		return Reply{}, anthropicBad("malformed response: %s holds %s, a lone surrogate escape (half of a UTF-16 pair), which is not Unicode", field, esc)
	}
	return Reply{Messages: []sessions.Message{m}, Usage: u.usage(), Model: model}, nil
}

// AssistantMessage is an assistant message of the Messages API, given as
// its content blocks, as hermes stores it (see fromBlocks); an error
// names the index of a block that does not decode.
func AssistantMessage(raw []json.RawMessage) (sessions.Message, error) {
	blocks := make([]anthropicBlock, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &blocks[i]); err != nil {
			return sessions.Message{}, fmt.Errorf("content.%d: %w", i, err)
		}
	}
	return fromBlocks(blocks, raw), nil
}

// fromBlocks is the assistant message of content blocks (raw[i] is
// blocks[i] as it came): the text blocks' text as content (null when
// there is none and the message calls tools), each tool_use as a tool call
// (its input as the arguments), the thinking and redacted_thinking blocks
// kept as they came in Extra (ThinkingBlocks). Blocks of other types
// (server tools') are left out.
func fromBlocks(blocks []anthropicBlock, raw []json.RawMessage) sessions.Message {
	m := sessions.Message{Role: "assistant"}
	var text strings.Builder
	var calls []ToolCall
	var thinking [][]byte
	for i, bl := range blocks {
		switch bl.Type {
		case "text":
			text.WriteString(bl.Text)
		case "thinking", "redacted_thinking":
			thinking = append(thinking, compact(raw[i]))
		case "tool_use":
			args := []byte("{}")
			if !isNull(bl.Input) {
				args = compact(bl.Input)
			}
			calls = append(calls, ToolCall{ID: bl.ID, Type: "function", Function: ToolFunction{Name: bl.Name, Arguments: string(args)}})
		}
	}
	if len(calls) > 0 {
		var b bytes.Buffer
		writeJSON(&b, calls)
		m.ToolCalls = b.Bytes()
	}
	switch {
	case text.Len() > 0:
		m.Content = sessions.TextContent(text.String())
	case calls != nil:
		m.Content = json.RawMessage("null")
	default:
		m.Content = sessions.TextContent("")
	}
	if len(thinking) > 0 {
		m.Extra = map[string]json.RawMessage{ThinkingBlocks: append(append([]byte{'['}, bytes.Join(thinking, []byte{','})...), ']')}
	}
	return m
}

// anthropicEvent is one server-sent event of a stream; its type is in
// its data as well as in its event line.
type anthropicEvent struct {
	Type         string           `json:"type"`
	Message      anthropicMessage `json:"message"`
	Index        int              `json:"index"`
	ContentBlock json.RawMessage  `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage anthropicUsage  `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamBlock is a content block being assembled from its deltas.
type streamBlock struct {
	block   anthropicBlock
	raw     json.RawMessage // the content_block_start's block, for types kept as they came
	input   strings.Builder // tool_use: the partial_json deltas
	text    strings.Builder
	stopped bool
}

// anthropicStream assembles a reply from a stream's events.
type anthropicStream struct {
	started    bool
	model      string
	usage      anthropicUsage
	blocks     []*streamBlock
	stopReason string
	stopped    bool // message_stop was seen
}

// read reads a stream until message_stop, writing text deltas to stream
// as they come.
func (st *anthropicStream) read(body io.Reader, stream *streamWriter) (Reply, *Error) {
	r := bufio.NewReader(body)
	var data []byte
	for !st.stopped {
		line, err := r.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0 && len(data) > 0:
			if perr := st.event(data, stream); perr != nil {
				return Reply{}, perr
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[5:], []byte(" "))...)
		}
		if err == io.EOF && len(data) > 0 {
			if perr := st.event(data, stream); perr != nil {
				return Reply{}, perr
			}
			data = data[:0]
		}
		if err != nil && !st.stopped {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Reply{}, &Error{Provider: "anthropic", Message: "anthropic: stream ended before message_stop: " + oneLine(err.Error()), Err: err, retryable: true, retryAfter: -1}
		}
	}
	return st.reply()
}

// event handles the data of one event.
func (st *anthropicStream) event(data []byte, stream *streamWriter) *Error {
	var ev anthropicEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return anthropicBad("malformed stream event: %v: %s", err, errorText(data))
	}
	if ev.Type != "message_start" && ev.Type != "ping" && ev.Type != "error" && !st.started {
		return anthropicBad("stream event %s before message_start", ev.Type)
	}
	switch ev.Type {
	case "message_start":
		st.started = true
		st.model = ev.Message.Model
		st.usage.merge(ev.Message.Usage)
	case "content_block_start":
		if ev.Index != len(st.blocks) {
			return anthropicBad("stream block %d started after %d blocks", ev.Index, len(st.blocks))
		}
		b := &streamBlock{raw: compact(ev.ContentBlock)}
		if err := json.Unmarshal(ev.ContentBlock, &b.block); err != nil {
			return anthropicBad("malformed stream block: %v", err)
		}
		b.text.WriteString(b.block.Text + b.block.Thinking)
		stream.WriteString(b.block.Text)
		st.blocks = append(st.blocks, b)
	case "content_block_delta":
		b, perr := st.open(ev.Index)
		if perr != nil {
			return perr
		}
		switch d := ev.Delta; d.Type {
		case "text_delta":
			b.text.WriteString(d.Text)
			stream.WriteString(d.Text)
		case "thinking_delta":
			b.text.WriteString(d.Thinking)
		case "signature_delta":
			b.block.Signature += d.Signature
		case "input_json_delta":
			b.input.WriteString(d.PartialJSON)
		}
	case "content_block_stop":
		b, perr := st.open(ev.Index)
		if perr != nil {
			return perr
		}
		b.stopped = true
		switch b.block.Type {
		case "thinking":
			stream.WriteBlock(thinkingBlock(b.text.String(), b.block.Signature))
		case "redacted_thinking":
			stream.WriteBlock(b.raw)
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			st.stopReason = ev.Delta.StopReason
		}
		st.usage.merge(ev.Usage)
	case "message_stop":
		st.stopped = true
	case "error":
		text := apiErrorText(ev.Error)
		var e struct {
			Type string `json:"type"`
		}
		json.Unmarshal(ev.Error, &e)
		return &Error{
			Provider: "anthropic", Said: text, Code: e.Type,
			Message:   "anthropic: stream error: " + text,
			retryable: e.Type == "overloaded_error" || e.Type == "api_error" || e.Type == "rate_limit_error", retryAfter: -1,
		}
	}
	return nil
}

// open is the started, not yet stopped, block at index i.
func (st *anthropicStream) open(i int) (*streamBlock, *Error) {
	if i < 0 || i >= len(st.blocks) || st.blocks[i].stopped {
		return nil, anthropicBad("stream event for block %d, which is not open", i)
	}
	return st.blocks[i], nil
}

func (st *anthropicStream) reply() (Reply, *Error) {
	blocks := make([]anthropicBlock, len(st.blocks))
	raw := make([]json.RawMessage, len(st.blocks))
	for i, b := range st.blocks {
		if !b.stopped {
			return Reply{}, anthropicBad("stream ended with block %d open", i)
		}
		bl := b.block
		switch bl.Type {
		case "text":
			bl.Text = b.text.String()
		case "thinking":
			bl.Thinking = b.text.String()
			raw[i] = thinkingBlock(bl.Thinking, bl.Signature)
		case "tool_use":
			if b.input.Len() > 0 {
				in := json.RawMessage(b.input.String())
				if !json.Valid(in) {
					return Reply{}, anthropicBad("malformed stream: tool_use %s input is not JSON: %s", bl.ID, errorText(in))
				}
				bl.Input = in
			}
		}
		if raw[i] == nil {
			raw[i] = b.raw
		}
		blocks[i] = bl
	}
	if st.stopReason == "" {
		return Reply{}, anthropicBad("stream ended with no stop_reason")
	}
	return assistantReply(blocks, raw, st.stopReason, st.model, st.usage)
}

// thinkingBlock is a thinking block as the API writes it.
func thinkingBlock(thinking, signature string) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"thinking","thinking":`)
	writeJSON(&b, thinking)
	b.WriteString(`,"signature":`)
	writeJSON(&b, signature)
	b.WriteByte('}')
	return b.Bytes()
}
