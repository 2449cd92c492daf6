package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes/hermes/cmd/provider/anthropictest"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

func newAnthropicTest(t *testing.T, url string, cfg Config) Provider {
	t.Helper()
	cfg.Name, cfg.BaseURL = "anthropic", url
	if cfg.Model == "" {
		cfg.Model = "claude-test"
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stored is m as the store writes and reads it back.
func stored(t *testing.T, m sessions.Message) sessions.Message {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := sessions.ParseMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

var weatherTool = json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"The weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`)

func TestAnthropicRequestShape(t *testing.T) {
	var body []byte
	var header http.Header
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		header, path = r.Header.Clone(), r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-1","content":[{"type":"text","text":"sunny"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":100,"cache_creation_input_tokens":5}}`)
	}))
	defer srv.Close()
	p := newAnthropicTest(t, srv.URL, Config{APIKey: "sk-ant", Anthropic: Anthropic{Beta: []string{"a-1", "b-2"}}})
	req := Request{History: transcript(t,
		`{"role":"system","content":"You are terse."}`,
		`{"role":"user","content":"weather in Paris?"}`,
		`{"role":"user","content":[{"type":"text","text":"and Rome"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}`,
		`{"role":"assistant","content":"looking","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]}`,
		`{"role":"tool","tool_call_id":"call_1","content":"18C","is_error":true}`,
		`{"role":"system","content":"a note","hermes_note":true}`,
		`{"role":"tool","tool_call_id":"call_9","content":"late"}`,
		`{"role":"assistant","content":""}`,
		`{"role":"user","content":"and tomorrow?"}`,
	), Tools: []json.RawMessage{weatherTool}, Params: Params{ToolChoice: json.RawMessage(`"required"`), Temperature: json.RawMessage(`0.5`), Stop: json.RawMessage(`"END"`), Seed: json.RawMessage(`7`)}}
	reply, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if path != "/v1/messages" || header.Get("X-Api-Key") != "sk-ant" || header.Get("Anthropic-Version") != "2023-06-01" || header.Get("Anthropic-Beta") != "a-1,b-2" || header.Get("Authorization") != "" {
		t.Errorf("request %s with headers %v", path, header)
	}
	const cc = `,"cache_control":{"type":"ephemeral"}`
	want := `{"model":"claude-test","max_tokens":32000,` +
		`"system":[{"type":"text","text":"You are terse."` + cc + `}],` +
		`"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"weather in Paris?"},{"type":"text","text":"and Rome"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}` + cc + `}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"looking"},{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"18C","is_error":true},{"type":"text","text":"a note"},{"type":"text","text":"result of tool call call_9: late"},{"type":"text","text":"and tomorrow?"` + cc + `}]}],` +
		`"tools":[{"name":"get_weather","description":"The weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}` + cc + `}],` +
		`"tool_choice":{"type":"any"},"temperature":0.5,"stop_sequences":["END"]}`
	if string(body) != want {
		t.Errorf("body:\n got %s\nwant %s", body, want)
	}
	if got := chatLines(reply.Messages); got != `{"role":"assistant","content":"sunny"}`+"\n" {
		t.Errorf("reply %s", got)
	}
	if u := *reply.Usage; u != (Usage{PromptTokens: 115, CompletionTokens: 2, TotalTokens: 117, CacheCreationInputTokens: 5, CacheReadInputTokens: 100}) || reply.Model != "claude-test-1" {
		t.Errorf("usage %+v, model %q", u, reply.Model)
	}
}

func TestAnthropicBearerAndSettings(t *testing.T) {
	var body []byte
	var header http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		header = r.Header.Clone()
		io.WriteString(w, `{"type":"message","content":[],"stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":9}}`)
	}))
	defer srv.Close()
	p := newAnthropicTest(t, srv.URL+"/v1/", Config{Model: "claude-3-5-haiku", APIKey: "tok", Anthropic: Anthropic{Bearer: true, Version: "2099-01-01", Thinking: "adaptive:low", Cache: "1h"}})
	reply, err := p.Complete(context.Background(), Request{History: transcript(t, `{"role":"user","content":"hi"}`), Params: Params{MaxCompletionTokens: json.RawMessage(`77`)}})
	if err != nil {
		t.Fatal(err)
	}
	if header.Get("Authorization") != "Bearer tok" || header.Get("X-Api-Key") != "" || header.Get("Anthropic-Version") != "2099-01-01" {
		t.Errorf("headers %v", header)
	}
	want := `{"model":"claude-3-5-haiku","max_tokens":77,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}]}],"thinking":{"type":"adaptive"},"output_config":{"effort":"low"}}`
	if string(body) != want {
		t.Errorf("body:\n got %s\nwant %s", body, want)
	}
	got, _ := json.Marshal(reply.Messages[0])
	if !strings.HasPrefix(string(got), `{"seq":0,"ts":"","role":"assistant","content":"","stop_reason":"max_tokens","usage":{"id":"`) ||
		!strings.Contains(string(got), `"input":1,"output":9,"provider":"anthropic"`) {
		t.Errorf("reply %s", got)
	}
}

