package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

type chatResp struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *provider.Usage `json:"usage"`
}

type respObj struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	CreatedAt          int64   `json:"created_at"`
	Status             string  `json:"status"`
	Model              string  `json:"model"`
	PreviousResponseID *string `json:"previous_response_id"`
	Output             []struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Role    string `json:"role"`
		Status  string `json:"status"`
		Content []struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Annotations []any  `json:"annotations"`
		} `json:"content"`
	} `json:"output"`
}

func (r respObj) text() string {
	var b strings.Builder
	for _, o := range r.Output {
		for _, c := range o.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func userMsg(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
func asstMsg(text string) map[string]any { return map[string]any{"role": "assistant", "content": text} }

func TestHealthAndModels(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("GET", "/health", nil, nil)
	mustStatus(t, resp, body, 200)
	if got := decode[map[string]string](t, body)["status"]; got != "ok" {
		t.Fatalf("health: %s", body)
	}
	resp, body = e.do("GET", "/v1/models", nil, nil)
	mustStatus(t, resp, body, 200)
	if !strings.Contains(string(body), `"id":"echo"`) {
		t.Fatalf("models: %s", body)
	}
}

func TestChatCompletionsNewThenContinue(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{
		"model": "anything", "messages": []any{map[string]any{"role": "system", "content": "be brief"}, userMsg("hi")},
	}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	if sid == "" {
		t.Fatal("no session header")
	}
	c := decode[chatResp](t, body)
	if c.Object != "chat.completion" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Created == 0 || c.Model != "anything" ||
		len(c.Choices) != 1 || c.Choices[0].Message.Role != "assistant" || c.Choices[0].FinishReason != "stop" {
		t.Fatalf("chat.completion shape: %s", body)
	}
	first := c.Choices[0].Message.Content
	if first != echoText(2, "hi") {
		t.Fatalf("reply %q", first)
	}
	sess := getSession(t, e.sessions, sid)
	if sess.Source != "gateway" || sess.MessageCount != 3 {
		t.Fatalf("session %+v", sess)
	}

	// The whole conversation again, plus a new message: only the new one is
	// appended. The client echoes the reply with extra fields (refusal), as
	// the official libraries do.
	echoed := map[string]any{"role": "assistant", "content": first, "refusal": nil, "annotations": []any{}}
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{
		"model": "x", "messages": []any{map[string]any{"role": "system", "content": "be brief"}, userMsg("hi"), echoed, userMsg("more")},
	}, map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("continued in %s, want %s", got, sid)
	}
	if got := decode[chatResp](t, body).Choices[0].Message.Content; got != echoText(4, "more") {
		t.Fatalf("reply %q", got)
	}
	msgs := messages(t, e.sessions, sid)
	if len(msgs) != 5 {
		t.Fatalf("transcript: %s", dump(msgs))
	}
	checkTranscript(t, msgs)
}

func TestChatCompletionsContradictionForks(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("one")}}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	reply := decode[chatResp](t, body).Choices[0].Message.Content
	before := messages(t, e.sessions, sid)

	cases := map[string][]any{
		"edited":  {userMsg("ONE"), asstMsg(reply), userMsg("two")},
		"shorter": {userMsg("one")},
		"reply":   {userMsg("one"), asstMsg("not what was said"), userMsg("two")},
	}
	for name, history := range cases {
		t.Run(name, func(t *testing.T) {
			resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, map[string]string{SessionHeader: sid})
			mustStatus(t, resp, body, 200)
			fork := resp.Header.Get(SessionHeader)
			if fork == sid || fork == "" {
				t.Fatalf("a contradicting history continued session %s", sid)
			}
			if p := getSession(t, e.sessions, fork).ParentSessionID; p != sid {
				t.Fatalf("fork parent %q, want %s", p, sid)
			}
			if got := len(messages(t, e.sessions, fork)); got != len(history)+1 {
				t.Fatalf("fork has %d messages, want the client's %d and the reply", got, len(history))
			}
			after := messages(t, e.sessions, sid)
			if len(after) != len(before) {
				t.Fatalf("the old session changed: %s", dump(after))
			}
			if s := getSession(t, e.sessions, sid); s.State != sessions.StateActive {
				t.Fatalf("old session state %s", s.State)
			}
		})
	}
}

