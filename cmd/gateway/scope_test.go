package gateway

import (
	"testing"
)

// With several API keys, each key's clients reach only what that key's
// clients made: sessions, stored responses, conversations, idempotency
// keys and histories. The same requests sent with two keys give two of
// everything, and naming the other key's session or response is a 404.
func TestKeysKeepConversationsApart(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) {
		o.APIKey = "k0"
		o.Keys = []Key{{Name: "alice", Secret: "ka"}, {Name: "bob", Secret: "kb"}}
	})
	as := func(secret string, kv ...string) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + secret}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	opening := map[string]any{"messages": []any{userMsg("hello")}}
	sids := map[string]string{}
	for _, k := range []string{"k0", "ka", "kb"} {
		resp, body := e.do("POST", "/v1/chat/completions", opening, as(k))
		mustStatus(t, resp, body, 200)
		sids[k] = resp.Header.Get(SessionHeader)
	}
	if sids["k0"] == sids["ka"] || sids["ka"] == sids["kb"] || sids["k0"] == sids["kb"] {
		t.Fatalf("the same opening under three keys went to sessions %v", sids)
	}
	for k, name := range map[string]string{"k0": "", "ka": "alice", "kb": "bob"} {
		if got := getSession(t, e.sessions, sids[k]).GatewayKey; got != name {
			t.Errorf("the session of key %s records gateway_key %q, want %q", k, got, name)
		}
	}

	// The history alice's client holds, re-sent by bob's: bob's own
	// conversation, not alice's session.
	resp, body := e.do("POST", "/v1/chat/completions", opening, as("ka", RetryCountHeader, "1"))
	mustStatus(t, resp, body, 200)
	hi := decode[chatResp](t, body).Choices[0].Message.Content
	history := map[string]any{"messages": []any{userMsg("hello"), asstMsg(hi), userMsg("more")}}
	resp, body = e.do("POST", "/v1/chat/completions", history, as("kb"))
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got == sids["ka"] || getSession(t, e.sessions, got).GatewayKey != "bob" {
		t.Fatalf("bob's request with alice's history went to %s (alice's is %s)", got, sids["ka"])
	}

	// Naming another key's session.
	resp, body = e.do("POST", "/v1/chat/completions", opening, as("kb", SessionHeader, sids["ka"]))
	mustCode(t, resp, body, 404, "session_not_found")

	// One Idempotency-Key under two keys names two turns.
	other := map[string]any{"messages": []any{userMsg("something else")}}
	resp, body = e.do("POST", "/v1/chat/completions", opening, as("ka", IdempotencyHeader, "turn-1"))
	mustStatus(t, resp, body, 200)
	keyedA := resp.Header.Get(SessionHeader)
	resp, body = e.do("POST", "/v1/chat/completions", other, as("kb", IdempotencyHeader, "turn-1"))
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got == keyedA {
		t.Fatalf("bob's Idempotency-Key was answered from alice's turn in %s", got)
	}

	// A Responses conversation slug under two keys, and a stored response.
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "hi", "conversation": "c1"}, as("ka"))
	mustStatus(t, resp, body, 200)
	convA, respA := resp.Header.Get(SessionHeader), decode[map[string]any](t, body)["id"].(string)
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "hi", "conversation": "c1"}, as("kb"))
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got == convA {
		t.Fatalf("bob's conversation c1 went to alice's session %s", got)
	}
	resp, body = e.do("GET", "/v1/responses/"+respA, nil, as("kb"))
	mustCode(t, resp, body, 404, "response_not_found")
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "and?", "previous_response_id": respA}, as("kb"))
	mustCode(t, resp, body, 404, "previous_response_not_found")
	resp, body = e.do("GET", "/v1/responses/"+respA, nil, as("ka"))
	mustStatus(t, resp, body, 200)
}
