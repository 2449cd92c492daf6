package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fastRetries shrinks the retry waits for one test.
func fastRetries(t *testing.T) {
	base, maxDelay := retryBaseDelay, retryMaxDelay
	retryBaseDelay, retryMaxDelay = time.Millisecond, 10*time.Millisecond
	t.Cleanup(func() { retryBaseDelay, retryMaxDelay = base, maxDelay })
}

func newOpenAITest(t *testing.T, url string, cfg Config) Provider {
	t.Helper()
	cfg.Name, cfg.BaseURL = "openai", url+"/v1"
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// toolTranscript has an assistant message with tool calls and the tool's answer.
func toolTranscript(t *testing.T) Request {
	return Request{SessionID: "s1", History: transcript(t,
		`{"role":"system","content":"You are terse."}`,
		`{"role":"user","content":"weather in Paris?"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`,
		`{"role":"tool","tool_call_id":"call_1","content":"18C <sunny>"}`,
		`{"role":"user","content":[{"type":"text","text":"and tomorrow?"}]}`,
	)}
}

const toolTranscriptBody = `{"model":"gpt-test","messages":[` +
	`{"role":"system","content":"You are terse."},` +
	`{"role":"user","content":"weather in Paris?"},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
	`{"role":"tool","content":"18C <sunny>","tool_call_id":"call_1"},` +
	`{"role":"user","content":[{"type":"text","text":"and tomorrow?"}]}]`

func TestOpenAIRequestAndReply(t *testing.T) {
	var gotBody, gotAuth, gotPath, gotMethod, gotType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody, gotAuth, gotPath, gotMethod, gotType = string(b), r.Header.Get("Authorization"), r.URL.Path, r.Method, r.Header.Get("Content-Type")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"refusal":null,"annotations":[],
			"tool_calls":[{"id":"call_2","type":"function","function":{"name":"forecast","arguments":"{\"day\":1}"}}]}}],
			"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`)
	}))
	defer srv.Close()

	p := newOpenAITest(t, srv.URL, Config{Model: "gpt-test", APIKey: "sk-secret"})
	reply, err := p.Complete(context.Background(), toolTranscript(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := toolTranscriptBody + "}"; gotBody != want {
		t.Errorf("request body:\n got %s\nwant %s", gotBody, want)
	}
	if gotAuth != "Bearer sk-secret" {
		t.Errorf("Authorization = %q", gotAuth)
	}
	if gotMethod != "POST" || gotPath != "/v1/chat/completions" || gotType != "application/json" {
		t.Errorf("request = %s %s (%s)", gotMethod, gotPath, gotType)
	}
	want := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"forecast","arguments":"{\"day\":1}"}}]}` + "\n"
	if got := chatLines(reply.Messages); got != want {
		t.Errorf("reply:\n got %s\nwant %s", got, want)
	}
	if m := reply.Messages[0]; m.Seq != 0 || m.TS != "" {
		t.Errorf("reply seq, ts = %d, %q; want them zero", m.Seq, m.TS)
	}
	if reply.Usage == nil || *reply.Usage != (Usage{PromptTokens: 42, CompletionTokens: 7, TotalTokens: 49}) {
		t.Errorf("usage = %+v", reply.Usage)
	}
}

func TestOpenAINoKeyNoAuthorization(t *testing.T) {
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Values("Authorization")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"hi"}}]}`)
	}))
	defer srv.Close()
	reply, err := newOpenAITest(t, srv.URL, Config{}).Complete(context.Background(), toolTranscript(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(auth) != 0 {
		t.Errorf("Authorization sent without a key: %q", auth)
	}
	if reply.Usage != nil || reply.Messages[0].Text() != "hi" {
		t.Errorf("reply = %s, usage %+v", chatLines(reply.Messages), reply.Usage)
	}
}

func TestOpenAIStreaming(t *testing.T) {
	events := []string{
		`: keep-alive`,
		`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
		`data: {"choices":[{"index":0,"delta":{"content":"lo <b>"}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_","arguments":""}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"weather","arguments":"{\"ci"}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"time","arguments":"{}"}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}`,
		`data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		`data: [DONE]`,
	}
	var gotBody, gotAccept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody, gotAccept = string(b), r.Header.Get("Accept")
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "%s\r\n\r\n", e)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()

	var stream strings.Builder
	req := toolTranscript(t)
	req.Stream = &stream
	reply, err := newOpenAITest(t, srv.URL, Config{Model: "gpt-test"}).Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := toolTranscriptBody + `,"stream":true,"stream_options":{"include_usage":true}}`; gotBody != want {
		t.Errorf("request body:\n got %s\nwant %s", gotBody, want)
	}
	if gotAccept != "text/event-stream" {
		t.Errorf("Accept = %q", gotAccept)
	}
	if stream.String() != "Hello <b>" {
		t.Errorf("streamed %q", stream.String())
	}
	want := `{"role":"assistant","content":"Hello <b>","tool_calls":[` +
		`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"time","arguments":"{}"}}]}` + "\n"
	if got := chatLines(reply.Messages); got != want {
		t.Errorf("reply:\n got %s\nwant %s", got, want)
	}
	if reply.Usage == nil || *reply.Usage != (Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}) {
		t.Errorf("usage = %+v", reply.Usage)
	}
}

