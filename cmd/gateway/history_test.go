package gateway

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// restart starts a new server on e's profile, as a restarted gateway
// would be, and points e at it.
func (e *testEnv) restart(mod func(*Options)) {
	e.t.Helper()
	e.ts.Close()
	opts := e.srv.opts
	if mod != nil {
		mod(&opts)
	}
	e.srv = New(opts)
	e.ts = httptest.NewUnstartedServer(e.srv.Handler())
	e.ts.Config.BaseContext = func(net.Listener) context.Context { return e.srv.BaseContext() }
	e.ts.Start()
	e.t.Cleanup(e.ts.Close)
}

// gatewaySessions are the ids of the profile's sessions.
func gatewaySessions(t *testing.T, st *sessions.Store) []string {
	t.Helper()
	all, err := st.All()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID)
	}
	return ids
}

// statelessChat has a stateless client send texts, one turn each, the
// whole history every time, and returns the session of the last turn and
// the history the client then holds.
func statelessChat(e *testEnv, texts ...string) (string, []any) {
	e.t.Helper()
	var history []any
	var sid string
	for _, text := range texts {
		history = append(history, userMsg(text))
		resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
		mustStatus(e.t, resp, body, 200)
		sid = resp.Header.Get(SessionHeader)
		history = append(history, asstMsg(decode[chatResp](e.t, body).Choices[0].Message.Content))
	}
	return sid, history
}

// A client that re-sends its whole conversation and names none (the SDKs'
// stateless loops) has one session, across a restart.
func TestStatelessChatIsOneSession(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	var history []any
	var sid string
	for i, text := range []string{"one", "two", "three", "four", "five"} {
		if i == 3 {
			e.restart(nil)
		}
		history = append(history, userMsg(text))
		resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
		mustStatus(t, resp, body, 200)
		if i == 0 {
			sid = resp.Header.Get(SessionHeader)
		} else if got := resp.Header.Get(SessionHeader); got != sid {
			t.Fatalf("turn %d went to session %s, not %s", i+1, got, sid)
		}
		history = append(history, asstMsg(decode[chatResp](t, body).Choices[0].Message.Content))
	}
	if ids := gatewaySessions(t, e.sessions); len(ids) != 1 {
		t.Fatalf("%d sessions: %v", len(ids), ids)
	}
	checkTranscript(t, messages(t, e.sessions, sid))
	if n := len(messages(t, e.sessions, sid)); n != 10 {
		t.Fatalf("%d messages stored, want 10", n)
	}
}

// The same over /v1/responses with store:false and the whole input re-sent
// (Codex CLI's way), with the assistant's items as a client echoes them.
func TestStatelessResponsesIsOneSession(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	var input []any
	var sid string
	for i, text := range []string{"one", "two", "three", "four", "five"} {
		if i == 3 {
			e.restart(nil)
		}
		input = append(input, map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}})
		resp, body := e.do("POST", "/v1/responses", map[string]any{"input": input, "store": false, "instructions": "be brief"}, nil)
		mustStatus(t, resp, body, 200)
		if i == 0 {
			sid = resp.Header.Get(SessionHeader)
		} else if got := resp.Header.Get(SessionHeader); got != sid {
			t.Fatalf("turn %d went to session %s, not %s", i+1, got, sid)
		}
		out := decode[respObj](t, body)
		input = append(input, map[string]any{"type": "message", "role": "assistant", "id": out.Output[0].ID,
			"content": []any{map[string]any{"type": "output_text", "text": out.text()}}})
	}
	if ids := gatewaySessions(t, e.sessions); len(ids) != 1 {
		t.Fatalf("%d sessions: %v", len(ids), ids)
	}
	msgs := messages(t, e.sessions, sid)
	if got := texts(msgs); strings.Count(got, "user:") != 5 || strings.Count(got, "system:be brief") != 1 {
		t.Fatalf("transcript %s", got)
	}
}

