package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/hermes/hermes/fsstore/usage"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes/hermes/fsstore/sessions"
)

const (
	defaultBaseURL    = "https://api.openai.com/v1"
	defaultMaxRetries = 3
)

// Retry timing, variables so tests can shrink them.
var (
	retryBaseDelay = 500 * time.Millisecond // the first retry's wait; it doubles for each next one
	retryMaxDelay  = 30 * time.Second       // no wait is longer, whatever Retry-After says
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// openAI speaks the chat completions API with net/http rather than a
// client library: it needs one endpoint, and a client library would pull a
// large dependency tree into hermes for it.
type openAI struct {
	url        string
	model      string
	apiKey     string
	keyFrom    string // the variable apiKey came from (Config.KeyFrom)
	timeout    time.Duration
	maxRetries int
	client     *http.Client
	// replayReasoning: assistant messages carry their reasoning_content
	// (Config.ReasoningContent resolved for the base URL).
	replayReasoning bool
}

func newOpenAI(cfg Config, timeout time.Duration) (Provider, error) {
	if cfg.Model == "" {
		return nil, modelRequired("openai")
	}
	base := cfg.BaseURL
	if base == "" {
		base = defaultBaseURL
	}
	base = strings.TrimRight(base, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, configErrorf("openai provider: base URL %q is not an http or https URL", cfg.BaseURL)
	}
	return &openAI{
		url:             base + "/chat/completions",
		model:           cfg.Model,
		apiKey:          cfg.APIKey,
		keyFrom:         cfg.KeyFrom,
		timeout:         timeout,
		maxRetries:      retries(cfg.MaxRetries),
		client:          newClient(cfg.MaxIdlePerHost),
		replayReasoning: replaysReasoning(cfg.ReasoningContent, base),
	}, nil
}

func (p *openAI) Name() string { return "openai" }

func (p *openAI) Complete(ctx context.Context, req Request) (Reply, error) {
	ctx, cancel := withTimeout(ctx, p.timeout)
	defer cancel()
	model := req.Model
	if model == "" {
		model = p.model
	}
	body, err := requestBody(model, req, p.replayReasoning)
	if err != nil {
		return Reply{}, &Error{Provider: "openai", Message: "openai: reading the transcript: " + oneLine(err.Error()), Err: err}
	}
	stream := &streamWriter{w: req.Stream}
	return withRetries(ctx, "openai", p.timeout, p.maxRetries, stream, func() (Reply, *Error) {
		return p.attempt(ctx, body, stream)
	})
}

// withRetries makes attempts until one succeeds, or fails in a way no
// retry helps, or the retries are spent, or text reached the stream,
// waiting retryDelay between them; ctx bounds the whole.
func withRetries(ctx context.Context, name string, timeout time.Duration, maxRetries int, stream *streamWriter, attempt func() (Reply, *Error)) (Reply, error) {
	var failed []usage.Call // of the attempts that failed after the provider counted them
	for n := 1; ; n++ {
		reply, err := attempt()
		if err == nil {
			reply.Failed = failed
			return reply, nil
		}
		failed = append(failed, err.Failed...)
		if ctx.Err() != nil {
			err = contextError(ctx, name, name, timeout)
		}
		err.Attempts, err.Failed = n, failed
		if ctx.Err() != nil || !err.retryable || n > maxRetries || stream.wrote {
			return Reply{}, err
		}
		t := time.NewTimer(retryDelay(n, err.retryAfter))
		select {
		case <-ctx.Done():
			t.Stop()
			err := contextError(ctx, name, name, timeout)
			err.Attempts, err.Failed = n, failed
			return Reply{}, err
		case <-t.C:
		}
	}
}

// retries resolves Config.MaxRetries: 0 is the default, negative none.
func retries(n int) int {
	switch {
	case n == 0:
		return defaultMaxRetries
	case n < 0:
		return 0
	}
	return n
}

// retryDelay is the wait before retry n (1, 2, …): Retry-After when the
// server sent one, else retryBaseDelay doubled for each earlier retry;
// never more than retryMaxDelay.
func retryDelay(n int, retryAfter time.Duration) time.Duration {
	d := retryAfter
	if d < 0 {
		d = retryBaseDelay
		for i := 1; i < n && d < retryMaxDelay; i++ {
			d *= 2
		}
	}
	return min(d, retryMaxDelay)
}

// parseRetryAfter reads a Retry-After header: delay-seconds, or an HTTP
// date. It returns a negative duration when the header is absent or bad.
func parseRetryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return -1
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil {
		if s < 0 {
			return -1
		}
		if s > int64(retryMaxDelay/time.Second) {
			return retryMaxDelay
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	return -1
}

// requestBody is the chat completions request: each message of
// req.History as writeMessage cleans it (content parts reach the server
// unchanged), the tools, when there are any, and the parameters that are
// set, as they are.
func requestBody(model string, req Request, replayReasoning bool) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"model":`)
	m, _ := json.Marshal(model) // a string always encodes
	b.Write(m)
	b.WriteString(`,"messages":[`)
	first := true
	err := req.History.Each(func(msg sessions.Message) error {
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeMessage(&b, msg, replayReasoning)
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.WriteByte(']')
	if len(req.Tools) > 0 {
		b.WriteString(`,"tools":[`)
		for i, t := range req.Tools {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(t)
		}
		b.WriteByte(']')
	}
	req.Params.fields(&b)
	if req.Stream != nil {
		b.WriteString(`,"stream":true,"stream_options":{"include_usage":true}`)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// attempt sends one request. Its error says whether a retry may help.
func (p *openAI) attempt(ctx context.Context, body []byte, stream *streamWriter) (Reply, *Error) {
	start := time.Now()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return Reply{}, &Error{Provider: "openai", Message: "openai: " + err.Error(), Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	if stream.w != nil {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if p.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	resp, err := p.client.Do(hreq)
	if err != nil {
		// A connection refused or reset, a DNS failure: worth another try.
		return Reply{}, &Error{Provider: "openai", Message: "openai: " + oneLine(err.Error()), Err: err, retryable: true, retryAfter: -1}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		text := errorText(data)
		return Reply{}, &Error{
			Provider:   "openai",
			StatusCode: resp.StatusCode,
			Said:       text,
			Code:       errorCode(data),
			Message:    fmt.Sprintf("openai: HTTP %d: %s%s", resp.StatusCode, text, keyHint(resp.StatusCode, p.keyFrom, "OPENAI_API_KEY")),
			retryable:  resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
			retryAfter: parseRetryAfter(resp.Header.Get("Retry-After")),
		}
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var reply Reply
	var perr *Error
	if stream.w != nil && mediaType != "application/json" {
		reply, perr = readStream(resp.Body, stream)
	} else {
		// Not streaming, or a server that ignored "stream": one JSON document.
		reply, perr = readResponse(resp.Body)
		if perr == nil && stream.w != nil {
			stream.WriteString(reply.Messages[0].Text())
		}
	}
	if perr == nil && reply.Usage != nil {
		c := reply.Usage.call()
		c.Model, c.RequestID = reply.Model, resp.Header.Get("X-Request-Id")
		record(reply.Messages, c, "openai", start)
	}
	return reply, perr
}

// errorText is the message of an error response: error.message (or the
// other shapes servers use), else the body itself cut to 200 bytes.
func errorText(body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil {
		if msg := apiErrorText(e.Error); msg != "" {
			return msg
		}
		if e.Message != "" {
			return oneLine(e.Message)
		}
		var detail string
		if json.Unmarshal(e.Detail, &detail) == nil && detail != "" {
			return oneLine(detail)
		}
	}
	s := oneLine(string(body))
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	if s == "" {
		s = "empty response body"
	}
	return s
}

// errorCode is the error.code of an error response when it is a string,
// else "".
func errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	var code string
	if json.Unmarshal(body, &e) != nil || json.Unmarshal(e.Error.Code, &code) != nil {
		return ""
	}
	return code
}

// apiErrorText reads an "error" value: {"message": …} or a bare string.
func apiErrorText(raw json.RawMessage) string {
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return oneLine(obj.Message)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return oneLine(s)
	}
	return ""
}

func badResponse(format string, args ...any) *Error {
	return &Error{Provider: "openai", Message: "openai: " + fmt.Sprintf(format, args...), retryAfter: -1}
}

// readResponse parses a non-streaming response.
func readResponse(body io.Reader) (Reply, *Error) {
	var r struct {
		Choices []struct {
			Message struct {
				Content          json.RawMessage `json:"content"`
				ToolCalls        json.RawMessage `json:"tool_calls"`
				Refusal          *string         `json:"refusal"`
				ReasoningContent *string         `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
		Model string          `json:"model"`
		Usage *Usage          `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	data, err := io.ReadAll(body)
	if err != nil {
		// The status was fine but the body broke off: a connection error.
		return Reply{}, &Error{Provider: "openai", Message: "openai: reading response: " + oneLine(err.Error()), Err: err, retryable: true, retryAfter: -1}
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return Reply{}, badResponse("malformed response: %v: %s", err, errorText(data))
	}
	if msg := apiErrorText(r.Error); msg != "" {
		return Reply{}, badResponse("%s", msg)
	}
	if len(r.Choices) == 0 {
		return Reply{}, badResponse("response has no choices")
	}
	c := r.Choices[0].Message
	m, perr := assistantMessage(c.Content, c.ToolCalls, c.Refusal, c.ReasoningContent)
	if perr != nil {
		return Reply{}, perr
	}
	return Reply{Messages: []sessions.Message{m}, Usage: r.Usage, Model: r.Model}, nil
}

// assistantMessage builds the reply message from the fields a request may
// carry back, and refusal and reasoning_content, which the transcript
// keeps (writeMessage decides what a later request sends). Other fields
// only responses have (annotations, audio) are dropped.
func assistantMessage(content, toolCalls json.RawMessage, refusal, reasoning *string) (sessions.Message, *Error) {
	m := sessions.Message{Role: "assistant"}
	if !isNull(toolCalls) && string(toolCalls) != "[]" {
		if toolCalls[0] != '[' {
			return m, badResponse("malformed response: tool_calls is not a list")
		}
		m.ToolCalls = compact(toolCalls)
	}
	switch {
	case !isNull(content):
		if content[0] != '"' && content[0] != '[' {
			return m, badResponse("malformed response: content is not a string or a list of parts")
		}
		m.Content = compact(content)
	case m.ToolCalls != nil:
		m.Content = json.RawMessage("null")
	default:
		// The API refuses an assistant message with neither content nor tool calls.
		m.Content = sessions.TextContent("")
	}
	extra := func(key, text string) {
		if m.Extra == nil {
			m.Extra = map[string]json.RawMessage{}
		}
		m.Extra[key] = sessions.TextContent(text)
	}
	if refusal != nil && *refusal != "" {
		extra("refusal", *refusal)
	}
	if reasoning != nil && *reasoning != "" {
		extra("reasoning_content", *reasoning)
	}
	// The store refuses such text as the caller's bad input; from the
	// model it is the provider's failure.
	if field, esc := m.LoneSurrogate(); field != "" {
		return m, badResponse("malformed response: %s holds %s, a lone surrogate escape (half of a UTF-16 pair), which is not Unicode", field, esc)
	}
	return m, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw // it came from a decoded document, so it is valid
	}
	return b.Bytes()
}

// streamChunk is one server-sent event of a streaming response.
type streamChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          *string `json:"content"`
			Refusal          *string `json:"refusal"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Model string          `json:"model"`
	Usage *Usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamState assembles the reply from its deltas.
type streamState struct {
	content   strings.Builder
	refusal   strings.Builder
	reasoning strings.Builder
	calls     map[int]*ToolCall
	usage     *Usage
	model     string
	finished  bool // a finish_reason was seen
	done      bool // data: [DONE] was seen
}

// readStream reads server-sent events until data: [DONE], writing content
// deltas to stream as they come.
func readStream(body io.Reader, stream *streamWriter) (Reply, *Error) {
	st := &streamState{calls: map[int]*ToolCall{}}
	r := bufio.NewReader(body)
	var event []byte // data lines of the event being read
	pending := false
	dispatch := func() *Error {
		if !pending {
			return nil
		}
		data := event
		event, pending = event[:0], false
		return st.event(data, stream)
	}
	for !st.done {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			var perr *Error
			switch {
			case len(line) == 0:
				perr = dispatch()
			case line[0] == ':': // a comment, used as keep-alive
			default:
				field, value, _ := bytes.Cut(line, []byte(":"))
				value = bytes.TrimPrefix(value, []byte(" "))
				if string(field) != "data" {
					break
				}
				if pending {
					event = append(append(event, '\n'), value...)
					break
				}
				event, pending = append(event[:0], value...), true
				// Servers that leave out the blank line between events
				// still send one whole JSON value a data line.
				if string(value) == "[DONE]" || json.Valid(value) {
					perr = dispatch()
				}
			}
			if perr != nil {
				return Reply{}, perr
			}
		}
		if err == io.EOF {
			if perr := dispatch(); perr != nil {
				return Reply{}, perr
			}
			break
		}
		if err != nil {
			return Reply{}, &Error{Provider: "openai", Message: "openai: reading stream: " + oneLine(err.Error()), Err: err, retryable: true, retryAfter: -1}
		}
	}
	if !st.done && !st.finished {
		return Reply{}, &Error{Provider: "openai", Message: "openai: stream ended before data: [DONE]", Err: io.ErrUnexpectedEOF, retryable: true, retryAfter: -1}
	}
	return st.reply()
}

// event handles the data of one event.
func (st *streamState) event(data []byte, stream *streamWriter) *Error {
	if string(data) == "[DONE]" {
		st.done = true
		return nil
	}
	var c streamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return badResponse("malformed stream event: %v: %s", err, errorText(data))
	}
	if msg := apiErrorText(c.Error); msg != "" {
		return badResponse("%s", msg)
	}
	if c.Usage != nil {
		st.usage = c.Usage
	}
	if c.Model != "" {
		st.model = c.Model
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // only one choice is asked for
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			st.finished = true
		}
		d := ch.Delta
		if d.Content != nil {
			st.content.WriteString(*d.Content)
			stream.WriteString(*d.Content)
		}
		if d.Refusal != nil {
			st.refusal.WriteString(*d.Refusal)
		}
		if d.ReasoningContent != nil {
			st.reasoning.WriteString(*d.ReasoningContent)
		}
		for i, tc := range d.ToolCalls {
			index := i
			if tc.Index != nil {
				index = *tc.Index
			}
			call := st.calls[index]
			if call == nil {
				call = &ToolCall{}
				st.calls[index] = call
			}
			// An id and a type come whole (some servers repeat them in
			// every delta); a name and the arguments come in pieces.
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Type != "" {
				call.Type = tc.Type
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
	}
	return nil
}

func (st *streamState) reply() (Reply, *Error) {
	var toolCalls json.RawMessage
	if len(st.calls) > 0 {
		indexes := make([]int, 0, len(st.calls))
		for i := range st.calls {
			indexes = append(indexes, i)
		}
		sort.Ints(indexes)
		calls := make([]*ToolCall, 0, len(indexes))
		for _, i := range indexes {
			c := st.calls[i]
			if c.Type == "" {
				c.Type = "function"
			}
			calls = append(calls, c)
		}
		var b bytes.Buffer
		writeJSON(&b, calls)
		toolCalls = b.Bytes()
	}
	var content json.RawMessage
	if st.content.Len() > 0 {
		content = sessions.TextContent(st.content.String())
	}
	refusal, reasoning := st.refusal.String(), st.reasoning.String()
	m, err := assistantMessage(content, toolCalls, &refusal, &reasoning)
	if err != nil {
		return Reply{}, err
	}
	return Reply{Messages: []sessions.Message{m}, Usage: st.usage, Model: st.model}, nil
}
