//go:build sdk

package gateway

import (
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

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/cmd/provider/anthropictest"
	"github.com/hermes/hermes/fsstore/usage"
)

// The tests in this file drive the gateway's Messages API route with
// anthropic-sdk-go, Anthropic's official Go client, so that what is sent
// is what a real client sends and the answers must parse as it parses
// them.

// anthropicClient is an anthropic-sdk-go client of e's gateway that never
// retries.
func anthropicClient(e *testEnv, opts ...option.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]option.RequestOption{
		option.WithBaseURL(e.ts.URL),
		option.WithAPIKey("unused"),
		option.WithHTTPClient(e.ts.Client()),
		option.WithMaxRetries(0),
	}, opts...)...)
}

// anthropicSessionOf is a request option that keeps the session the
// gateway names in its answer.
func anthropicSessionOf(sid *string) option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err == nil {
			*sid = resp.Header.Get(SessionHeader)
		}
		return resp, err
	})
}

var messagesClientTool = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "client_fn", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}}

func TestAnthropicSDK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	send := func(e *testEnv, stream bool, sid *string, tools []anthropic.ToolUnionParam, msgs ...anthropic.MessageParam) *anthropic.Message {
		t.Helper()
		client := anthropicClient(e)
		params := anthropic.MessageNewParams{Model: "echo", MaxTokens: 1024, Messages: msgs, Tools: tools,
			System: []anthropic.TextBlockParam{{Text: "Be brief.", CacheControl: anthropic.NewCacheControlEphemeralParam()}}}
		if !stream {
			m, err := client.Messages.New(ctx, params, anthropicSessionOf(sid))
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		s := client.Messages.NewStreaming(ctx, params, anthropicSessionOf(sid))
		defer s.Close()
		m := &anthropic.Message{}
		for s.Next() {
			if err := m.Accumulate(s.Current()); err != nil {
				t.Fatalf("event %s: %v", s.Current().RawJSON(), err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "", true: " streamed"}[stream]

		t.Run("text"+name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			var sid string
			m := send(e, stream, &sid, nil, anthropic.NewUserMessage(anthropic.NewTextBlock("hi")))
			if len(m.Content) != 1 || m.Content[0].Type != "text" || m.Content[0].Text != echoText(2, "hi") ||
				m.StopReason != anthropic.StopReasonEndTurn || !strings.HasPrefix(m.ID, "msg_") || m.Role != "assistant" || sid == "" {
				t.Fatalf("message %s, session %q", m.RawJSON(), sid)
			}
			// The system prompt is stored as the session's first message,
			// without its cache_control.
			msgs := messages(t, e.sessions, sid)
			if got := dump(msgs); !strings.Contains(got, `"role":"system","content":[{"type":"text","text":"Be brief."}]}`) {
				t.Errorf("transcript %s", got)
			}
		})

		// The model calls the client's tool; the client runs it and sends
		// the result with its whole conversation, which continues the
		// same session, found by its history.
		t.Run("tool round trip"+name, func(t *testing.T) {
			e := newTestEnv(t, func(o *Options) { o.Provider = callsOrAnswers("client_fn") })
			var sid, next string
			user := anthropic.NewUserMessage(anthropic.NewTextBlock("go"))
			m := send(e, stream, &sid, messagesClientTool, user)
			if len(m.Content) != 1 || m.Content[0].Type != "tool_use" || m.Content[0].ID != "call_1" || m.Content[0].Name != "client_fn" ||
				string(m.Content[0].Input) != "{}" || m.StopReason != anthropic.StopReasonToolUse {
				t.Fatalf("message %s", m.RawJSON())
			}
			m2 := send(e, stream, &next, messagesClientTool, user, m.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock("call_1", "7", false)))
			if len(m2.Content) != 1 || m2.Content[0].Text != "the answer is 7" || m2.StopReason != anthropic.StopReasonEndTurn {
				t.Fatalf("message %s", m2.RawJSON())
			}
			if next != sid {
				t.Errorf("the result went to session %s, the call was in %s", next, sid)
			}
			if got := roles(messages(t, e.sessions, sid)); got != "system user assistant tool assistant" {
				t.Errorf("roles %s", got)
			}
		})
	}

	t.Run("error", func(t *testing.T) {
		e := newTestEnv(t, func(o *Options) { o.Provider = callsOrAnswers("client_fn") })
		client := anthropicClient(e)
		_, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "echo", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("go"))}})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.RawJSON(), `"type":"invalid_request_error"`) ||
			!strings.Contains(apiErr.RawJSON(), "client_fn was not offered") {
			t.Fatalf("%v", err)
		}
	})

	t.Run("count tokens", func(t *testing.T) {
		e := newTestEnv(t, nil)
		client := anthropicClient(e)
		n, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "echo", Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("word ", 300)))}})
		if err != nil {
			t.Fatal(err)
		}
		// 300 words are at least 300 tokens: the estimate errs high.
		if n.InputTokens < 300 {
			t.Errorf("%d tokens", n.InputTokens)
		}
		if got := len(sessionsByKey(t, e.sessions, "")); got != 0 {
			t.Errorf("count_tokens made %d sessions", got)
		}
	})
}

