package provider

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// storedCall returns the call the reply's assistant message holds, its id
// and latency checked and then cleared, so that the rest compares whole.
func storedCall(t *testing.T, m sessions.Message) usage.Call {
	t.Helper()
	c, ok, err := usage.Of(m)
	if err != nil || !ok {
		t.Fatalf("message %s holds no call (%v)", m.ChatJSON(), err)
	}
	if len(c.ID) != len("20060102_150405_")+24 || c.LatencyMS < 0 {
		t.Errorf("call id %q, latency %d", c.ID, c.LatencyMS)
	}
	c.ID, c.LatencyMS = "", 0
	return c
}

// Replies recorded from api.openai.com (ids shortened): a non-streamed
// reply of a reasoning model with a cached prompt, and the last events of
// a stream asked with stream_options.include_usage.
const (
	recordedReply = `{"id":"chatcmpl-BXk2","object":"chat.completion","created":1747300000,"model":"o4-mini-2025-04-16",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Paris.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1843,"completion_tokens":275,"total_tokens":2118,` +
		`"prompt_tokens_details":{"cached_tokens":1664,"audio_tokens":0},` +
		`"completion_tokens_details":{"reasoning_tokens":256,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},` +
		`"service_tier":"default","system_fingerprint":null}`
)

var recordedStream = []string{
	`data: {"id":"chatcmpl-BXk3","object":"chat.completion.chunk","created":1747300001,"model":"gpt-4.1-mini-2025-04-14","service_tier":"default","system_fingerprint":"fp_6f2eabb9a5","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`data: {"id":"chatcmpl-BXk3","object":"chat.completion.chunk","created":1747300001,"model":"gpt-4.1-mini-2025-04-14","service_tier":"default","system_fingerprint":"fp_6f2eabb9a5","choices":[{"index":0,"delta":{"content":"Paris."},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`data: {"id":"chatcmpl-BXk3","object":"chat.completion.chunk","created":1747300001,"model":"gpt-4.1-mini-2025-04-14","service_tier":"default","system_fingerprint":"fp_6f2eabb9a5","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
	`data: {"id":"chatcmpl-BXk3","object":"chat.completion.chunk","created":1747300001,"model":"gpt-4.1-mini-2025-04-14","service_tier":"default","system_fingerprint":"fp_6f2eabb9a5","choices":[],"usage":{"prompt_tokens":2210,"completion_tokens":3,"total_tokens":2213,"prompt_tokens_details":{"cached_tokens":2048,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
	`data: [DONE]`,
}

func TestOpenAIUsageRecorded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Request-Id", "req_8f1c")
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range recordedStream {
				fmt.Fprintf(w, "%s\n\n", e)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, recordedReply)
	}))
	defer srv.Close()
	p := newOpenAITest(t, srv.URL, Config{Model: "gpt-test"})

	reply, err := p.Complete(context.Background(), toolTranscript(t))
	if err != nil {
		t.Fatal(err)
	}
	want := usage.Call{Input: 1843, Output: 275, CacheRead: 1664, Reasoning: 256, InputHasCache: true,
		Model: "o4-mini-2025-04-16", Provider: "openai", RequestID: "req_8f1c"}
	if got := storedCall(t, reply.Messages[0]); got != want {
		t.Errorf("stored call:\n got %+v\nwant %+v", got, want)
	}
	if got := want.Fresh(); got != 179 {
		t.Errorf("fresh input = %d, want 179", got)
	}

	req := toolTranscript(t)
	req.Stream = &strings.Builder{}
	reply, err = p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want = usage.Call{Input: 2210, Output: 3, CacheRead: 2048, InputHasCache: true,
		Model: "gpt-4.1-mini-2025-04-14", Provider: "openai", RequestID: "req_8f1c"}
	if got := storedCall(t, reply.Messages[0]); got != want {
		t.Errorf("stored call (streamed):\n got %+v\nwant %+v", got, want)
	}
	// The gateway passes the usage on as the upstream gave it.
	if u := reply.Usage; u == nil || u.PromptTokensDetails == nil || u.PromptTokensDetails.CachedTokens != 2048 {
		t.Errorf("usage = %+v", reply.Usage)
	}
}

// A server that reports no usage (a local server, a stream asked without
// it) leaves the message without a call: nothing is made up.
func TestOpenAINoUsageNoCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`)
	}))
	defer srv.Close()
	reply, err := newOpenAITest(t, srv.URL, Config{}).Complete(context.Background(), toolTranscript(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := usage.Of(reply.Messages[0]); ok {
		t.Errorf("a call was recorded: %s", reply.Messages[0].Extra[usage.Field])
	}
}

func TestExecUsage(t *testing.T) {
	p, _ := newExecTest(t, `
cat >/dev/null
printf '%s\n' '{"role":"assistant","content":"one","usage":{"input":120,"output":30,"cache_read":100,"cache_write_5m":7,"cache_write_1h":3,"reasoning":12,"model":"local-7b","request_id":"r1"}}'
printf '%s\n' '{"role":"assistant","content":"two"}'
`, 0)
	reply, err := p.Complete(context.Background(), toolTranscript(t))
	if err != nil {
		t.Fatal(err)
	}
	want := usage.Call{Input: 120, Output: 30, CacheRead: 100, CacheWrite5m: 7, CacheWrite1h: 3, Reasoning: 12,
		Model: "local-7b", Provider: "exec", RequestID: "r1"}
	if got := storedCall(t, reply.Messages[0]); got != want {
		t.Errorf("stored call:\n got %+v\nwant %+v", got, want)
	}
	if _, ok, _ := usage.Of(reply.Messages[1]); ok {
		t.Errorf("a message without usage got a call")
	}
}

func TestExecBadUsage(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"role":"assistant","content":"x","usage":{"prompt_tokens":3}}`, `exec provider: output line 1: usage: json: unknown field "prompt_tokens"`},
		{`{"role":"assistant","content":"x","usage":{"input":-3}}`, `exec provider: output line 1: usage input is -3, below 0`},
		{`{"role":"assistant","content":"x","usage":[1]}`, `exec provider: output line 1: usage: json: cannot unmarshal array`},
		{`{"role":"tool","tool_call_id":"c","content":"x","usage":{"input":1}}`, `exec provider: output line 1: usage on a tool message (only an assistant message holds one)`},
	} {
		p, _ := newExecTest(t, "cat >/dev/null\nprintf '%s\\n' '"+tc.line+"'\n", 10*time.Second)
		_, err := p.Complete(context.Background(), toolTranscript(t))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %s", tc.line, err, tc.want)
		}
	}
}
