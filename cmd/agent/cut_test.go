package agent

import (
	"testing"

	"github.com/hermes/hermes/fsstore/sessions"
)

// CutAt finds the reply a turn was cut short in: one that ends with the
// engine's own calls, answered or not. A reply that calls no tool, or
// hands a call to the client, or stopped at the step limit, ended its
// turn; so did nothing at all.
func TestCutAt(t *testing.T) {
	t.Parallel()
	e := &Engine{Tools: []Tool{&fakeTool{name: "terminal"}}, ClientTools: true}
	u := user("go")[0]
	result := func(s string) sessions.Message {
		return sessions.Message{Role: "tool", ToolCallID: "c", Content: sessions.TextContent(s)}
	}
	resume := note(sessions.Message{Role: "system", Content: sessions.TextContent(ResumeNote("restart_interrupted"))})
	limit := note(sessions.Message{Role: "system", Content: sessions.TextContent(stepLimitNote + "3 steps")})
	for _, tc := range []struct {
		name string
		msgs []sessions.Message
		want int
	}{
		{"no reply", []sessions.Message{u}, 1},
		{"a whole reply", []sessions.Message{u, calls("terminal", "{}"), result("ok"), text("done")}, 4},
		{"killed while the tool ran", []sessions.Message{u, calls("terminal", "{}")}, 1},
		{"killed before the model's next call", []sessions.Message{u, calls("terminal", "{}"), result("ok")}, 1},
		{"answered as interrupted, then killed", []sessions.Message{u, calls("terminal", "{}"), note(result("interrupted")), resume}, 1},
		{"a call for the client", []sessions.Message{u, calls("client_fn", "{}")}, 2},
		{"a call for the client and one of ours", []sessions.Message{u, calls("terminal", "{}", "client_fn", "{}")}, 2},
		{"the client's result, then cut", []sessions.Message{u, calls("client_fn", "{}"), result("7"), calls("terminal", "{}")}, 3},
		{"the step limit", []sessions.Message{u, calls("terminal", "{}"), result("not run"), limit}, 4},
		{"a later turn's input", []sessions.Message{u, calls("terminal", "{}"), result("ok"), user("next")[0]}, 4},
	} {
		if got := e.CutAt(tc.msgs); got != tc.want {
			t.Errorf("%s: CutAt = %d, want %d", tc.name, got, tc.want)
		}
	}
	chat := &Engine{Tools: e.Tools}
	if got := chat.CutAt([]sessions.Message{u, calls("other", "{}")}); got != 1 {
		t.Errorf("without ClientTools every call is the engine's to answer: CutAt = %d, want 1", got)
	}
}
