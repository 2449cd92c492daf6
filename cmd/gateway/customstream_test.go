package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// A call of a custom tool (Codex's apply_patch) streams as the API streams
// it (openai-node's ResponseCustomToolCallInputDeltaEvent and DoneEvent):
// output_item.added with a custom_tool_call whose input is empty,
// custom_tool_call_input.delta events that make up the input,
// custom_tool_call_input.done with the whole input, and output_item.done
// with the completed item; a client that builds the item from the events
// ends with the one response.completed carries. A function tool's call
// beside it streams as a function_call.
func TestResponsesStreamCustomToolCall(t *testing.T) {
	t.Parallel()
	patch := "*** Begin Patch\n*** Add File: b.txt\n+hi \"there\"\n*** End Patch\n"
	calls, _ := json.Marshal([]provider.ToolCall{
		{ID: "call_p", Type: "function", Function: provider.ToolFunction{Name: "apply_patch", Arguments: customArguments(patch)}},
		{ID: "call_s", Type: "function", Function: provider.ToolFunction{Name: "shell", Arguments: `{"command":["ls"]}`}},
	})
	e := newTestEnv(t, func(o *Options) {
		o.Provider = replyOf(provider.Reply{Messages: []sessions.Message{{Role: "assistant", ToolCalls: calls}}})
	})
	tools := []any{
		map[string]any{"type": "custom", "name": "apply_patch", "description": "Patch files."},
		map[string]any{"type": "function", "name": "shell", "parameters": map[string]any{"type": "object"}},
	}
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "patch it", "tools": tools, "stream": true}, nil)
	mustStatus(t, resp, body, 200)

	type item struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Input     string `json:"input"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
	}
	var names []string
	var built []item
	var completed []item
	for _, ev := range parseSSE(t, body) {
		var se struct {
			streamEvent
			Input string `json:"input"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &se); err != nil || se.Type != ev.Name {
			t.Fatalf("event %s: %s (%v)", ev.Name, ev.Data, err)
		}
		names = append(names, strings.TrimPrefix(se.Type, "response."))
		switch se.Type {
		case "response.output_item.added":
			it := decode[item](t, se.Item)
			if se.OutputIndex != len(built) || it.Input != "" || it.Arguments != "" {
				t.Fatalf("item added at %d after %d items: %s", se.OutputIndex, len(built), se.Item)
			}
			built = append(built, it)
		case "response.custom_tool_call_input.delta":
			it := &built[se.OutputIndex]
			if it.Type != "custom_tool_call" || se.ItemID != it.ID {
				t.Fatalf("input delta for %q at %d, item %+v", se.ItemID, se.OutputIndex, it)
			}
			it.Input += se.Delta
		case "response.custom_tool_call_input.done":
			if it := built[se.OutputIndex]; se.ItemID != it.ID || se.Input != it.Input {
				t.Fatalf("input done %q for %q, item %+v", se.Input, se.ItemID, it)
			}
		case "response.function_call_arguments.delta":
			built[se.OutputIndex].Arguments += se.Delta
		case "response.output_item.done":
			done, b := decode[item](t, se.Item), built[se.OutputIndex]
			if done.ID != b.ID || done.Input != b.Input || done.Arguments != b.Arguments || done.Status != "completed" {
				t.Fatalf("item done %s, built %+v", se.Item, b)
			}
		case "response.completed":
			completed = decode[struct {
				Output []item `json:"output"`
			}](t, se.Response).Output
		}
	}
	want := "created in_progress " +
		"output_item.added custom_tool_call_input.delta custom_tool_call_input.done output_item.done " +
		"output_item.added function_call_arguments.delta function_call_arguments.done output_item.done completed"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events:\n  %s\nwant:\n  %s", got, want)
	}
	if len(built) != 2 || built[0].Type != "custom_tool_call" || built[0].Name != "apply_patch" || built[0].CallID != "call_p" || built[0].Input != patch {
		t.Fatalf("built from the events %+v, want apply_patch's call with input %q", built, patch)
	}
	if built[1].Type != "function_call" || built[1].Name != "shell" || built[1].Arguments != `{"command":["ls"]}` {
		t.Fatalf("built from the events %+v, want shell's function_call", built[1])
	}
	if len(completed) != 2 {
		t.Fatalf("completed output %+v", completed)
	}
	for i, it := range completed {
		b := built[i]
		if it.Type != b.Type || it.ID != b.ID || it.CallID != b.CallID || it.Name != b.Name || it.Input != b.Input || it.Arguments != b.Arguments {
			t.Fatalf("completed %+v, built from the events %+v", it, b)
		}
	}
}
