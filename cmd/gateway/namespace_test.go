package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// Codex CLI sends an MCP server's tools as a Responses namespace tool
// ({"type":"namespace","name":"mcp__hermes","tools":[…]}): each is
// offered upstream as a function named NAMESPACE__NAME, a call of it comes
// back to the client as a function_call with the tool's own name and its
// namespace, whole and streamed, and the call Codex re-sends (with its
// namespace) continues the same session.
func TestNamespaceToolRoundTrip(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[stream], func(t *testing.T) {
			u := newUpstream(t)
			u.args = `{"title":"x"}`
			e := newTestEnv(t, func(o *Options) { o.Provider = u.provider() })
			tools := []any{map[string]any{"type": "namespace", "name": "mcp__hermes", "description": "Tools in the mcp__hermes namespace.",
				"tools": []any{map[string]any{"type": "function", "name": "kanban_create", "description": "Create a task.", "strict": false,
					"parameters": map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}}}}}}
			resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "make a task", "tools": tools, "store": false, "stream": stream}, nil)
			mustStatus(t, resp, body, 200)
			sid := resp.Header.Get(SessionHeader)
			want := `[{"type":"function","function":{"name":"mcp__hermes__kanban_create","description":"Create a task.","strict":false,` +
				`"parameters":{"type":"object","properties":{"title":{"type":"string"}}}}}]`
			if got := u.last()["tools"]; canonicalJSON(t, got) != canonicalJSON(t, json.RawMessage(want)) {
				t.Errorf("the model was offered\n %s\nwant\n %s", got, want)
			}
			var item map[string]any
			if stream {
				for _, l := range strings.Split(string(body), "\n") {
					if d, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(d, `"response.output_item.done"`) {
						var ev struct{ Item map[string]any }
						json.Unmarshal([]byte(d), &ev)
						item = ev.Item
					}
				}
			} else {
				r := decode[map[string]json.RawMessage](t, body)
				var out []map[string]any
				json.Unmarshal(r["output"], &out)
				if len(out) == 1 {
					item = out[0]
				}
			}
			if item["type"] != "function_call" || item["name"] != "kanban_create" || item["namespace"] != "mcp__hermes" || item["call_id"] != "call_u1" {
				t.Fatalf("output item %v, want a function_call of kanban_create in namespace mcp__hermes\n%s", item, body)
			}
			resp, body = e.do("POST", "/v1/responses", map[string]any{"store": false, "tools": tools, "input": []any{
				map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "make a task"}}},
				map[string]any{"type": "function_call", "call_id": "call_u1", "name": "kanban_create", "namespace": "mcp__hermes", "arguments": `{"title":"x"}`},
				map[string]any{"type": "function_call_output", "call_id": "call_u1", "output": "created"},
			}}, nil)
			mustStatus(t, resp, body, 200)
			if got := resp.Header.Get(SessionHeader); got != sid {
				t.Errorf("the tool result went to session %s, want %s", got, sid)
			}
			var msgs []struct {
				ToolCalls []struct {
					Function struct{ Name string }
				} `json:"tool_calls"`
			}
			json.Unmarshal(u.last()["messages"], &msgs)
			if len(msgs) < 2 || len(msgs[1].ToolCalls) != 1 || msgs[1].ToolCalls[0].Function.Name != "mcp__hermes__kanban_create" {
				t.Errorf("the model was sent back %s, want the call as mcp__hermes__kanban_create", u.last()["messages"])
			}
		})
	}
}

// A namespace tool without tools, or holding one that is not a function
// or custom tool, is refused with a 400 naming it, and nothing is sent.
func TestNamespaceToolRefused(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	e := newTestEnv(t, func(o *Options) { o.Provider = u.provider() })
	for _, tool := range []map[string]any{
		{"type": "namespace", "name": "mcp__x"},
		{"type": "namespace", "name": "mcp__x", "tools": []any{map[string]any{"type": "web_search"}}},
		{"type": "namespace", "tools": []any{map[string]any{"type": "function", "name": "f"}}},
	} {
		resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "hi", "tools": []any{tool}}, nil)
		if er := mustError(t, resp, body, 400, "invalid_request_error"); !strings.Contains(*er.Error.Message, "tools[0]") {
			t.Errorf("%v: %s, want a message naming tools[0]", tool, body)
		}
	}
	if n := u.count(); n != 0 {
		t.Errorf("%d requests reached the model", n)
	}
}