// An anthropic reply's usage is stored with its message: the input as
// the API means it (read afresh), the cache writes by lifetime (5m when
// the API does not split them) and the cache reads apart.
func TestAnthropicUsageRecorded(t *testing.T) {
	for _, c := range []struct{ usage, want string }{
		{`{"input_tokens":3,"output_tokens":9,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000}`,
			`"input":3,"output":9,"cache_read":2000,"cache_write_5m":100,"model":"claude-x","provider":"anthropic"`},
		{`{"input_tokens":3,"output_tokens":9,"cache_creation_input_tokens":100,"cache_creation":{"ephemeral_5m_input_tokens":40,"ephemeral_1h_input_tokens":60}}`,
			`"input":3,"output":9,"cache_write_5m":40,"cache_write_1h":60,"model":"claude-x","provider":"anthropic"`},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Request-Id", "req_42")
			io.WriteString(w, `{"type":"message","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":`+c.usage+`}`)
		}))
		p := newAnthropicTest(t, srv.URL+"/v1/", Config{Model: "claude-x", APIKey: "tok"})
		reply, err := p.Complete(context.Background(), Request{History: transcript(t, `{"role":"user","content":"hi"}`)})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := string(reply.Messages[0].Extra["usage"])
		if !strings.Contains(got, c.want) || !strings.Contains(got, `"request_id":"req_42"`) {
			t.Errorf("usage %s\nwant it to hold %s and the request id", got, c.want)
		}
	}
}

func TestAnthropicConfigChecked(t *testing.T) {
	for _, a := range []Anthropic{{Thinking: "lots"}, {Thinking: "100"}, {Thinking: "adaptive:huge"}, {Cache: "2h"}, {MaxTokens: -1}} {
		_, err := New(Config{Name: "anthropic", Model: "m", Anthropic: a})
		if !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("%+v: %v, want a config error", a, err)
		}
	}
	if _, err := New(Config{Name: "anthropic"}); !errors.Is(err, fsstore.ErrInvalid) {
		t.Errorf("no model: %v", err)
	}
	if _, err := New(Config{Name: "anthropic", Model: "m", BaseURL: "ftp://x"}); !errors.Is(err, fsstore.ErrInvalid) {
		t.Errorf("bad URL: %v", err)
	}
}

// agentLoop runs turns as the turn engine does against p: each turn a
// user message, then the model's calls answered until it answers with
// text, every message stored as the store keeps it. It returns the
// history.
func agentLoop(t *testing.T, p Provider, turns int, stream bool) []sessions.Message {
	t.Helper()
	history := transcript(t, `{"role":"system","content":"You are a careful agent. `+strings.Repeat("Be precise. ", 500)+`"}`)
	for turn := 1; turn <= turns; turn++ {
		history = append(history, stored(t, sessions.Message{Role: "user", Content: sessions.TextContent(fmt.Sprintf("turn %d: check the weather", turn))}))
		for step := 0; ; step++ {
			req := Request{History: Messages(history), Tools: []json.RawMessage{weatherTool}}
			var out bytes.Buffer
			if stream {
				req.Stream = &out
			}
			reply, err := p.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("turn %d step %d: %v", turn, step, err)
			}
			m := stored(t, reply.Messages[0])
			history = append(history, m)
			var calls []ToolCall
			json.Unmarshal(m.ToolCalls, &calls)
			if len(calls) == 0 {
				break
			}
			for _, c := range calls {
				history = append(history, stored(t, sessions.Message{Role: "tool", ToolCallID: c.ID, Content: sessions.TextContent("sunny, for " + c.Function.Arguments)}))
			}
		}
	}
	return history
}

// weatherModel calls get_weather once a user turn, then answers.
func weatherModel(r *anthropictest.Request) []anthropictest.Block {
	last := r.Messages[len(r.Messages)-1]
	if last.Content[0].Type == "tool_result" {
		return []anthropictest.Block{{Type: "text", Text: "it is sunny"}}
	}
	n := len(r.Messages)
	return []anthropictest.Block{
		{Type: "text", Text: "let me look"},
		{Type: "tool_use", ID: fmt.Sprintf("toolu_%d", n), Name: "get_weather", Input: json.RawMessage(`{"city":"Paris","day":` + fmt.Sprint(n) + `}`)},
	}
}

