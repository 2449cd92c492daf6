package agent

import (
	"context"
	"encoding/json"
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

// Ended judges a turn's reply (what it stored after its input) as CutAt
// does, from the names of the engine's tools alone, which is what a
// transcript line can record; a reply without an assistant message (a
// provider that failed at once) ended nothing.
func TestEnded(t *testing.T) {
	t.Parallel()
	ours := func(name string) bool { return name == "terminal" }
	result := sessions.Message{Role: "tool", ToolCallID: "c", Content: sessions.TextContent("ok")}
	limit := note(sessions.Message{Role: "system", Content: sessions.TextContent(stepLimitNote + "3 steps")})
	failed := note(sessions.Message{Role: "system", Content: sessions.TextContent("Note: a model call failed")})
	for _, tc := range []struct {
		name  string
		reply []sessions.Message
		want  bool
	}{
		{"nothing", nil, false},
		{"a failed call's note", []sessions.Message{failed}, false},
		{"a whole reply", []sessions.Message{calls("terminal", "{}"), result, text("done")}, true},
		{"killed while the tool ran", []sessions.Message{calls("terminal", "{}")}, false},
		{"killed before the model's next call", []sessions.Message{calls("terminal", "{}"), result}, false},
		{"a call for the client", []sessions.Message{calls("client_fn", "{}")}, true},
		{"the step limit", []sessions.Message{calls("terminal", "{}"), result, limit}, true},
	} {
		if got := Ended(tc.reply, ours); got != tc.want {
			t.Errorf("%s: Ended = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A turn's Mark is on every message it stores after its input, in the
// same line: the replies and the results of the engine's tools; the input
// has none.
func TestTurnMark(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	p := &scripted{t: t, replies: []sessions.Message{calls("echo", `{"a":1}`), text("done")}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{&fakeTool{name: "echo"}}}
	mark := map[string]json.RawMessage{"hermes_response": json.RawMessage(`{"id":"r1"}`)}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Mark: mark}); err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, st, id)
	if len(msgs) != 4 {
		t.Fatalf("stored:\n%s", dumpMsgs(msgs))
	}
	for i, m := range msgs {
		got, want := string(m.Extra["hermes_response"]), `{"id":"r1"}`
		if i == 0 {
			want = ""
		}
		if got != want {
			t.Errorf("message %d (%s): mark %q, want %q", i+1, m.Role, got, want)
		}
	}
}
