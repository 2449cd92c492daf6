package gateway

import (
	"testing"
)

// X-Hermes-Session-Id on /v1/responses continues that session, as on chat
// completions: an unknown id is a 404, an id that cannot be one a 400, and
// nothing is made for either.
func TestResponsesSessionHeader(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "first"}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)

	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "second"}, map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("the header named %s, the turn went to %s", sid, got)
	}
	if got := decode[respObj](t, body).text(); got != echoText(3, "second") {
		t.Fatalf("text %q", got)
	}
	msgs := messages(t, e.sessions, sid)
	checkTranscript(t, msgs)
	if len(msgs) != 4 {
		t.Fatalf("transcript %s", dump(msgs))
	}

	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "x"}, map[string]string{SessionHeader: "20260101_000000_abcdef"})
	er := mustError(t, resp, body, 404, "invalid_request_error")
	if er.Error.Code == nil || *er.Error.Code != "session_not_found" || er.Error.Param == nil || *er.Error.Param != SessionHeader {
		t.Fatalf("unknown session: %s", body)
	}
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "x"}, map[string]string{SessionHeader: "../x"})
	er = mustError(t, resp, body, 400, "invalid_request_error")
	if er.Error.Param == nil || *er.Error.Param != SessionHeader {
		t.Fatalf("invalid session id: %s", body)
	}
	if ids, _ := e.sessions.IDs(); len(ids) != 1 {
		t.Fatalf("sessions %v", ids)
	}
}

// The header wins over conversation and previous_response_id: the turn
// goes to the named session, and the conversation's mapping stays where it
// was.
func TestResponsesSessionHeaderWins(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "in c1", "conversation": "c1"}, nil)
	mustStatus(t, resp, body, 200)
	conv := resp.Header.Get(SessionHeader)
	prev := decode[respObj](t, body).ID
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "named"}, nil)
	mustStatus(t, resp, body, 200)
	named := resp.Header.Get(SessionHeader)

	for _, req := range []map[string]any{
		{"input": "over the conversation", "conversation": "c1"},
		{"input": "over the previous response", "previous_response_id": prev},
	} {
		resp, body = e.do("POST", "/v1/responses", req, map[string]string{SessionHeader: named})
		mustStatus(t, resp, body, 200)
		if got := resp.Header.Get(SessionHeader); got != named {
			t.Fatalf("%v went to %s, not the named %s", req, got, named)
		}
	}
	checkTranscript(t, messages(t, e.sessions, named))
	if n := len(messages(t, e.sessions, named)); n != 6 {
		t.Fatalf("named session has %d messages", n)
	}
	if n := len(messages(t, e.sessions, conv)); n != 2 {
		t.Fatalf("the conversation's session has %d messages", n)
	}
	if m, err := e.store.GetConversation("c1"); err != nil || m.SessionID != conv {
		t.Fatalf("mapping %+v, %v", m, err)
	}
}

// A client that sends its whole history each time (Codex, store:false)
// with the header has only what the session does not hold yet appended; a
// history that departs from the stored one (a regenerate, an edit) goes to
// a new session whose parent is the named one, which stays as it was.
func TestResponsesSessionHeaderWholeHistory(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "one", "instructions": "be brief", "store": false}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	first := decode[respObj](t, body).text()

	history := []any{userMsg("one"), asstMsg(first), userMsg("two")}
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": history, "instructions": "be brief", "store": false},
		map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	if resp.Header.Get(SessionHeader) != sid {
		t.Fatal("the whole history went to another session")
	}
	msgs := messages(t, e.sessions, sid)
	if len(msgs) != 5 || msgs[3].Text() != "two" {
		t.Fatalf("transcript %s", dump(msgs))
	}
	checkTranscript(t, msgs)

	// A regenerate of the second turn: the history up to its user message.
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": history, "instructions": "be brief", "store": false},
		map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	fork := resp.Header.Get(SessionHeader)
	if fork == sid || getSession(t, e.sessions, fork).ParentSessionID != sid {
		t.Fatalf("regenerate went to %s (parent %q)", fork, getSession(t, e.sessions, fork).ParentSessionID)
	}
	if n := len(messages(t, e.sessions, sid)); n != 5 {
		t.Fatalf("the named session has %d messages after the regenerate", n)
	}
	fm := messages(t, e.sessions, fork)
	if len(fm) != 5 || fm[1].Text() != "one" || fm[3].Text() != "two" {
		t.Fatalf("fork %s", dump(fm))
	}
}