// A 20-turn tool-using session with thinking on: the fake accepts every
// request, and from the second turn on at least 90% of the input tokens
// are cache reads.
func TestAnthropicCachedToolSession(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			fake := &anthropictest.Server{Reply: weatherModel, SplitJSON: 3}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			p := newAnthropicTest(t, srv.URL, Config{Anthropic: Anthropic{Thinking: "2048"}})
			history := agentLoop(t, p, 20, stream)
			reqs := fake.Requests()
			if len(reqs) != 40 {
				t.Fatalf("%d requests, want 40", len(reqs))
			}
			for i, r := range reqs {
				u := r.Usage
				all := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
				if i >= 2 && u.CacheReadInputTokens*10 < all*9 {
					t.Errorf("request %d: %d of %d input tokens read from the cache", i+1, u.CacheReadInputTokens, all)
				}
			}
			// Each assistant message kept its thinking as it came.
			for _, m := range history {
				if m.Role == "assistant" && !bytes.Contains(m.Extra[ThinkingBlocks], []byte(`"signature":`)) {
					t.Fatalf("assistant message without its thinking: %s", m.ChatJSON())
				}
			}
		})
	}
}

// The fake refuses a thinking block that was changed, so the test above
// proves the provider sent them unchanged.
func TestAnthropicFakeRefusesChangedThinking(t *testing.T) {
	fake := &anthropictest.Server{Reply: weatherModel}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	p := newAnthropicTest(t, srv.URL, Config{Anthropic: Anthropic{Thinking: "2048"}})
	history := transcript(t, `{"role":"user","content":"weather?"}`)
	reply, err := p.Complete(context.Background(), Request{History: Messages(history), Tools: []json.RawMessage{weatherTool}})
	if err != nil {
		t.Fatal(err)
	}
	m := stored(t, reply.Messages[0])
	var calls []ToolCall
	json.Unmarshal(m.ToolCalls, &calls)
	result := sessions.Message{Role: "tool", ToolCallID: calls[0].ID, Content: sessions.TextContent("sunny")}
	changed := m
	changed.Extra = map[string]json.RawMessage{ThinkingBlocks: bytes.Replace(m.Extra[ThinkingBlocks], []byte("thinking 1"), []byte("thinking 2"), 1)}
	dropped := m
	dropped.Extra = nil
	for name, a := range map[string]sessions.Message{"changed": changed, "dropped": dropped} {
		_, err := p.Complete(context.Background(), Request{History: Messages(append(history[:1:1], a, result)), Tools: []json.RawMessage{weatherTool}})
		var perr *Error
		if !errors.As(err, &perr) || perr.StatusCode != 400 || perr.Code != "invalid_request_error" {
			t.Errorf("%s thinking: %v, want a 400", name, err)
		}
	}
	if _, err := p.Complete(context.Background(), Request{History: Messages(append(history[:1:1], m, result)), Tools: []json.RawMessage{weatherTool}}); err != nil {
		t.Errorf("unchanged thinking: %v", err)
	}
}

// A redacted_thinking block goes back as it came.
func TestAnthropicRedactedThinking(t *testing.T) {
	fake := &anthropictest.Server{}
	fake.Redact("opaque==")
	srv := httptest.NewServer(fake)
	defer srv.Close()
	p := newAnthropicTest(t, srv.URL, Config{})
	history := transcript(t,
		`{"role":"user","content":"hi"}`,
		`{"role":"assistant","content":"hello","thinking_blocks":[{"type":"redacted_thinking","data":"opaque=="}]}`,
		`{"role":"user","content":"again"}`)
	if _, err := p.Complete(context.Background(), Request{History: history}); err != nil {
		t.Fatal(err)
	}
	if body := fake.Requests()[0].Body; !bytes.Contains(body, []byte(`{"role":"assistant","content":[{"type":"redacted_thinking","data":"opaque=="},{"type":"text","text":"hello"}`)) {
		t.Errorf("body %s", body)
	}
}