func TestOpenAIStreamingToolCallsOnly(t *testing.T) {
	// No blank lines between events, and no content: the message has null content.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n"+
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n"+
			"data: [DONE]\n")
	}))
	defer srv.Close()
	var stream strings.Builder
	req := toolTranscript(t)
	req.Stream = &stream
	reply, err := newOpenAITest(t, srv.URL, Config{}).Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}` + "\n"
	if got := chatLines(reply.Messages); got != want || stream.String() != "" {
		t.Errorf("reply %s, streamed %q; want %s and nothing streamed", got, stream.String(), want)
	}
}

func TestOpenAIRetry429ThenOK(t *testing.T) {
	fastRetries(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "1") // capped to retryMaxDelay by fastRetries
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"slow down"}}`)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer srv.Close()
	reply, err := newOpenAITest(t, srv.URL, Config{}).Complete(context.Background(), toolTranscript(t))
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 || reply.Messages[0].Text() != "ok" {
		t.Errorf("%d requests, reply %s; want 2 requests and ok", n.Load(), chatLines(reply.Messages))
	}
}

func TestOpenAIRetriesExhausted(t *testing.T) {
	fastRetries(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"model overloaded\nplease retry","type":"server_error"}}`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		maxRetries int
		requests   int32
	}{{0, 4}, {1, 2}, {-1, 1}} {
		n.Store(0)
		_, err := newOpenAITest(t, srv.URL, Config{MaxRetries: tc.maxRetries}).Complete(context.Background(), toolTranscript(t))
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("MaxRetries %d: error %v is not an *Error", tc.maxRetries, err)
		}
		if got := n.Load(); got != tc.requests || pe.Attempts != int(tc.requests) {
			t.Errorf("MaxRetries %d: %d requests, Attempts %d; want %d", tc.maxRetries, got, pe.Attempts, tc.requests)
		}
		if want := "openai: HTTP 500: model overloaded please retry"; pe.Error() != want || pe.StatusCode != 500 {
			t.Errorf("error %q (status %d), want %q", pe.Error(), pe.StatusCode, want)
		}
	}
}

func TestOpenAIClientErrorNotRetried(t *testing.T) {
	fastRetries(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"Invalid 'messages[2]': missing content"}}`)
	}))
	defer srv.Close()
	_, err := newOpenAITest(t, srv.URL, Config{}).Complete(context.Background(), toolTranscript(t))
	var pe *Error
	if !errors.As(err, &pe) || pe.StatusCode != 400 {
		t.Fatalf("error %v, want an *Error with status 400", err)
	}
	if want := "openai: HTTP 400: Invalid 'messages[2]': missing content"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if n.Load() != 1 {
		t.Errorf("%d requests, want 1", n.Load())
	}
}

