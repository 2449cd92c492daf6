package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/profiles"
)

// gateway.hooks: a conversation's first turn runs the SessionStart hooks
// (source new) and each turn the UserPromptSubmit hooks of its last user
// message; their context is stored as notes, which the client's history
// does not hold and still continues the same session. A refused prompt
// is a 400 and stores nothing.
func TestGatewayHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set, err := hooks.New("gateway.hooks", profiles.Hooks{
		hooks.SessionStart:     {{Command: `cat >> events.jsonl; echo >> events.jsonl; echo 'the project is hermes'`}},
		hooks.UserPromptSubmit: {{Command: `in=$(cat); echo "$in" >> events.jsonl; case "$in" in *secret*) echo 'no secrets' >&2; exit 2;; esac`}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(o *Options) {
		o.ToolEnv.Cwd = dir
		o.Hooks = set
	})
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"model": "x", "messages": []any{userMsg("hi")}}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	first := decode[chatResp](t, body).Choices[0].Message.Content
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{
		"model": "x", "messages": []any{userMsg("hi"), asstMsg(first), userMsg("more")},
	}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("continued in %s, want %s", got, sid)
	}
	msgs := messages(t, e.sessions, sid)
	if len(msgs) != 5 || !agent.IsNote(msgs[0]) || msgs[0].Text() != "the project is hermes" || msgs[1].Text() != "hi" {
		t.Fatalf("transcript:\n%s", dump(msgs))
	}
	checkTranscript(t, msgs)
	b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"session_id":"`+sid+`"`) || !strings.Contains(lines[0], `"hook_event_name":"SessionStart","source":"new"`) ||
		!strings.Contains(lines[1], `"prompt":"hi"`) || !strings.Contains(lines[2], `"prompt":"more"`) {
		t.Fatalf("hook inputs:\n%s", b)
	}

	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"model": "x", "messages": []any{userMsg("my secret")}}, nil)
	if got := mustError(t, resp, body, 400, "invalid_request_error"); !strings.Contains(*got.Error.Message, "no secrets") {
		t.Errorf("message %q", *got.Error.Message)
	}
	if refused := resp.Header.Get(SessionHeader); refused != "" {
		if msgs := messages(t, e.sessions, refused); len(msgs) != 0 {
			t.Errorf("the refused prompt's session holds:\n%s", dump(msgs))
		}
	}
}

// A conversation the gateway ends as idle runs its SessionEnd hooks
// (reason idle).
func TestGatewayIdleSessionEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set, err := hooks.New("gateway.hooks", profiles.Hooks{hooks.SessionEnd: {{Command: `cat >> ended.jsonl; echo >> ended.jsonl`}}})
	if err != nil {
		t.Fatal(err)
	}
	var now time.Time
	e := newTestEnv(t, func(o *Options) {
		o.ToolEnv.Cwd = dir
		o.Hooks = set
		o.IdleEnd = time.Hour
		o.Now = func() time.Time { return now }
	})
	now = time.Now()
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"model": "m", "messages": []any{userMsg("hello")}}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	now = now.Add(2 * time.Hour)
	if _, ended, err := e.srv.EndIdle(time.Time{}); err != nil || len(ended) != 1 {
		t.Fatalf("EndIdle = %v, %v", ended, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "ended.jsonl"))
	if !strings.Contains(string(b), `"session_id":"`+sid+`"`) || !strings.Contains(string(b), `"hook_event_name":"SessionEnd","reason":"idle"`) {
		t.Errorf("SessionEnd input: %s", b)
	}
}