// Errors on the Messages API's routes have its shape, also those the
// router and the key check answer.
func TestMessagesErrorShape(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.APIKey = "sekret" })
	for _, c := range []struct {
		path, typ string
		header    map[string]string
		status    int
	}{
		{"/v1/messages", "authentication_error", map[string]string{"X-Api-Key": "wrong"}, 401},
		{"/v1/messages/nope", "not_found_error", map[string]string{"X-Api-Key": "sekret"}, 404},
		{"/v1/messages", "invalid_request_error", map[string]string{"Authorization": "Bearer sekret"}, 400},
	} {
		resp, body := e.do("POST", c.path, `{"model":"echo","max_tokens":5,"messages":[]}`, c.header)
		if resp.StatusCode != c.status || !strings.HasPrefix(string(body), `{"type":"error","error":{"type":"`+c.typ+`","message":`) {
			t.Errorf("%s %v: %d %s", c.path, c.header, resp.StatusCode, body)
		}
	}
	resp, body := e.do("POST", "/v1/messages", `{"model":"echo","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"X-Api-Key": "sekret"})
	mustStatus(t, resp, body, 200)
	resp, body = e.do("GET", "/v1/models", nil, map[string]string{"X-Api-Key": "sekret", "Anthropic-Version": "2023-06-01"})
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"type":"model"`) || !strings.Contains(string(body), `"has_more":false`) {
		t.Errorf("models: %d %s", resp.StatusCode, body)
	}
}

