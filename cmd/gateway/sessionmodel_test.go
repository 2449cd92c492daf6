package gateway

import (
	"testing"

	"github.com/hermes/hermes/fsstore/sessions"
)

// A session the gateway makes records the model the request names, else
// the configured one: a new conversation on either endpoint, a fork of an
// edited history, and the successor of a suspended session.
func TestSessionRecordsRequestModel(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.Model = "configured" })
	model := func(sid string) string { return getSession(t, e.sessions, sid).Model }

	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"model": "x", "messages": []any{userMsg("a")}}, nil)
	mustStatus(t, resp, body, 200)
	chat := resp.Header.Get(SessionHeader)
	if got := model(chat); got != "x" {
		t.Fatalf("chat completion with model x: the session records %q", got)
	}

	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("b")}}, nil)
	mustStatus(t, resp, body, 200)
	if got := model(resp.Header.Get(SessionHeader)); got != "configured" {
		t.Fatalf("chat completion naming no model: the session records %q, want the configured one", got)
	}

	resp, body = e.do("POST", "/v1/responses", map[string]any{"model": "y", "input": "c", "conversation": "conv-model"}, nil)
	mustStatus(t, resp, body, 200)
	if got := model(resp.Header.Get(SessionHeader)); got != "y" {
		t.Fatalf("response with model y in a new conversation: the session records %q", got)
	}

	edited := []any{userMsg("a"), asstMsg("not what was said"), userMsg("d")}
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"model": "z", "messages": edited}, map[string]string{SessionHeader: chat})
	mustStatus(t, resp, body, 200)
	fork := resp.Header.Get(SessionHeader)
	if fork == chat || model(fork) != "z" {
		t.Fatalf("an edited history with model z went to %s (from %s), which records %q", fork, chat, model(fork))
	}

	if _, err := e.sessions.SetState(fork, sessions.StateSuspended, "restart_interrupted"); err != nil {
		t.Fatal(err)
	}
	resp, body = e.do("POST", "/v1/responses", map[string]any{"model": "w", "input": "e"}, map[string]string{SessionHeader: fork})
	mustStatus(t, resp, body, 200)
	next := resp.Header.Get(SessionHeader)
	if next == fork || model(next) != "w" {
		t.Fatalf("a suspended session's successor for model w is %s (from %s), which records %q", next, fork, model(next))
	}
}