// A regenerate (the last user message again, its reply delivered) and an
// edit (a message before the last changed) fork: a new session whose
// parent is the original, holding the history up to the point they
// depart; the original is never touched.
func TestStatelessRegenerateAndEditFork(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	sid, history := statelessChat(e, "one", "two", "three")
	original := texts(messages(t, e.sessions, sid))

	for name, c := range map[string]struct {
		history []any
		kept    int // messages of the original the fork holds
	}{
		"regenerate": {history[:5], 4},
		"edit":       {append(append([]any{}, history[:2]...), userMsg("TWO, edited")), 2},
	} {
		t.Run(name, func(t *testing.T) {
			resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": c.history}, nil)
			mustStatus(t, resp, body, 200)
			fork := resp.Header.Get(SessionHeader)
			if fork == sid || getSession(t, e.sessions, fork).ParentSessionID != sid {
				// What tells the routes apart: a regenerate answered from
				// the original is a replay of a reply judged undelivered.
				delivered, err := e.store.Delivered(sid)
				t.Fatalf("went to %s (parent %q, transcript %s); want a fork of %s (transcript %s, delivered %d, %v)",
					fork, getSession(t, e.sessions, fork).ParentSessionID, texts(messages(t, e.sessions, fork)),
					sid, texts(messages(t, e.sessions, sid)), delivered, err)
			}
			msgs := messages(t, e.sessions, fork)
			if len(msgs) != c.kept+2 || texts(msgs[:c.kept]) != texts(messages(t, e.sessions, sid)[:c.kept]) {
				t.Fatalf("fork holds %s", texts(msgs))
			}
			if got := texts(messages(t, e.sessions, sid)); got != original {
				t.Fatalf("the original changed:\n%s\nwas\n%s", got, original)
			}
		})
	}
}

// A turn that failed after its message was stored, retried with the same
// conversation: the same session, the message stored once.
func TestStatelessRetryAfterAFailedTurn(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	e := newTestEnv(t, func(o *Options) {
		echo, _ := provider.New(provider.Config{Name: "echo"})
		o.Provider = &funcProvider{name: "echo", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			if failing.Load() {
				return provider.Reply{}, &provider.Error{Provider: "echo", Message: "down"}
			}
			return echo.Complete(ctx, req)
		}}
	})
	history := []any{userMsg("one")}
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	history = append(history, asstMsg(decode[chatResp](t, body).Choices[0].Message.Content), userMsg("two"))
	failing.Store(true)
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
	mustError(t, resp, body, http.StatusBadGateway, "server_error")
	failing.Store(false)
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("the retry went to %s, not %s", got, sid)
	}
	if got := texts(messages(t, e.sessions, sid)); strings.Count(got, "user:two") != 1 || strings.Count(got, "assistant:") != 2 {
		t.Fatalf("transcript %s", got)
	}
}

// The index is a cache: an entry whose session no longer holds that
// history is not used, and the request starts a new session.
func TestStaleHistoryIndexIsNotTrusted(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	history := []any{userMsg("one")}
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	reply := decode[chatResp](t, body).Choices[0].Message.Content
	// The session's transcript is replaced by another of the same length
	// (a forced save): the entry for "one" no longer holds.
	if _, err := e.sessions.Save(sid, []sessions.Message{{Role: "user", Content: sessions.TextContent("other")},
		{Role: "assistant", Content: sessions.TextContent(reply)}}, true); err != nil {
		t.Fatal(err)
	}
	history = append(history, asstMsg(reply), userMsg("two"))
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got == sid {
		t.Fatal("the stale entry was followed into a session without that history")
	}
}

