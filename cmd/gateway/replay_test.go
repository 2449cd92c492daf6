package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// countingEcho answers like the echo provider and counts its calls: a
// turn that runs twice calls it twice.
func countingEcho(calls *atomic.Int64) func(*Options) {
	return func(o *Options) {
		o.Provider = &funcProvider{name: "echo", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			calls.Add(1)
			h := historyOf(req.History)
			return assistant(echoText(len(h), h[len(h)-1].Text())), nil
		}}
	}
}

// texts are the texts of msgs, roles first: "user:hi".
func texts(msgs []sessions.Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Role+":"+m.Text())
	}
	return strings.Join(out, " | ")
}

// A reply that is stored is answered, even when what follows it (the
// response document, the conversation's mapping) cannot be written: the
// client gets 200 with the reply, and the turn is stored once.
func TestStoredReplyIsAnsweredWhenItsDocumentsFail(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	e := newTestEnv(t, countingEcho(&calls))
	// The responses directory cannot be made: a file has its name.
	if err := os.MkdirAll(filepath.Join(e.dir, "gateway"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "gateway", "responses"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "hello", "conversation": "c1"}, nil)
	mustStatus(t, resp, body, 200)
	if got := decode[respObj](t, body).text(); got != echoText(1, "hello") {
		t.Fatalf("reply %q", got)
	}
	sid := resp.Header.Get(SessionHeader)
	if got := texts(messages(t, e.sessions, sid)); got != "user:hello | assistant:"+echoText(1, "hello") || calls.Load() != 1 {
		t.Fatalf("%d provider calls, transcript %s", calls.Load(), got)
	}
}

// A retry with the Idempotency-Key of a turn that got its reply gets that
// reply, from the same session, and nothing runs; the key with another
// request is refused; a key whose turn failed before its reply runs the
// turn again without storing its message twice.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	failing := atomic.Bool{}
	e := newTestEnv(t, func(o *Options) {
		countingEcho(&calls)(o)
		echo := o.Provider
		o.Provider = &funcProvider{name: "echo", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			if failing.Load() {
				return provider.Reply{}, &provider.Error{Provider: "echo", Message: "down"}
			}
			return echo.Complete(ctx, req)
		}}
	})
	for _, c := range []struct {
		name, path string
		body       map[string]any
		text       func([]byte) string
	}{
		{"chat", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("hello")}},
			func(b []byte) string { return decode[chatResp](t, b).Choices[0].Message.Content }},
		{"responses", "/v1/responses", map[string]any{"input": "hello", "conversation": "k1"},
			func(b []byte) string { return decode[respObj](t, b).text() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := map[string]string{IdempotencyHeader: "key-" + c.name}
			before := calls.Load()
			resp, body := e.do("POST", c.path, c.body, key)
			mustStatus(t, resp, body, 200)
			sid, first := resp.Header.Get(SessionHeader), c.text(body)
			resp, body = e.do("POST", c.path, c.body, key)
			mustStatus(t, resp, body, 200)
			if resp.Header.Get(SessionHeader) != sid || c.text(body) != first {
				t.Fatalf("the retry got session %s, %q; want %s, %q", resp.Header.Get(SessionHeader), c.text(body), sid, first)
			}
			if n := calls.Load() - before; n != 1 {
				t.Fatalf("the provider was called %d times for one keyed turn", n)
			}
			if got := texts(messages(t, e.sessions, sid)); got != "user:hello | assistant:"+first {
				t.Fatalf("transcript %s", got)
			}
			other := map[string]any{"input": "hello there", "conversation": "k1"}
			if c.name == "chat" {
				other = map[string]any{"messages": []any{userMsg("hello there")}}
			}
			resp, body = e.do("POST", c.path, other, key)
			if e := mustError(t, resp, body, http.StatusBadRequest, "invalid_request_error"); e.Error.Code == nil || *e.Error.Code != "idempotency_key_reused" {
				t.Fatalf("the key with another request: %s", body)
			}

			// A keyed turn whose provider failed: its retry runs the turn
			// on what was stored, and the message is stored once.
			failing.Store(true)
			again := map[string]string{IdempotencyHeader: "again-" + c.name}
			body2 := map[string]any{"input": "again", "conversation": "k2"}
			if c.name == "chat" {
				body2 = map[string]any{"messages": []any{userMsg("again")}}
			}
			resp, body = e.do("POST", c.path, body2, again)
			mustError(t, resp, body, http.StatusBadGateway, "server_error")
			sid = resp.Header.Get(SessionHeader)
			failing.Store(false)
			resp, body = e.do("POST", c.path, body2, again)
			mustStatus(t, resp, body, 200)
			if got := texts(messages(t, e.sessions, sid)); resp.Header.Get(SessionHeader) != sid || got != "user:again | assistant:"+echoText(1, "again") {
				t.Fatalf("session %s (want %s), transcript %s", resp.Header.Get(SessionHeader), sid, got)
			}
		})
	}
}

