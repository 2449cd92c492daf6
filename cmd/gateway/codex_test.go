package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// The items below are the JSON Codex CLI (wire_api = "responses") sends in
// input, as its ResponseItem serializes them (codex-rs/protocol's
// models.rs: serde tag "type", snake_case, ids not serialized).
const (
	codexUser      = `{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files, then add b.txt"}]}`
	codexReasoning = `{"type":"reasoning","summary":[{"type":"summary_text","text":"**Listing files**"}],"content":null,"encrypted_content":"gAAAAABoZ2V0"}`
	codexShell     = `{"type":"local_shell_call","call_id":"call_ls","status":"completed","action":{"type":"exec","command":["bash","-lc","ls"],"timeout_ms":10000,"working_directory":null,"env":null,"user":null}}`
	codexShellOut  = `{"type":"function_call_output","call_id":"call_ls","output":"a.txt\n"}`
	codexPatch     = `{"type":"custom_tool_call","status":"completed","call_id":"call_patch","name":"apply_patch","input":"*** Begin Patch\n*** Add File: b.txt\n+hi\n*** End Patch\n"}`
	codexPatchOut  = `{"type":"custom_tool_call_output","call_id":"call_patch","output":"Success. Updated the following files:\nA b.txt\n"}`
	codexSearch    = `{"type":"web_search_call","status":"completed","action":{"type":"search","query":"weather: San Francisco, CA"}}`
	codexAnswer    = `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}`
	codexNext      = `{"type":"message","role":"user","content":[{"type":"input_text","text":"thanks"}]}`
)

// Each item type Codex sends is accepted: tool calls and their results are
// stored as tool calls and tool messages, the way function_call and
// function_call_output are; reasoning and web_search_call are skipped. The
// provider gets a history the chat API accepts: every call answered.
func TestCodexInputItems(t *testing.T) {
	t.Parallel()
	var got []sessions.Message
	e := newTestEnv(t, func(o *Options) {
		o.Provider = &funcProvider{name: "rec", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			got = historyOf(req.History)
			return assistant("ok"), nil
		}}
	})
	input := "[" + strings.Join([]string{
		codexUser, codexReasoning, codexShell, codexShellOut, codexReasoning, codexPatch, codexPatchOut,
		codexSearch, codexAnswer, codexNext,
	}, ",") + "]"
	resp, body := e.send("POST", "/v1/responses", "", `{"model":"gpt-5-codex","store":false,"stream":false,"input":`+input+`}`,
		map[string]string{"Content-Type": jsonType})
	mustStatus(t, resp, body, 200)
	stored := messages(t, e.sessions, resp.Header.Get(SessionHeader))
	if len(stored) != 8 {
		t.Fatalf("stored %s", dump(stored))
	}
	if len(got) != 7 {
		t.Fatalf("provider got %s", dump(got))
	}
	want := []string{"user", "assistant", "tool", "assistant", "tool", "assistant", "user", "assistant"}
	for i, m := range stored {
		if m.Role != want[i] {
			t.Fatalf("message %d is %s, want %s: %s", i, m.Role, want[i], dump(stored))
		}
	}
	call := func(m sessions.Message) provider.ToolCall {
		var calls []provider.ToolCall
		if err := json.Unmarshal(m.ToolCalls, &calls); err != nil || len(calls) != 1 {
			t.Fatalf("tool calls %s: %v", m.ToolCalls, err)
		}
		return calls[0]
	}
	shell := call(stored[1])
	if shell.ID != "call_ls" || shell.Type != "function" || shell.Function.Name != "local_shell" {
		t.Fatalf("local_shell_call stored as %+v", shell)
	}
	var action struct {
		Type    string   `json:"type"`
		Command []string `json:"command"`
	}
	if err := json.Unmarshal([]byte(shell.Function.Arguments), &action); err != nil || action.Type != "exec" || strings.Join(action.Command, " ") != "bash -lc ls" {
		t.Fatalf("local_shell_call arguments %q: %v", shell.Function.Arguments, err)
	}
	if stored[2].ToolCallID != "call_ls" || stored[2].Text() != "a.txt\n" {
		t.Fatalf("shell output stored as %s", dump(stored[2:3]))
	}
	patch := call(stored[3])
	if patch.ID != "call_patch" || patch.Function.Name != "apply_patch" || !strings.HasPrefix(patch.Function.Arguments, "*** Begin Patch\n") {
		t.Fatalf("custom_tool_call stored as %+v", patch)
	}
	if stored[4].ToolCallID != "call_patch" || !strings.HasPrefix(stored[4].Text(), "Success.") {
		t.Fatalf("custom tool output stored as %s", dump(stored[4:5]))
	}
	if stored[5].Text() != "Done." || stored[6].Text() != "thanks" {
		t.Fatalf("messages: %s", dump(stored))
	}
	for _, m := range stored {
		if strings.Contains(string(m.Content), "Listing files") || strings.Contains(string(m.Content), "San Francisco") {
			t.Fatalf("a skipped item was stored: %s", dump(stored))
		}
	}
}

// A Codex output item that ends a parallel set of calls joins the
// assistant message of the calls before it, whatever their item types, as
// the chat API holds parallel calls in one message.
func TestCodexParallelCallsAreOneMessage(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	input := "[" + strings.Join([]string{
		codexUser, codexReasoning, codexShell, codexPatch,
		`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"pwd\"]}","call_id":"call_pwd"}`,
		codexShellOut, codexPatchOut, `{"type":"function_call_output","call_id":"call_pwd","output":"/w"}`,
	}, ",") + "]"
	resp, body := e.send("POST", "/v1/responses", "", `{"input":`+input+`}`, map[string]string{"Content-Type": jsonType})
	mustStatus(t, resp, body, 200)
	stored := messages(t, e.sessions, resp.Header.Get(SessionHeader))
	if len(stored) != 6 || stored[1].Role != "assistant" {
		t.Fatalf("stored %s", dump(stored))
	}
	var calls []provider.ToolCall
	json.Unmarshal(stored[1].ToolCalls, &calls)
	if len(calls) != 3 || calls[0].ID != "call_ls" || calls[1].ID != "call_patch" || calls[2].ID != "call_pwd" {
		t.Fatalf("calls %s", stored[1].ToolCalls)
	}
}

// Items that cannot be what Codex means are refused, naming the item, and
// nothing is stored: a local_shell_call that names no call cannot be
// answered, and an input of skipped items only has nothing to answer.
func TestCodexItemsRefused(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	for _, tc := range []struct{ input, param string }{
		{`[` + codexUser + `,{"type":"local_shell_call","call_id":null,"status":"completed","action":{"type":"exec","command":["ls"]}}]`, "input[1]"},
		{`[` + codexUser + `,{"type":"local_shell_call","call_id":"c","status":"completed","action":null}]`, "input[1]"},
		{`[` + codexUser + `,{"type":"custom_tool_call","call_id":"","name":"apply_patch","input":"x"}]`, "input[1]"},
		{`[` + codexUser + `,{"type":"custom_tool_call_output","call_id":"c","output":5}]`, "input[1]"},
		{`[` + codexReasoning + `,` + codexSearch + `]`, "input"},
		{`[` + codexUser + `,{"type":"computer_call","call_id":"c"}]`, "input[1]"},
	} {
		resp, body := e.send("POST", "/v1/responses", "", `{"input":`+tc.input+`}`, map[string]string{"Content-Type": jsonType})
		er := mustError(t, resp, body, 400, "invalid_request_error")
		if er.Error.Param == nil || *er.Error.Param != tc.param {
			t.Fatalf("%s: %s", tc.input, body)
		}
	}
	e.noSessions()
}