func TestChatCompletionsRetryAfterProviderError(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	failing := true
	e := newTestEnv(t, func(o *Options) {
		o.Provider = &funcProvider{name: "flaky", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			mu.Lock()
			defer mu.Unlock()
			if failing {
				return provider.Reply{}, &provider.Error{Provider: "flaky", Message: "flaky: down"}
			}
			return assistant(fmt.Sprintf("ok after %d", len(historyOf(req.History)))), nil
		}}
	})
	msgs := []any{userMsg("hello")}
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": msgs}, nil)
	mustError(t, resp, body, http.StatusBadGateway, "server_error")
	sid := resp.Header.Get(SessionHeader)
	if sid == "" {
		t.Fatal("a failed turn must name the session that keeps the message")
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": msgs}, map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	if resp.Header.Get(SessionHeader) != sid {
		t.Fatal("the retry left the session")
	}
	got := messages(t, e.sessions, sid)
	if len(got) != 2 || got[0].Text() != "hello" || got[1].Text() != "ok after 1" {
		t.Fatalf("the retry stored the message twice or lost it: %s", dump(got))
	}
}

func TestChatCompletionsUnknownAndInvalidSession(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("x")}}, map[string]string{SessionHeader: "20990101_000000_abcdef"})
	if c := mustError(t, resp, body, 404, "invalid_request_error").Error.Code; c == nil || *c != "session_not_found" {
		t.Fatalf("code: %s", body)
	}
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("x")}}, map[string]string{SessionHeader: "../etc"})
	mustError(t, resp, body, 400, "invalid_request_error")
	if ids, _ := e.sessions.IDs(); len(ids) != 0 {
		t.Fatalf("sessions were created: %v", ids)
	}
}

func TestChatCompletionsStream(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{
		"messages": []any{userMsg("stream me")}, "stream": true, "stream_options": map[string]any{"include_usage": true},
	}, nil)
	mustStatus(t, resp, body, 200)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sid := resp.Header.Get(SessionHeader)
	if sid == "" {
		t.Fatal("no session header on the stream")
	}
	events := parseSSE(t, body)
	if len(events) < 3 || events[len(events)-1].Data != "[DONE]" {
		t.Fatalf("events: %+v", events)
	}
	var text strings.Builder
	var finish []string
	ids := map[string]bool{}
	for i, ev := range events[:len(events)-1] {
		var chunk struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &chunk); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, ev.Data)
		}
		if chunk.Object != "chat.completion.chunk" || len(chunk.Choices) != 1 {
			t.Fatalf("event %d: %s", i, ev.Data)
		}
		ids[chunk.ID] = true
		if i == 0 && chunk.Choices[0].Delta.Role != "assistant" {
			t.Fatalf("first chunk has no role: %s", ev.Data)
		}
		text.WriteString(chunk.Choices[0].Delta.Content)
		if f := chunk.Choices[0].FinishReason; f != nil {
			finish = append(finish, *f)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("chunks have %d ids", len(ids))
	}
	if want := echoText(1, "stream me"); text.String() != want {
		t.Fatalf("streamed %q, want %q", text.String(), want)
	}
	if len(finish) != 1 || finish[0] != "stop" {
		t.Fatalf("finish reasons %v", finish)
	}
	msgs := messages(t, e.sessions, sid)
	if len(msgs) != 2 || msgs[1].Text() != text.String() {
		t.Fatalf("stored: %s", dump(msgs))
	}
}