// cutWriter is a client that went away before the reply: every write
// fails, as a write to a closed connection does.
type cutWriter struct{ h http.Header }

func (w *cutWriter) Header() http.Header       { return w.h }
func (w *cutWriter) Write([]byte) (int, error) { return 0, errors.New("connection reset by peer") }
func (w *cutWriter) WriteHeader(int)           {}

// cut sends a request to the gateway's handler through a connection that
// breaks before the reply is sent, and returns the session it named.
func (e *testEnv) cut(path string, body any, header map[string]string) string {
	e.t.Helper()
	b, _ := json.Marshal(body)
	r, err := http.NewRequest("POST", path, bytes.NewReader(b))
	if err != nil {
		e.t.Fatal(err)
	}
	r.Host = "127.0.0.1"
	r.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := &cutWriter{h: http.Header{}}
	e.srv.Handler().ServeHTTP(w, r)
	return w.h.Get(SessionHeader)
}

// A request that repeats a turn whose reply was stored but never reached
// the client (killed or cut off between the store and the send) gets the
// stored reply, and nothing runs; once a reply was delivered, the same
// message again is a new turn.
func TestRetryOfAnUndeliveredReply(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	e := newTestEnv(t, countingEcho(&calls))

	t.Run("conversation", func(t *testing.T) {
		req := map[string]any{"input": "hello", "conversation": "u1"}
		sid := e.cut("/v1/responses", req, nil)
		before := calls.Load()
		resp, body := e.do("POST", "/v1/responses", req, nil)
		mustStatus(t, resp, body, 200)
		if resp.Header.Get(SessionHeader) != sid || decode[respObj](t, body).text() != echoText(1, "hello") || calls.Load() != before {
			t.Fatalf("the retry: session %s (want %s), %s, %d calls", resp.Header.Get(SessionHeader), sid, body, calls.Load()-before)
		}
		if got := texts(messages(t, e.sessions, sid)); got != "user:hello | assistant:"+echoText(1, "hello") {
			t.Fatalf("transcript %s", got)
		}
		// Delivered now: the same message again is a person saying it twice.
		resp, body = e.do("POST", "/v1/responses", req, nil)
		mustStatus(t, resp, body, 200)
		if got := decode[respObj](t, body).text(); got != echoText(3, "hello") {
			t.Fatalf("the same message after its reply was delivered: %q", got)
		}
	})

	// A session suspended after the reply was stored (restarts while the
	// client retried) still answers the retry: the turn does not run again
	// in a successor.
	t.Run("suspended since", func(t *testing.T) {
		req := map[string]any{"input": "hi", "conversation": "u2"}
		sid := e.cut("/v1/responses", req, nil)
		if _, err := e.sessions.SetState(sid, sessions.StateSuspended, "restart_interrupted"); err != nil {
			t.Fatal(err)
		}
		before := calls.Load()
		resp, body := e.do("POST", "/v1/responses", req, nil)
		mustStatus(t, resp, body, 200)
		if resp.Header.Get(SessionHeader) != sid || decode[respObj](t, body).text() != echoText(1, "hi") || calls.Load() != before {
			t.Fatalf("the retry: session %s (want %s), %s, %d calls", resp.Header.Get(SessionHeader), sid, body, calls.Load()-before)
		}
	})

	t.Run("previous_response_id", func(t *testing.T) {
		resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "one"}, nil)
		mustStatus(t, resp, body, 200)
		sid, prev := resp.Header.Get(SessionHeader), decode[respObj](t, body).ID
		req := map[string]any{"input": "two", "previous_response_id": prev}
		e.cut("/v1/responses", req, nil)
		before := calls.Load()
		resp, body = e.do("POST", "/v1/responses", req, nil)
		mustStatus(t, resp, body, 200)
		if resp.Header.Get(SessionHeader) != sid || decode[respObj](t, body).text() != echoText(3, "two") || calls.Load() != before {
			t.Fatalf("the retry: session %s (want %s, not a fork), %s, %d calls", resp.Header.Get(SessionHeader), sid, body, calls.Load()-before)
		}
	})

	t.Run("chat", func(t *testing.T) {
		resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("a")}}, nil)
		mustStatus(t, resp, body, 200)
		sid := resp.Header.Get(SessionHeader)
		history := []any{userMsg("a"), asstMsg(echoText(1, "a")), userMsg("b")}
		hdr := map[string]string{SessionHeader: sid}
		e.cut("/v1/chat/completions", map[string]any{"messages": history}, hdr)
		before := calls.Load()
		resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, hdr)
		mustStatus(t, resp, body, 200)
		if resp.Header.Get(SessionHeader) != sid || decode[chatResp](t, body).Choices[0].Message.Content != echoText(3, "b") || calls.Load() != before {
			t.Fatalf("the retry: session %s (want %s, not a fork), %s, %d calls", resp.Header.Get(SessionHeader), sid, body, calls.Load()-before)
		}
		if got := texts(messages(t, e.sessions, sid)); strings.Count(got, "user:b") != 1 {
			t.Fatalf("transcript %s", got)
		}
	})
}

