package gateway

import (
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
)

// A conversation idle for longer than IdleEnd is ended (idle) by the
// gateway, and its next request reopens the same session, whether it
// names the session or re-sends the history; one a request holds is left
// for the next sweep, and a recent one is not touched.
func TestIdleSessionsEndAndReopen(t *testing.T) {
	t.Parallel()
	var now time.Time
	e := newTestEnv(t, func(o *Options) {
		o.IdleEnd = time.Hour
		o.Now = func() time.Time { return now }
	})
	now = time.Now()
	first := []map[string]any{{"role": "user", "content": "hello"}}
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"model": "m", "messages": first}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "hi"}}}, nil)
	mustStatus(t, resp, body, 200)
	other := resp.Header.Get(SessionHeader)
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "named"}, nil)
	mustStatus(t, resp, body, 200)
	named := resp.Header.Get(SessionHeader)
	if sid == other || sid == named {
		t.Fatalf("sessions %s %s %s", sid, other, named)
	}
	// A chat session of the same age is not the gateway's to end.
	chat, _, err := e.sessions.Create(sessions.Session{Source: "chat"})
	if err != nil {
		t.Fatal(err)
	}

	// Not idle yet: nothing ends.
	cutoff, ended, err := e.srv.EndIdle(time.Time{})
	if err != nil || len(ended) != 0 {
		t.Fatalf("EndIdle before IdleEnd = %v, %v", ended, err)
	}

	// Two hours on; a request holds one of them.
	now = now.Add(2 * time.Hour)
	unlock, err := e.srv.sessions.lock(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	_, ended, err = e.srv.EndIdle(cutoff.Add(-idleMargin))
	unlock()
	if err != nil || len(ended) != 2 {
		t.Fatalf("EndIdle = %v, %v; want %s and %s", ended, err, sid, named)
	}
	for _, id := range []string{sid, named} {
		if s := getSession(t, e.sessions, id); s.State != sessions.StateEnded || s.EndReason != endIdle {
			t.Fatalf("session %s: %s (%s), want ended (idle)", id, s.State, s.EndReason)
		}
	}
	if s := getSession(t, e.sessions, other); s.State != sessions.StateActive {
		t.Fatalf("the session a request held is %s", s.State)
	}
	if s := getSession(t, e.sessions, chat.ID); s.State != sessions.StateActive {
		t.Fatalf("the chat session is %s", s.State)
	}

	// The next request of each conversation reopens its session.
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"model": "m", "messages": append(first,
		map[string]any{"role": "assistant", "content": echoText(1, "hello")},
		map[string]any{"role": "user", "content": "again"})}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("the re-sent history went to %s, not its session %s", got, sid)
	}
	if s := getSession(t, e.sessions, sid); s.State != sessions.StateActive || s.MessageCount != 4 {
		t.Fatalf("after its next request, session %s is %s with %d messages", sid, s.State, s.MessageCount)
	}
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "back"}, map[string]string{SessionHeader: named})
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != named {
		t.Fatalf("the named session's request went to %s", got)
	}
	s := getSession(t, e.sessions, named)
	if s.State != sessions.StateActive || s.EndReason != "" || s.MessageCount != 4 {
		t.Fatalf("after its next request, session %s is %s (%s) with %d messages", named, s.State, s.EndReason, s.MessageCount)
	}
	if ids, _ := e.sessions.IDs(); len(ids) != 4 {
		t.Fatalf("sessions %v: a request made a new one", ids)
	}
}