func TestResponsesConversationAndChain(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/responses", map[string]any{"model": "m", "input": "first", "conversation": "c1", "instructions": "be kind"}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	r1 := decode[respObj](t, body)
	if !strings.HasPrefix(r1.ID, "resp_") || r1.Object != "response" || r1.Status != "completed" || r1.CreatedAt == 0 ||
		len(r1.Output) != 1 || r1.Output[0].Type != "message" || r1.Output[0].Role != "assistant" ||
		len(r1.Output[0].Content) != 1 || r1.Output[0].Content[0].Type != "output_text" || r1.Output[0].Content[0].Annotations == nil {
		t.Fatalf("response shape: %s", body)
	}
	if r1.text() != echoText(2, "first") {
		t.Fatalf("text %q", r1.text())
	}

	// The same conversation (as an object), same instructions: same session,
	// the instructions stored once.
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "second", "conversation": map[string]any{"id": "c1"}, "instructions": "be kind"}, nil)
	mustStatus(t, resp, body, 200)
	if resp.Header.Get(SessionHeader) != sid {
		t.Fatal("conversation c1 got another session")
	}
	if got := decode[respObj](t, body).text(); got != echoText(4, "second") {
		t.Fatalf("text %q", got)
	}
	m, err := e.store.GetConversation("c1")
	if err != nil || m.SessionID != sid {
		t.Fatalf("mapping %+v, %v", m, err)
	}

	// GET returns the stored response.
	resp, body = e.do("GET", "/v1/responses/"+r1.ID, nil, nil)
	mustStatus(t, resp, body, 200)
	if got := decode[respObj](t, body); got.ID != r1.ID || got.text() != r1.text() || resp.Header.Get(SessionHeader) != sid {
		t.Fatalf("GET: %s", body)
	}

	// previous_response_id chains without a conversation.
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "solo"}, nil)
	mustStatus(t, resp, body, 200)
	solo := resp.Header.Get(SessionHeader)
	ra := decode[respObj](t, body)
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "next"}}}}, "previous_response_id": ra.ID}, nil)
	mustStatus(t, resp, body, 200)
	rb := decode[respObj](t, body)
	if resp.Header.Get(SessionHeader) != solo || rb.PreviousResponseID == nil || *rb.PreviousResponseID != ra.ID {
		t.Fatalf("chain: %s", body)
	}
	if rb.text() != echoText(3, "next") {
		t.Fatalf("text %q", rb.text())
	}

	// Branching from the older response: a new session with the history up
	// to it, the old one untouched.
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "other way", "previous_response_id": ra.ID}, nil)
	mustStatus(t, resp, body, 200)
	branch := resp.Header.Get(SessionHeader)
	if branch == solo {
		t.Fatal("a branch from an older response continued the session past it")
	}
	if p := getSession(t, e.sessions, branch).ParentSessionID; p != solo {
		t.Fatalf("branch parent %q", p)
	}
	bm := messages(t, e.sessions, branch)
	if len(bm) != 4 || bm[0].Text() != "solo" || bm[2].Text() != "other way" {
		t.Fatalf("branch: %s", dump(bm))
	}
	if n := len(messages(t, e.sessions, solo)); n != 4 {
		t.Fatalf("old session has %d messages", n)
	}
}