// A keyed turn killed before even its input was stored (its key's record
// is written first): the retry stores the input once and answers it, not
// the message before it. The crash loop's gateway phase found a retry
// answered with the previous turn's reply.
func TestIdempotencyKeyBeforeTheInputWasStored(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	e := newTestEnv(t, countingEcho(&calls))
	for _, c := range []struct {
		name, path  string
		first, next map[string]any
		text        func([]byte) string
	}{
		{"chat", "/v1/chat/completions",
			map[string]any{"messages": []any{userMsg("one")}},
			nil,
			func(b []byte) string { return decode[chatResp](t, b).Choices[0].Message.Content }},
		{"responses", "/v1/responses",
			map[string]any{"input": "one", "conversation": "kb"},
			map[string]any{"input": "two", "conversation": "kb"},
			func(b []byte) string { return decode[respObj](t, b).text() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := e.do("POST", c.path, c.first, nil)
			mustStatus(t, resp, body, 200)
			sid := resp.Header.Get(SessionHeader)
			next := c.next
			if next == nil {
				next = map[string]any{"messages": []any{userMsg("one"), asstMsg(c.text(body)), userMsg("two")}}
			}
			// What the first attempt left: its key's record, pointing past
			// the transcript's end, and nothing else.
			key := "killed-" + c.name
			req := httptest.NewRequest("POST", c.path, nil)
			req.Header.Set(SessionHeader, map[bool]string{true: sid, false: ""}[c.name == "chat"])
			var decoded any
			if c.name == "chat" {
				var r chatRequest
				b, _ := json.Marshal(next)
				json.Unmarshal(b, &r)
				decoded = &r
			} else {
				var r responsesRequest
				b, _ := json.Marshal(next)
				json.Unmarshal(b, &r)
				decoded = &r
			}
			rec := gatewaystate.Key{KeySHA256: gatewaystate.KeyDigest(key), RequestSHA256: requestDigest(req, decoded), SessionID: sid, From: 3}
			if err := e.store.PutKey(rec); err != nil {
				t.Fatal(err)
			}
			hdr := map[string]string{IdempotencyHeader: key}
			if c.name == "chat" {
				hdr[SessionHeader] = sid
			}
			resp, body = e.do("POST", c.path, next, hdr)
			mustStatus(t, resp, body, 200)
			if got := c.text(body); got != echoText(3, "two") {
				t.Fatalf("the retry answered %q, want the answer to its own message", got)
			}
			if got := texts(messages(t, e.sessions, sid)); strings.Count(got, "user:two") != 1 {
				t.Fatalf("transcript %s", got)
			}
		})
	}
}