// Through the gateway to an anthropic upstream with thinking on (the
// strict fake): a client's tool round trip, streamed, then a second
// turn; the upstream accepts every history (each thinking block sent back
// as it came), and the conversation is one session.
func TestMessagesOnAnthropicUpstream(t *testing.T) {
	t.Parallel()
	fake := &anthropictest.Server{SplitJSON: 1, Reply: func(r *anthropictest.Request) []anthropictest.Block {
		last := r.Messages[len(r.Messages)-1].Content
		if last[0].Type == "tool_result" {
			return []anthropictest.Block{{Type: "text", Text: "done: " + r.LastText()}}
		}
		return []anthropictest.Block{{Type: "text", Text: "calling"}, {Type: "tool_use", ID: fmt.Sprintf("toolu_%d", len(r.Messages)), Name: "client_fn", Input: json.RawMessage(`{"q":"x"}`)}}
	}}
	up := httptest.NewServer(fake)
	defer up.Close()
	prov, err := provider.New(provider.Config{Name: "anthropic", BaseURL: up.URL, Model: "claude-test", Anthropic: provider.Anthropic{Thinking: "2048"}})
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(o *Options) { o.Provider = prov })
	client := anthropicClient(e)
	ctx := context.Background()
	var history []anthropic.MessageParam
	var sids []string
	turn := func(msg anthropic.MessageParam) *anthropic.Message {
		t.Helper()
		history = append(history, msg)
		var sid string
		s := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 4096, Messages: history, Tools: messagesClientTool}, anthropicSessionOf(&sid))
		defer s.Close()
		m := &anthropic.Message{}
		for s.Next() {
			if err := m.Accumulate(s.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		history = append(history, m.ToParam())
		sids = append(sids, sid)
		return m
	}
	for i := range 2 {
		m := turn(anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("turn %d", i))))
		// Streamed, each block in its place as it came: the thinking
		// first (a client that reads the last block for the answer, as
		// claude -p does, must find the text after it), then the text,
		// then the call.
		if len(m.Content) != 3 || m.Content[0].Type != "thinking" || m.Content[0].Signature == "" || m.Content[1].Text != "calling" || m.Content[2].Type != "tool_use" || string(m.Content[2].Input) != `{"q":"x"}` {
			t.Fatalf("message %s", m.RawJSON())
		}
		m = turn(anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[2].ID, "result", false)))
		if last := m.Content[len(m.Content)-1]; last.Text != "done: result" {
			t.Fatalf("message %s", m.RawJSON())
		}
		// The provider's cache counts reach the client: this request read
		// what the one before wrote.
		if m.Usage.CacheReadInputTokens == 0 {
			t.Errorf("usage %s", m.Usage.RawJSON())
		}
	}
	for _, r := range fake.Requests() {
		if r.Status != 200 {
			t.Errorf("the upstream refused a request: %s", r.Error)
		}
	}
	for _, sid := range sids {
		if sid != sids[0] {
			t.Errorf("sessions %v: the conversation was split", sids)
		}
	}
	if got := roles(messages(t, e.sessions, sids[0])); got != "user assistant tool assistant user assistant tool assistant" {
		t.Errorf("roles %s", got)
	}
}

// Claude Code names its session in X-Claude-Code-Session-Id: the requests
// that carry one go on in its session whatever became of the history the
// client re-sends (its compaction replaces it with a summary), as a
// client's thread does on the Responses API.
func TestMessagesClaudeCodeSession(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	send := func(thread, text string) string {
		t.Helper()
		h := map[string]string{}
		if thread != "" {
			h["X-Claude-Code-Session-Id"] = thread
		}
		resp, body := e.do("POST", "/v1/messages?beta=true", `{"model":"echo","max_tokens":5,"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"`+text+`"}]}`, h)
		mustStatus(t, resp, body, 200)
		return resp.Header.Get(SessionHeader)
	}
	first := send("6f1c2a9e-0b7d-4c55-9a3e-2d8f1b7c4e10", "one")
	if got := send("6f1c2a9e-0b7d-4c55-9a3e-2d8f1b7c4e10", "a summary of the conversation so far"); got != first {
		t.Errorf("the thread's compacted history went to session %s, its session is %s", got, first)
	}
	if got := roles(messages(t, e.sessions, first)); got != "user assistant user assistant" {
		t.Errorf("roles %s", got)
	}
	if got := send("", "a summary of the conversation so far"); got == first {
		t.Errorf("a request naming no thread went to the thread's session")
	}
}

// Claude Code's side requests (a title, a quota check: no tools offered,
// its session named) are answered and stored nowhere: the conversation's
// session holds its turns only.
func TestMessagesSideRequests(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	h := map[string]string{"X-Claude-Code-Session-Id": "0b7d6f1c-2a9e-4c55-9a3e-2d8f1b7c4e10"}
	for _, stream := range []string{"false", "true"} {
		resp, body := e.do("POST", "/v1/messages?beta=true", `{"model":"echo","max_tokens":1,"stream":`+stream+`,"messages":[{"role":"user","content":"quota"}]}`, h)
		mustStatus(t, resp, body, 200)
		if !strings.Contains(string(body), echoText(1, "quota")) || resp.Header.Get(SessionHeader) != "" {
			t.Errorf("side request answered %s, session %q", body, resp.Header.Get(SessionHeader))
		}
	}
	if got := len(sessionsByKey(t, e.sessions, "")); got != 0 {
		t.Fatalf("side requests made %d sessions", got)
	}
	resp, body := e.do("POST", "/v1/messages?beta=true", `{"model":"echo","max_tokens":9,"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`, h)
	mustStatus(t, resp, body, 200)
	if got := roles(messages(t, e.sessions, resp.Header.Get(SessionHeader))); got != "user assistant" {
		t.Errorf("the conversation's session holds %s", got)
	}
}

