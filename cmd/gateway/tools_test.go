package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// lookupTool is a tool of the gateway's own (gateway.tools).
type lookupTool struct{ runs int }

func (l *lookupTool) Name() string { return "lookup" }
func (l *lookupTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}`)
}
func (l *lookupTool) NeedsApproval(json.RawMessage) bool { return false }
func (l *lookupTool) Run(context.Context, *agent.Env, json.RawMessage) (string, error) {
	l.runs++
	return "42", nil
}

// callsOrAnswers calls fn while the history does not end with a tool
// result, and answers with the result's text once it does. It never calls
// a tool it was not offered: such a request is a 400, where a real model
// could only answer in words.
func callsOrAnswers(fn string) *funcProvider {
	return &funcProvider{name: "tools", fn: func(_ context.Context, req provider.Request) (provider.Reply, error) {
		h := historyOf(req.History)
		if last := h[len(h)-1]; last.Role == "tool" {
			return assistant("the answer is " + last.Text()), nil
		}
		offered := false
		for _, raw := range req.Tools {
			var tool struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			offered = offered || json.Unmarshal(raw, &tool) == nil && tool.Function.Name == fn
		}
		if !offered {
			return provider.Reply{}, &provider.Error{Provider: "tools", StatusCode: 400, Message: "tools: " + fn + " was not offered"}
		}
		calls, _ := json.Marshal([]provider.ToolCall{{ID: "call_1", Type: "function", Function: provider.ToolFunction{Name: fn, Arguments: "{}"}}})
		return provider.Reply{Messages: []sessions.Message{{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: calls}}}, nil
	}}
}

func roles(msgs []sessions.Message) string {
	var rs []string
	for _, m := range msgs {
		rs = append(rs, m.Role)
	}
	return strings.Join(rs, " ")
}

// With gateway.tools the gateway runs the call itself, in the turn, and the
// client's copy of the conversation (its user message and the reply text)
// still continues the same session.
func TestGatewayRunsItsTools(t *testing.T) {
	t.Parallel()
	tool := &lookupTool{}
	e := newTestEnv(t, func(o *Options) {
		o.Provider = callsOrAnswers("lookup")
		o.Tools = []agent.Tool{tool}
		o.Approver = agent.Fixed(true)
	})
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "find it"}},
	}, nil)
	mustStatus(t, resp, body, 200)
	c := decode[chatResp](t, body)
	if c.Choices[0].Message.Content != "the answer is 42" || c.Choices[0].FinishReason != "stop" || tool.runs != 1 {
		t.Fatalf("reply %s, tool ran %d times", body, tool.runs)
	}
	sid := resp.Header.Get(SessionHeader)
	if got := roles(messages(t, e.sessions, sid)); got != "user assistant tool assistant" {
		t.Fatalf("transcript %s", got)
	}
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{
		"messages": []any{
			map[string]any{"role": "user", "content": "find it"},
			map[string]any{"role": "assistant", "content": "the answer is 42"},
			map[string]any{"role": "user", "content": "thanks"},
		},
	}, map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	if resp.Header.Get(SessionHeader) != sid {
		t.Fatal("the client's copy of a tool loop forked the session")
	}
}

// Without gateway.tools, a call goes back to the client, which answers it
// in its next request: stored once, never answered "interrupted".
func TestGatewayReturnsClientCalls(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.Provider = callsOrAnswers("client_fn") })
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "go"}},
		"tools":    []any{clientTool("client_fn")},
	}, nil)
	mustStatus(t, resp, body, 200)
	c := decode[chatResp](t, body)
	if c.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("reply %s", body)
	}
	sid := resp.Header.Get(SessionHeader)
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{
		"messages": []any{
			map[string]any{"role": "user", "content": "go"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "client_fn", "arguments": "{}"}},
			}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "7"},
		},
	}, map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	if c := decode[chatResp](t, body); c.Choices[0].Message.Content != "the answer is 7" || resp.Header.Get(SessionHeader) != sid {
		t.Fatalf("reply %s in session %s", body, resp.Header.Get(SessionHeader))
	}
	msgs := messages(t, e.sessions, sid)
	if got := roles(msgs); got != "user assistant tool assistant" || msgs[2].Text() != "7" {
		t.Fatalf("transcript %s", dump(msgs))
	}
}

// A tool message that answers no call of the assistant message before it
// is refused as the API refuses it (a 400 naming the message), and nothing
// is stored: neither a session nor the message.
func TestGatewayRefusesAnOrphanToolMessage(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.Provider = callsOrAnswers("client_fn") })
	call := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
		map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "client_fn", "arguments": "{}"}},
	}}
	for name, msgs := range map[string][]any{
		"first":      {map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "7"}, map[string]any{"role": "user", "content": "go"}},
		"after user": {map[string]any{"role": "user", "content": "go"}, map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "7"}},
		"wrong id":   {map[string]any{"role": "user", "content": "go"}, call, map[string]any{"role": "tool", "tool_call_id": "call_9", "content": "7"}},
		"answered":   {map[string]any{"role": "user", "content": "go"}, call, map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "7"}, map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "8"}},
	} {
		resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": msgs, "tools": []any{clientTool("client_fn")}}, nil)
		mustStatus(t, resp, body, 400)
		if !strings.Contains(string(body), `"param":"messages[`) || !strings.Contains(string(body), "answers no call") {
			t.Errorf("%s: %s", name, body)
		}
	}
	resp, body := e.do("POST", "/v1/responses", map[string]any{
		"input": []any{
			map[string]any{"role": "user", "content": "go"},
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "7"},
		},
		"tools": []any{map[string]any{"type": "function", "name": "client_fn", "parameters": map[string]any{"type": "object"}}},
	}, nil)
	mustStatus(t, resp, body, 400)
	if !strings.Contains(string(body), `"param":"input[1]"`) {
		t.Errorf("responses: %s", body)
	}
	if ids, err := e.sessions.IDs(); err != nil || len(ids) != 0 {
		t.Fatalf("sessions %v %v after refused requests", ids, err)
	}
}

// A client's call that the client never answered (its next request goes
// on with a new user message) is answered, before the next model call, as
// not answered by the client: hermes did not stop, and did not run it.
func TestGatewayClientCallNotAnswered(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.Provider = callsOrAnswers("client_fn") })
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "go"}},
		"tools":    []any{clientTool("client_fn")},
	}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{
		"messages": []any{
			map[string]any{"role": "user", "content": "go"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "client_fn", "arguments": "{}"}},
			}},
			map[string]any{"role": "user", "content": "never mind"},
		},
		"tools": []any{clientTool("client_fn")},
	}, map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	msgs := messages(t, e.sessions, sid)
	if got := roles(msgs); !strings.HasPrefix(got, "user assistant tool user") {
		t.Fatalf("transcript %s", dump(msgs))
	}
	if text := msgs[2].Text(); !strings.Contains(text, "not answered by the client") || strings.Contains(text, "hermes stopped") {
		t.Fatalf("the unanswered call's result: %q", text)
	}
}