// A tool input streamed one byte an input_json_delta is assembled whole.
func TestAnthropicStreamSplitInput(t *testing.T) {
	fake := &anthropictest.Server{SplitJSON: 1, Reply: func(*anthropictest.Request) []anthropictest.Block {
		return []anthropictest.Block{{Type: "tool_use", ID: "toolu_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Zürich \"X\"","n":[1,2]}`)}}
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	p := newAnthropicTest(t, srv.URL, Config{})
	var out bytes.Buffer
	reply, err := p.Complete(context.Background(), Request{History: transcript(t, `{"role":"user","content":"hi"}`), Tools: []json.RawMessage{weatherTool}, Stream: &out})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Zürich \\\"X\\\"\",\"n\":[1,2]}"}}]}` + "\n"
	if got := chatLines(reply.Messages); got != want {
		t.Errorf("reply\n got %s\nwant %s", got, want)
	}
}

const streamHead = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hel\"}}\n\n"

// A stream that breaks off, or ends without its stop reason, or with an
// error event, fails the call: no half-made reply.
func TestAnthropicStreamBroken(t *testing.T) {
	fastRetries(t)
	tail := "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	for name, c := range map[string]struct {
		body, want string
		written    bool
	}{
		"cut mid-block":      {streamHead, "stream ended before message_stop", true},
		"no message_delta":   {streamHead + tail + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", "no stop_reason", true},
		"block never closed": {streamHead + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", "block 0 open", true},
		"error event":        {"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", "stream error: Overloaded", false},
		"delta before start": {"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n", "not open", false},
	} {
		t.Run(name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			p := newAnthropicTest(t, srv.URL, Config{MaxRetries: 2})
			var out bytes.Buffer
			reply, err := p.Complete(context.Background(), Request{History: transcript(t, `{"role":"user","content":"hi"}`), Stream: &out})
			if err == nil || !strings.Contains(err.Error(), c.want) || len(reply.Messages) != 0 {
				t.Fatalf("err %v, reply %v; want %q", err, reply.Messages, c.want)
			}
			// Once text was shown the call is not retried; an error event
			// before any is.
			want := int32(1)
			if name == "error event" {
				want = 3
			}
			if n.Load() != want || (out.Len() > 0) != c.written {
				t.Errorf("%d attempts, wrote %q", n.Load(), out.String())
			}
		})
	}
}

func TestAnthropicRetries(t *testing.T) {
	fastRetries(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		case 2:
			w.WriteHeader(429)
			io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
		case 3:
			io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"fine"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
		default:
			w.WriteHeader(400)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: bad"}}`)
		}
	}))
	defer srv.Close()
	p := newAnthropicTest(t, srv.URL, Config{})
	hist := Request{History: transcript(t, `{"role":"user","content":"hi"}`)}
	if reply, err := p.Complete(context.Background(), hist); err != nil || reply.Messages[0].Text() != "fine" {
		t.Fatalf("%v %v", reply, err)
	}
	_, err := p.Complete(context.Background(), hist)
	var perr *Error
	if !errors.As(err, &perr) || perr.Error() != "anthropic: HTTP 400: messages: bad" || perr.Said != "messages: bad" || perr.Code != "invalid_request_error" || perr.Attempts != 1 {
		t.Errorf("%#v", err)
	}
}

// A call that fails after the API reported its usage (message_start came,
// then the stream broke) is recorded, marked failed, on the error: the
// tokens were billed. An attempt that failed so and was retried is on the
// reply that followed.
func TestAnthropicFailedCallUsage(t *testing.T) {
	fastRetries(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Request-Id", "req_cut")
		io.WriteString(w, streamHead)
	}))
	defer srv.Close()
	p := newAnthropicTest(t, srv.URL, Config{MaxRetries: 2})
	var out bytes.Buffer
	_, err := p.Complete(context.Background(), Request{History: transcript(t, `{"role":"user","content":"hi"}`), Stream: &out})
	var perr *Error
	if !errors.As(err, &perr) || len(perr.Failed) != 1 {
		t.Fatalf("err %#v: want one failed call on it", err)
	}
	c := perr.Failed[0]
	if !c.Failed || c.Input != 3 || c.Output != 1 || c.Model != "m" || c.RequestID != "req_cut" || c.Provider != "anthropic" || c.ID == "" {
		t.Errorf("failed call %+v", c)
	}

	var n atomic.Int32
	retried := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":7,\"output_tokens\":0}}}\n\n"+
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"fine"}],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":2}}`)
	}))
	defer retried.Close()
	p = newAnthropicTest(t, retried.URL, Config{MaxRetries: 2})
	reply, err := p.Complete(context.Background(), Request{History: transcript(t, `{"role":"user","content":"hi"}`), Stream: &out})
	if err != nil || len(reply.Failed) != 1 || !reply.Failed[0].Failed || reply.Failed[0].Input != 7 {
		t.Errorf("reply %+v, err %v: want the first attempt's call, failed, on it", reply.Failed, err)
	}
}