func TestOpenAIConnectionErrorRetried(t *testing.T) {
	fastRetries(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	_, err := newOpenAITest(t, url, Config{MaxRetries: 2}).Complete(context.Background(), toolTranscript(t))
	var pe *Error
	if !errors.As(err, &pe) || pe.Attempts != 3 || pe.Err == nil || pe.StatusCode != 0 {
		t.Fatalf("error %#v, want an *Error after 3 attempts wrapping the connection error", err)
	}
	if !strings.HasPrefix(pe.Error(), "openai: ") {
		t.Errorf("error %q", pe)
	}
}

// breakAfter answers with a stream that breaks off after body: the
// connection closes in the middle of the chunked response.
func breakAfter(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, body)
	w.(http.Flusher).Flush()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func TestOpenAIStreamNotRetriedAfterText(t *testing.T) {
	fastRetries(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		breakAfter(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\n")
	}))
	defer srv.Close()
	var stream strings.Builder
	req := toolTranscript(t)
	req.Stream = &stream
	_, err := newOpenAITest(t, srv.URL, Config{}).Complete(context.Background(), req)
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v, want an *Error", err)
	}
	if n.Load() != 1 || stream.String() != "partial" {
		t.Errorf("%d requests, streamed %q; want 1 request and %q", n.Load(), stream.String(), "partial")
	}
}

func TestOpenAIStreamRetriedBeforeText(t *testing.T) {
	fastRetries(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			breakAfter(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n")
			return
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"whole\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	var stream strings.Builder
	req := toolTranscript(t)
	req.Stream = &stream
	reply, err := newOpenAITest(t, srv.URL, Config{}).Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 || stream.String() != "whole" || reply.Messages[0].Text() != "whole" {
		t.Errorf("%d requests, streamed %q, reply %s", n.Load(), stream.String(), chatLines(reply.Messages))
	}
}

func TestOpenAITimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // never answers in time; the client gives up
	}))
	defer srv.Close()
	defer close(release) // runs before srv.Close, which waits for the handler
	_, err := newOpenAITest(t, srv.URL, Config{Timeout: 50 * time.Millisecond}).Complete(context.Background(), toolTranscript(t))
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want an *Error wrapping context.DeadlineExceeded", err)
	}
	if want := "openai: timed out after 50ms"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestOpenAIErrorText(t *testing.T) {
	long := "<p>: " + strings.Repeat("é", 150) // 5 bytes, then 2 a rune
	for _, tc := range []struct{ body, want string }{
		{`{"error":{"message":"bad key","type":"auth"}}`, "bad key"},
		{`{"error":"model not found"}`, "model not found"},
		{`{"message":"upstream down"}`, "upstream down"},
		{`{"detail":"Not Found"}`, "Not Found"},
		{"Bad Gateway\n", "Bad Gateway"},
		{"", "empty response body"},
		{long, long[:199]}, // 200 bytes would split an é
	} {
		if got := errorText([]byte(tc.body)); got != tc.want {
			t.Errorf("errorText(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		retry  int
		header string
		want   time.Duration
	}{
		{1, "", 500 * time.Millisecond},
		{2, "", time.Second},
		{3, "", 2 * time.Second},
		{10, "", 30 * time.Second},
		{1, "3", 3 * time.Second},
		{3, "0", 0},
		{1, "120", 30 * time.Second},
		{2, "soon", time.Second},
		{1, "-5", 500 * time.Millisecond},
		{1, "Wed, 21 Oct 2099 07:28:00 GMT", 30 * time.Second},
		{1, "Wed, 21 Oct 2015 07:28:00 GMT", 0},
	} {
		if got := retryDelay(tc.retry, parseRetryAfter(tc.header)); got != tc.want {
			t.Errorf("retry %d, Retry-After %q: wait %v, want %v", tc.retry, tc.header, got, tc.want)
		}
	}
}

// A reply holding a lone surrogate escape is the provider's failure, not
// stored (the store would refuse it as the caller's bad input). A streamed
// reply's text is decoded from its deltas, so it never keeps one.
func TestOpenAILoneSurrogateReply(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"cut \ud83d"}}]}`)
	}))
	defer srv.Close()
	p := newOpenAITest(t, srv.URL, Config{})
	reply, err := p.Complete(context.Background(), toolTranscript(t))
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), `content holds \ud83d, a lone surrogate escape`) {
		t.Fatalf("reply %s, error %v", chatLines(reply.Messages), err)
	}
}