func TestResponsesStream(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "hello", "conversation": "s1", "stream": true}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	if sid == "" {
		t.Fatal("no session header")
	}
	events := parseSSE(t, body)
	var names []string
	var deltas, done string
	var completed respObj
	for i, ev := range events {
		var fields struct {
			Type           string  `json:"type"`
			SequenceNumber int     `json:"sequence_number"`
			Delta          string  `json:"delta"`
			Text           string  `json:"text"`
			Response       respObj `json:"response"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &fields); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if fields.Type != ev.Name || fields.SequenceNumber != i {
			t.Fatalf("event %d: name %q, type %q, sequence %d", i, ev.Name, fields.Type, fields.SequenceNumber)
		}
		names = append(names, ev.Name)
		switch ev.Name {
		case "response.output_text.delta":
			deltas += fields.Delta
		case "response.output_text.done":
			done = fields.Text
		case "response.completed":
			completed = fields.Response
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("events %v, want %v", names, want)
	}
	if deltas != echoText(1, "hello") || done != deltas || completed.text() != deltas || completed.Status != "completed" {
		t.Fatalf("deltas %q, done %q, completed %+v", deltas, done, completed)
	}
	// The streamed response is stored: GET it, and chain from it.
	resp, body = e.do("GET", "/v1/responses/"+completed.ID, nil, nil)
	mustStatus(t, resp, body, 200)
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "again", "previous_response_id": completed.ID}, nil)
	mustStatus(t, resp, body, 200)
	if resp.Header.Get(SessionHeader) != sid {
		t.Fatal("chaining from a streamed response left its session")
	}
}

func TestResponsesEvictionKeepsConversation(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.MaxStoredResponses = 2 })
	post := func(body map[string]any) (*http.Response, respObj) {
		resp, b := e.do("POST", "/v1/responses", body, nil)
		mustStatus(t, resp, b, 200)
		return resp, decode[respObj](t, b)
	}
	resp, first := post(map[string]any{"input": "turn 1", "conversation": "c1"})
	sid := resp.Header.Get(SessionHeader)
	for i := range 3 {
		post(map[string]any{"input": "noise", "conversation": fmt.Sprintf("other-%d", i)})
	}
	// Evicted: GET and previous_response_id are 404 …
	r, b := e.do("GET", "/v1/responses/"+first.ID, nil, nil)
	mustError(t, r, b, 404, "invalid_request_error")
	r, b = e.do("POST", "/v1/responses", map[string]any{"input": "x", "previous_response_id": first.ID}, nil)
	if c := mustError(t, r, b, 404, "invalid_request_error"); c.Error.Param == nil || *c.Error.Param != "previous_response_id" {
		t.Fatalf("param: %s", b)
	}
	if n, _ := e.store.StoredResponseCount(); n != 2 {
		t.Fatalf("%d responses stored, want 2", n)
	}
	// … but the conversation goes on in its session.
	resp, second := post(map[string]any{"input": "turn 2", "conversation": "c1"})
	if resp.Header.Get(SessionHeader) != sid {
		t.Fatal("conversation c1 lost its session when its response was evicted")
	}
	if second.text() != echoText(3, "turn 2") {
		t.Fatalf("text %q", second.text())
	}
	if ids := sessionsByKey(t, e.sessions, "conversation:c1"); len(ids) != 1 {
		t.Fatalf("sessions of c1: %v", ids)
	}
}

// store:false keeps no response document, but the turn is in the session
// like any other: hermes keeps transcripts.
func TestResponsesStoreFalse(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "secret", "store": false}, nil)
	mustStatus(t, resp, body, 200)
	r := decode[respObj](t, body)
	sid := resp.Header.Get(SessionHeader)
	resp, body = e.do("GET", "/v1/responses/"+r.ID, nil, nil)
	mustError(t, resp, body, 404, "invalid_request_error")
	msgs := messages(t, e.sessions, sid)
	if len(msgs) != 2 || msgs[0].Text() != "secret" || msgs[1].Text() != r.text() {
		t.Fatalf("the turn is not in session %s: %s", sid, dump(msgs))
	}
}

func TestResponsesInputItems(t *testing.T) {
	t.Parallel()
	var got []sessions.Message
	e := newTestEnv(t, func(o *Options) {
		o.Provider = &funcProvider{name: "rec", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			got = historyOf(req.History)
			return assistant("ok"), nil
		}}
	})
	resp, body := e.do("POST", "/v1/responses", map[string]any{
		"instructions": "sys",
		"input": []any{
			map[string]any{"role": "developer", "content": "dev note"},
			map[string]any{"type": "message", "role": "user", "content": []any{
				map[string]any{"type": "input_text", "text": "look"},
				map[string]any{"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
			}},
			map[string]any{"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"},
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
		},
	}, nil)
	mustStatus(t, resp, body, 200)
	if len(got) != 5 {
		t.Fatalf("provider got %s", dump(got))
	}
	want := []string{"system", "system", "user", "assistant", "tool"}
	for i, m := range got {
		if m.Role != want[i] {
			t.Fatalf("message %d role %s; %s", i, m.Role, dump(got))
		}
	}
	if got[0].Text() != "sys" || got[1].Text() != "dev note" || !strings.Contains(string(got[2].Content), `"image_url"`) ||
		!strings.Contains(string(got[3].ToolCalls), `"call_1"`) || got[4].ToolCallID != "call_1" || got[4].Text() != "a.txt" {
		t.Fatalf("converted: %s", dump(got))
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.MaxBodyBytes = 1024 })
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		t.Run(path, func(t *testing.T) {
			resp, body := e.do("POST", path, `{"messages": [`, nil)
			mustError(t, resp, body, 400, "invalid_request_error")
			resp, body = e.do("POST", path, ``, nil)
			mustError(t, resp, body, 400, "invalid_request_error")
			resp, body = e.do("POST", path, `{"messages": "no", "input": 5}`, nil)
			mustError(t, resp, body, 400, "invalid_request_error")
			big := `{"input": "` + strings.Repeat("x", 2048) + `", "messages": []}`
			resp, body = e.do("POST", path, big, nil)
			mustError(t, resp, body, 413, "invalid_request_error")
			resp, body = e.do("GET", path, nil, nil)
			mustError(t, resp, body, 405, "invalid_request_error")
		})
	}
	// The exact body of malformed JSON.
	resp, body := e.do("POST", "/v1/chat/completions", `{not json`, nil)
	mustStatus(t, resp, body, 400)
	var exact map[string]map[string]any
	json.Unmarshal(body, &exact)
	if exact["error"]["type"] != "invalid_request_error" || exact["error"]["param"] != nil || exact["error"]["code"] != nil || len(exact["error"]) != 4 {
		t.Fatalf("malformed JSON body: %s", body)
	}
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "x", "conversation": "c", "previous_response_id": "resp_x"}, nil)
	mustError(t, resp, body, 400, "invalid_request_error")
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "x", "conversation": "../x"}, nil)
	mustError(t, resp, body, 400, "invalid_request_error")
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "x", "previous_response_id": "resp_nope"}, nil)
	mustError(t, resp, body, 404, "invalid_request_error")
	resp, body = e.do("GET", "/v1/responses/resp_nope", nil, nil)
	mustError(t, resp, body, 404, "invalid_request_error")
	resp, body = e.do("GET", "/v1/nothing", nil, nil)
	mustError(t, resp, body, 404, "invalid_request_error")
	// Nothing of the refused requests was written.
	if ids, _ := e.sessions.IDs(); len(ids) != 0 {
		t.Fatalf("refused requests made sessions %v", ids)
	}
}

func TestBearerAuth(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.APIKey = "s3cret" })
	chat := map[string]any{"messages": []any{userMsg("x")}}
	for name, hdr := range map[string]map[string]string{
		"missing": nil,
		"wrong":   {"Authorization": "Bearer nope"},
		"scheme":  {"Authorization": "Basic s3cret"},
	} {
		t.Run(name, func(t *testing.T) {
			resp, body := e.do("POST", "/v1/chat/completions", chat, hdr)
			if c := mustError(t, resp, body, 401, "invalid_request_error"); c.Error.Code == nil || *c.Error.Code != "invalid_api_key" {
				t.Fatalf("body %s", body)
			}
			resp, body = e.do("GET", "/v1/responses/resp_x", nil, hdr)
			mustError(t, resp, body, 401, "invalid_request_error")
			resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "x"}, hdr)
			mustError(t, resp, body, 401, "invalid_request_error")
		})
	}
	if ids, _ := e.sessions.IDs(); len(ids) != 0 {
		t.Fatalf("unauthorized requests made sessions %v", ids)
	}
	resp, body := e.do("GET", "/health", nil, nil)
	mustStatus(t, resp, body, 200)
	resp, body = e.do("POST", "/v1/chat/completions", chat, map[string]string{"Authorization": "Bearer s3cret"})
	mustStatus(t, resp, body, 200)
}

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8642": true, "[::1]:1": true, "localhost:80": true, "127.5.5.5:1": true,
		"0.0.0.0:8642": false, ":8642": false, "192.168.1.2:80": false, "[::]:1": false, "example.com:80": false, "nonsense": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
}

// resumeEnv is a gateway whose clock a test moves, with helpers to start a
// Responses conversation and send its next turn.
type resumeEnv struct {
	*testEnv
	clock sync.Mutex
	now   time.Time
}

func newResumeEnv(t *testing.T) *resumeEnv {
	r := &resumeEnv{now: time.Now()}
	r.testEnv = newTestEnv(t, func(o *Options) {
		o.ResumeFreshness = time.Hour
		o.Now = func() time.Time { r.clock.Lock(); defer r.clock.Unlock(); return r.now }
	})
	return r
}

func (r *resumeEnv) advance(d time.Duration) {
	r.clock.Lock()
	r.now = r.now.Add(d)
	r.clock.Unlock()
}

func (r *resumeEnv) start(conv string) string {
	resp, body := r.do("POST", "/v1/responses", map[string]any{"input": "hi", "conversation": conv}, nil)
	mustStatus(r.t, resp, body, 200)
	return resp.Header.Get(SessionHeader)
}

func (r *resumeEnv) next(conv string) (string, string) {
	resp, body := r.do("POST", "/v1/responses", map[string]any{"input": "again", "conversation": conv}, nil)
	mustStatus(r.t, resp, body, 200)
	return resp.Header.Get(SessionHeader), decode[respObj](r.t, body).text()
}

// interrupt marks id interrupted n times, as n restarts would.
func (r *resumeEnv) interrupt(id, reason string, n int) {
	r.t.Helper()
	for range n {
		if _, err := r.sessions.MarkInterrupted(id, reason, SuspendAfter); err != nil {
			r.t.Fatal(err)
		}
	}
}

// A session marked resume_pending within the freshness window continues,
// with the note in its transcript before the new message, and is active
// again after the turn.
func TestResumePendingContinues(t *testing.T) {
	t.Parallel()
	e := newResumeEnv(t)
	fresh := e.start("fresh")
	e.interrupt(fresh, "restart_timeout", 1)
	sid, text := e.next("fresh")
	if sid != fresh {
		t.Fatal("a fresh resume_pending session was not continued")
	}
	msgs := messages(t, e.sessions, fresh)
	if len(msgs) != 5 || msgs[2].Role != "system" || msgs[2].Text() != agent.ResumeNote("restart_timeout") || !agent.IsNote(msgs[2]) {
		t.Fatalf("no note before the new message: %s", dump(msgs))
	}
	if text != echoText(4, "again") {
		t.Fatalf("the provider did not get the note: %q", text)
	}
	if s := getSession(t, e.sessions, fresh); s.State != sessions.StateActive || s.InterruptCount != 0 || s.ResumePendingAt != "" {
		t.Fatalf("after a successful turn: %+v", s)
	}
}

// Chat completions: the client's history does not have the resume note,
// and is not taken for a contradiction.
func TestResumeNoteIsNotAContradiction(t *testing.T) {
	t.Parallel()
	e := newResumeEnv(t)
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("a")}}, nil)
	mustStatus(t, resp, body, 200)
	chatSID := resp.Header.Get(SessionHeader)
	first := decode[chatResp](t, body).Choices[0].Message.Content
	e.interrupt(chatSID, "restart_interrupted", 1)
	history := []any{userMsg("a"), asstMsg(first), userMsg("b")}
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, map[string]string{SessionHeader: chatSID})
	mustStatus(t, resp, body, 200)
	second := decode[chatResp](t, body).Choices[0].Message.Content
	history = append(history, asstMsg(second), userMsg("c"))
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, map[string]string{SessionHeader: chatSID})
	mustStatus(t, resp, body, 200)
	if resp.Header.Get(SessionHeader) != chatSID {
		t.Fatal("the resume note made the client's history look contradictory")
	}
	if n := len(messages(t, e.sessions, chatSID)); n != 7 {
		t.Fatalf("transcript: %s", dump(messages(t, e.sessions, chatSID)))
	}
}

// A resume_pending session older than the freshness window ends
// (resume_pending_expired); the conversation goes on in a new session
// whose parent is the old one.
func TestResumePendingExpiredStartsANewSession(t *testing.T) {
	t.Parallel()
	e := newResumeEnv(t)
	stale := e.start("stale")
	e.interrupt(stale, "restart_interrupted", 1)
	e.advance(2 * time.Hour)
	sid, text := e.next("stale")
	if sid == stale {
		t.Fatal("a resume_pending session older than the freshness window was continued")
	}
	if s := getSession(t, e.sessions, stale); s.State != sessions.StateEnded || s.EndReason != "resume_pending_expired" {
		t.Fatalf("old session: %+v", s)
	}
	if p := getSession(t, e.sessions, sid).ParentSessionID; p != stale {
		t.Fatalf("parent %q", p)
	}
	if text != echoText(1, "again") {
		t.Fatalf("the new session is not new: %q", text)
	}
	m, err := e.store.GetConversation("stale")
	if err != nil || m.SessionID != sid {
		t.Fatalf("the conversation maps to %s (%v), want %s", m.SessionID, err, sid)
	}
}

// A session interrupted SuspendAfter times in a row is suspended: the next
// request, by conversation or by header, goes to a new session whose
// parent is the old one, which ends (suspended).
func TestSuspendedStartsANewSession(t *testing.T) {
	t.Parallel()
	e := newResumeEnv(t)
	stuck := e.start("stuck")
	e.interrupt(stuck, "restart_interrupted", SuspendAfter)
	if s := getSession(t, e.sessions, stuck); s.State != sessions.StateSuspended {
		t.Fatalf("after %d interruptions: %+v", SuspendAfter, s)
	}
	sid, _ := e.next("stuck")
	if sid == stuck {
		t.Fatal("a suspended session was continued")
	}
	if s := getSession(t, e.sessions, stuck); s.State != sessions.StateEnded || s.EndReason != "suspended" {
		t.Fatalf("old session: %+v", s)
	}
	if p := getSession(t, e.sessions, sid).ParentSessionID; p != stuck {
		t.Fatalf("parent %q", p)
	}
	// A client that kept the old id reaches the session that replaced it:
	// this one's history is not that session's, so it forks from it (not
	// from the old one again, which would make a new session at every
	// request).
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("x")}}, map[string]string{SessionHeader: stuck})
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got == stuck || getSession(t, e.sessions, got).ParentSessionID != sid {
		t.Fatalf("header request went to %s, parent %s; want a fork of %s", got, getSession(t, e.sessions, got).ParentSessionID, sid)
	}
	history := []any{userMsg("x"), asstMsg(decode[chatResp](t, body).Choices[0].Message.Content), userMsg("y")}
	fork := resp.Header.Get(SessionHeader)
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, map[string]string{SessionHeader: fork})
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != fork {
		t.Fatalf("the fork did not continue: %s", got)
	}
}

// A chat client that keeps the id of a session the gateway suspended
// continues in the session that replaced it, with the same history: one
// successor, whatever the number of requests.
func TestSuspendedSessionIsFollowed(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("a")}}, nil)
	mustStatus(t, resp, body, 200)
	old := resp.Header.Get(SessionHeader)
	if _, err := e.sessions.SetState(old, sessions.StateSuspended, "restart_interrupted"); err != nil {
		t.Fatal(err)
	}
	history := []any{userMsg("a"), asstMsg(decode[chatResp](t, body).Choices[0].Message.Content)}
	var next string
	for i, text := range []string{"b", "c"} {
		history = append(history, userMsg(text))
		resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, map[string]string{SessionHeader: old})
		mustStatus(t, resp, body, 200)
		got := resp.Header.Get(SessionHeader)
		if i == 0 {
			next = got
		}
		if got == old || got != next || getSession(t, e.sessions, got).ParentSessionID != old {
			t.Fatalf("request %d with the old id went to %s (first successor %s)", i, got, next)
		}
		history = append(history, asstMsg(decode[chatResp](t, body).Choices[0].Message.Content))
	}
	if got := texts(messages(t, e.sessions, next)); strings.Count(got, "user:") != 3 {
		t.Fatalf("successor transcript %s", got)
	}
}

// Abandon (a drain that timed out) marks the sessions with turns in flight,
// cancels the turns, and a turn ending afterwards does not clear the mark.
func TestAbandonMarksTurnsInFlight(t *testing.T) {
	t.Parallel()
	entered := make(chan string, 1)
	e := newTestEnv(t, func(o *Options) {
		o.Provider = &funcProvider{name: "slow", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			entered <- req.SessionID
			<-ctx.Done()
			return provider.Reply{}, ctx.Err()
		}}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest("POST", e.ts.URL+"/v1/responses", strings.NewReader(`{"input":"long job","conversation":"job"}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	var sid string
	select {
	case sid = <-entered:
	case <-time.After(20 * time.Second): // hang guard
		t.Fatal("the turn never reached the provider")
	}
	ids, err := e.srv.Abandon("restart_timeout", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != sid {
		t.Fatalf("abandoned %v, want [%s]", ids, sid)
	}
	<-done
	s := getSession(t, e.sessions, sid)
	if s.State != sessions.StateResumePending || s.ResumeReason != "restart_timeout" || s.InterruptCount != 1 || s.ResumePendingAt == "" {
		t.Fatalf("session after abandon: %+v", s)
	}
	if msgs := messages(t, e.sessions, sid); len(msgs) != 1 || msgs[0].Text() != "long job" {
		t.Fatalf("the user message must stay: %s", dump(msgs))
	}
	// New turns are refused once abandoned.
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "x"}, nil)
	mustError(t, resp, body, 503, "server_error")
}

// Recover after an unclean stop marks recently active gateway sessions,
// but not the ones the last run's drain already marked, and suspends at the
// third interruption in a row.
func TestRecover(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	mk := func(source string) string {
		s, _, err := e.sessions.Create(sessions.Session{Source: source})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	active, chat, drained, answered, pendingAnswered := mk("gateway"), mk("chat"), mk("gateway"), mk("gateway"), mk("gateway")
	// A turn in flight (its message stored, its reply not), and turns that
	// got their reply before the crash (one of a session that was
	// resume_pending and not yet made active again): only the first was
	// interrupted.
	answer := []sessions.Message{{Role: "user", Content: sessions.TextContent("hi")}, {Role: "assistant", Content: sessions.TextContent("hello")}}
	for id, msgs := range map[string][]sessions.Message{
		active:          {{Role: "user", Content: sessions.TextContent("in flight")}},
		answered:        answer,
		pendingAnswered: answer,
	} {
		if _, err := e.sessions.Append(id, msgs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.sessions.MarkInterrupted(pendingAnswered, "restart_interrupted", SuspendAfter); err != nil {
		t.Fatal(err)
	}
	prevStart := time.Now().Add(-time.Minute)
	e.sessions.MarkInterrupted(drained, "restart_timeout", SuspendAfter)
	prev := gatewaystate.State{StartedAt: fsstore.TimeOf(prevStart)}
	marked, err := e.srv.Recover(prev)
	if err != nil {
		t.Fatal(err)
	}
	if len(marked) != 1 || marked[0].ID != active {
		t.Fatalf("marked %+v", marked)
	}
	if s := getSession(t, e.sessions, chat); s.State != sessions.StateActive {
		t.Fatalf("a chat session was marked: %+v", s)
	}
	if s := getSession(t, e.sessions, answered); s.State != sessions.StateActive || s.InterruptCount != 0 {
		t.Fatalf("a session whose turn was answered was marked interrupted: %+v", s)
	}
	if s := getSession(t, e.sessions, pendingAnswered); s.InterruptCount != 1 {
		t.Fatalf("a resume_pending session whose turn was answered was marked again: %+v", s)
	}
	if s := getSession(t, e.sessions, drained); s.InterruptCount != 1 || s.ResumeReason != "restart_timeout" {
		t.Fatalf("the drained session was marked twice: %+v", s)
	}
	// Two more unclean starts in a row: suspended.
	for range 2 {
		prev.StartedAt = fsstore.TimeOf(time.Now())
		if _, err := e.srv.Recover(prev); err != nil {
			t.Fatal(err)
		}
	}
	if s := getSession(t, e.sessions, active); s.State != sessions.StateSuspended || s.InterruptCount != SuspendAfter {
		t.Fatalf("after 3 unclean starts: %+v", s)
	}
}

// 16 clients on 4 conversations: one session per conversation, seq without
// gaps, each user message directly followed by its own reply.
func TestConcurrentConversations(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	const clients, convs, turns = 16, 4, 6
	var wg sync.WaitGroup
	errs := make(chan error, clients*turns)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := fmt.Sprintf("conv-%d", c%convs)
			for i := range turns {
				body := fmt.Sprintf(`{"input":"client %d turn %d","conversation":%q}`, c, i, conv)
				if c%2 == 1 {
					body = fmt.Sprintf(`{"input":"client %d turn %d","conversation":%q,"stream":true}`, c, i, conv)
				}
				resp, err := http.Post(e.ts.URL+"/v1/responses", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				out, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || !bytes.Contains(out, []byte(`"status":"completed"`)) {
					errs <- fmt.Errorf("client %d turn %d: status %d, %v: %s", c, i, resp.StatusCode, err, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for i := range convs {
		conv := fmt.Sprintf("conv-%d", i)
		ids := sessionsByKey(t, e.sessions, "conversation:"+conv)
		if len(ids) != 1 {
			t.Fatalf("%s has sessions %v", conv, ids)
		}
		msgs := messages(t, e.sessions, ids[0])
		checkTranscript(t, msgs)
		total += len(msgs)
	}
	if total != 2*clients*turns {
		t.Fatalf("%d messages stored, want %d", total, 2*clients*turns)
	}
}

func TestKeyedMutexWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	var k keyedMutex
	unlock, err := k.lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.lock(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("lock of a held key with a canceled context: %v", err)
	}
	other, err := k.lock(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	other()
	unlock()
	again, err := k.lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	again()
	if len(k.m) != 0 {
		t.Fatalf("entries left: %v", k.m)
	}
}