// An anthropic upstream's stream that breaks off mid-block, or ends with
// no stop reason: the client's stream ends with an error event, and the
// transcript holds the user's message and nothing half-made (hermes's
// note of the failed call's usage).
func TestMessagesUpstreamStreamBroken(t *testing.T) {
	t.Parallel()
	head := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hel\"}}\n\n"
	stop := "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for name, body := range map[string]string{"cut mid-block": head, "no message_delta": head + stop} {
		t.Run(name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, body)
			}))
			defer up.Close()
			prov, err := provider.New(provider.Config{Name: "anthropic", BaseURL: up.URL, Model: "claude-test", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			e := newTestEnv(t, func(o *Options) { o.Provider = prov })
			var sid string
			client := anthropicClient(e)
			s := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 10,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}, anthropicSessionOf(&sid))
			defer s.Close()
			for s.Next() {
			}
			// The error event, after the 200 that began the stream.
			if err := s.Err(); err == nil || !strings.Contains(err.Error(), `{"type":"error","error":{"type":"api_error","message":"anthropic: stream`) {
				t.Fatalf("stream error %v", err)
			}
			// Nothing half-made: the user's message, and hermes's note of
			// the failed call, whose tokens the API counted (usage).
			msgs := messages(t, e.sessions, sid)
			if got := roles(msgs); got != "user system" || !agent.IsNote(msgs[1]) {
				t.Fatalf("transcript %s", got)
			}
			if calls, err := usage.Others(msgs[1]); err != nil || len(calls) != 1 || !calls[0].Failed || calls[0].Input != 3 {
				t.Errorf("the note's calls %+v (%v), want the failed one", calls, err)
			}
		})
	}
}

// A retry with the same Idempotency-Key gets the stored reply and runs
// nothing; the key with another request is refused, in the API's shape.
func TestMessagesIdempotencyKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	e := newTestEnv(t, countingEcho(&calls))
	key := map[string]string{IdempotencyHeader: "k-1"}
	body := `{"model":"echo","max_tokens":5,"messages":[{"role":"user","content":"hello"}]}`
	resp, first := e.do("POST", "/v1/messages", body, key)
	mustStatus(t, resp, first, 200)
	sid := resp.Header.Get(SessionHeader)
	resp, again := e.do("POST", "/v1/messages", body, key)
	mustStatus(t, resp, again, 200)
	text := func(b []byte) string { return decode[apiMessage](t, b).Content[0]["text"].(string) }
	if calls.Load() != 1 || resp.Header.Get(SessionHeader) != sid || text(again) != text(first) {
		t.Fatalf("%d calls; the retry got session %s, %s", calls.Load(), resp.Header.Get(SessionHeader), again)
	}
	resp, other := e.do("POST", "/v1/messages", `{"model":"echo","max_tokens":5,"messages":[{"role":"user","content":"hello there"}]}`, key)
	if resp.StatusCode != 400 || !strings.HasPrefix(string(other), `{"type":"error","error":{"type":"invalid_request_error"`) {
		t.Fatalf("the key with another request: %d %s", resp.StatusCode, other)
	}
}

