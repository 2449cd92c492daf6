package gateway

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes/hermes/cmd/agent"
)

// With gateway.instructions, a conversation's first turn stores the
// AGENTS.md of the gateway's directory as a note: the client's history,
// which does not hold it, still continues the same session, and the note
// is not stored again.
func TestInstructionsAtTheFirstTurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, agent.InstructionsFile), []byte("run the tests\n"), 0o644)
	e := newTestEnv(t, func(o *Options) {
		o.ToolEnv.Cwd = dir
		o.Instructions = &agent.Instructions{}
	})
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"model": "x", "messages": []any{userMsg("hi")}}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	first := decode[chatResp](t, body).Choices[0].Message.Content
	if first != echoText(2, "hi") {
		t.Fatalf("reply %q: the model did not get the instructions", first)
	}
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{
		"model": "x", "messages": []any{userMsg("hi"), asstMsg(first), userMsg("more")},
	}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("continued in %s, want %s", got, sid)
	}
	msgs := messages(t, e.sessions, sid)
	n := 0
	for _, m := range msgs {
		if agent.IsInstructions(m) {
			n++
		}
	}
	if len(msgs) != 5 || n != 1 || !agent.IsInstructions(msgs[0]) {
		t.Fatalf("instructions stored %d times in:\n%s", n, dump(msgs))
	}
	checkTranscript(t, msgs)
}