// The history index is a cache: lost whole (a power cut before the page
// cache reached the disk), RebuildHistory (fsck --repair) writes it again
// from the transcripts, and the conversation goes on in its session.
func TestRebuildHistory(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	sid, history := statelessChat(e, "one", "two", "three")
	if err := os.RemoveAll(filepath.Join(e.store.Dir, "history")); err != nil {
		t.Fatal(err)
	}
	n, err := RebuildHistory(e.sessions, e.store)
	if err != nil || n != 3 {
		t.Fatalf("RebuildHistory = %d, %v; want the 3 turns' entries", n, err)
	}
	if n, err := RebuildHistory(e.sessions, e.store); err != nil || n != 0 {
		t.Fatalf("a second RebuildHistory = %d, %v; want nothing to write", n, err)
	}
	history = append(history, userMsg("four"))
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("after the rebuild the conversation went to %s, not %s", got, sid)
	}
}

// A client that names its own thread (Codex CLI's thread-id header) keeps
// its session when what it re-sends is no longer the stored history (a
// compacted one, which no digest finds), and a thread not seen before is
// still found by its history.
func TestThreadHeader(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	item := func(role, text string) map[string]any {
		kind := "input_text"
		if role == "assistant" {
			kind = "output_text"
		}
		return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": kind, "text": text}}}
	}
	turn := func(thread string, input []any) (string, string) {
		t.Helper()
		hdr := map[string]string{}
		if thread != "" {
			hdr["thread-id"] = thread
		}
		resp, body := e.do("POST", "/v1/responses", map[string]any{"input": input, "store": false}, hdr)
		mustStatus(t, resp, body, 200)
		return resp.Header.Get(SessionHeader), decode[respObj](t, body).text()
	}
	// A first turn without the header, then the thread's: found by its
	// history, and the thread maps to that session from then on.
	input := []any{item("user", "one")}
	sid, reply := turn("", input)
	input = append(input, item("assistant", reply), item("user", "two"))
	if got, _ := turn("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", input); got != sid {
		t.Fatalf("the thread's first request went to %s, not %s", got, sid)
	}
	// Compacted: a summary in place of the history. No digest finds it;
	// the thread does, and its text is appended.
	compacted := []any{item("user", "summary of the conversation so far"), item("user", "three")}
	if got, _ := turn("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", compacted); got != sid {
		t.Fatalf("the compacted thread went to %s, not %s", got, sid)
	}
	if got := texts(messages(t, e.sessions, sid)); strings.Count(got, "user:") != 4 || !strings.HasSuffix(got, "assistant:"+echoText(6, "three")) {
		t.Fatalf("transcript %s", got)
	}
	// Another thread with a history no session has: a new session.
	if got, _ := turn("another-thread", []any{item("user", "elsewhere")}); got == sid {
		t.Fatal("another thread went to the first one's session")
	}
}

// An edited first message forks when anything links it to the session: a
// session the client names, or a thread; sent with no id at all, it
// shares nothing with any stored conversation and starts a new session
// (cmd/gateway/doc.go).
func TestEditedFirstMessageForks(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("one")}}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	history := []any{userMsg("one"), asstMsg(decode[chatResp](t, body).Choices[0].Message.Content), userMsg("two")}
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
	mustStatus(t, resp, body, 200)
	original := texts(messages(t, e.sessions, sid))

	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("ONE, edited")}}, map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	fork := resp.Header.Get(SessionHeader)
	if fork == sid || getSession(t, e.sessions, fork).ParentSessionID != sid {
		t.Fatalf("the edit went to %s (parent %q), want a fork of %s", fork, getSession(t, e.sessions, fork).ParentSessionID, sid)
	}
	if got := texts(messages(t, e.sessions, fork)); !strings.HasPrefix(got, "user:ONE, edited | assistant:") {
		t.Fatalf("fork holds %s", got)
	}
	if got := texts(messages(t, e.sessions, sid)); got != original {
		t.Fatalf("the original changed: %s", got)
	}
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("ONE, edited again")}}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got == sid || got == fork || getSession(t, e.sessions, got).ParentSessionID != "" {
		t.Fatalf("an unlinked first message went to %s", got)
	}
}