// count_tokens on an anthropic upstream is the upstream's count; on
// another provider an estimate that errs high: on the same request, 1.34x
// the fake's count (which counts 4 bytes a token, as English text runs).
func TestMessagesCountTokensUpstream(t *testing.T) {
	t.Parallel()
	fake := &anthropictest.Server{}
	up := httptest.NewServer(fake)
	defer up.Close()
	prov, err := provider.New(provider.Config{Name: "anthropic", BaseURL: up.URL, Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	params := anthropic.MessageCountTokensParams{Model: "claude-test",
		System:   anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: []anthropic.TextBlockParam{{Text: strings.Repeat("Be brief. ", 50)}}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("word ", 300)))},
		Tools:    []anthropic.MessageCountTokensToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "client_fn", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"q": map[string]any{"type": "string"}}}}}},
	}
	count := func(e *testEnv) int64 {
		client := anthropicClient(e)
		n, err := client.Messages.CountTokens(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		return n.InputTokens
	}
	upstream := count(newTestEnv(t, func(o *Options) { o.Provider = prov }))
	reqs := fake.Requests()
	if len(reqs) != 1 || !reqs[0].Count || int64(reqs[0].Usage.InputTokens) != upstream {
		t.Fatalf("count %d; the upstream got %d requests", upstream, len(reqs))
	}
	estimate := count(newTestEnv(t, nil))
	ratio := float64(estimate) / float64(upstream)
	t.Logf("estimate %d, upstream %d: %.2fx", estimate, upstream, ratio)
	if ratio < 1 || ratio > 1.5 {
		t.Errorf("estimate %d for the upstream's %d (%.2fx)", estimate, upstream, ratio)
	}
}

// To an anthropic upstream, what a Messages client asks of the model goes
// as it came: its thinking, output_config and context_management members
// (in place of the provider's configured thinking), and its anthropic-beta
// values after the configured ones, each once. A count_tokens request
// carries its thinking too.
func TestMessagesForwardsClientSettings(t *testing.T) {
	t.Parallel()
	fake := &anthropictest.Server{}
	up := httptest.NewServer(fake)
	defer up.Close()
	prov, err := provider.New(provider.Config{Name: "anthropic", BaseURL: up.URL, Model: "claude-test",
		Anthropic: provider.Anthropic{Thinking: "2048", Beta: []string{"configured-1", "shared-2"}}})
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(o *Options) { o.Provider = prov })
	header := map[string]string{"anthropic-version": "2023-06-01", "anthropic-beta": "shared-2, client-3"}
	body := map[string]any{"model": "claude-test", "max_tokens": 4096, "messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"thinking": map[string]any{"type": "adaptive", "display": "omitted"}, "output_config": map[string]any{"effort": "medium"},
		"context_management": map[string]any{"edits": []any{map[string]any{"type": "clear_thinking_20251015", "keep": "all"}}}}
	for _, path := range []string{"/v1/messages?beta=true", "/v1/messages/count_tokens?beta=true"} {
		resp, rbody := e.do("POST", path, body, header)
		mustStatus(t, resp, rbody, 200)
		reqs := fake.Requests()
		last := reqs[len(reqs)-1]
		var got map[string]json.RawMessage
		json.Unmarshal(last.Body, &got)
		if canonicalJSON(t, got["thinking"]) != canonicalJSON(t, json.RawMessage(`{"type":"adaptive","display":"omitted"}`)) {
			t.Errorf("%s: the upstream got thinking %s, want the client's", path, got["thinking"])
		}
		if strings.HasPrefix(path, "/v1/messages?") {
			if string(got["output_config"]) != `{"effort":"medium"}` || !strings.Contains(string(got["context_management"]), "clear_thinking_20251015") {
				t.Errorf("%s: the upstream got output_config %s, context_management %s", path, got["output_config"], got["context_management"])
			}
		}
		if b := last.Header.Get("Anthropic-Beta"); b != "configured-1,shared-2,client-3" {
			t.Errorf("%s: the upstream got anthropic-beta %q, want configured-1,shared-2,client-3", path, b)
		}
		if last.Status != 200 {
			t.Errorf("%s: the upstream refused: %s", path, last.Error)
		}
	}
}
