package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// replyOf is a provider whose every reply is reply.
func replyOf(reply provider.Reply) *funcProvider {
	return &funcProvider{name: "fixed", fn: func(context.Context, provider.Request) (provider.Reply, error) {
		return reply, nil
	}}
}

// textAndCalls is a reply with text and two calls of tools the gateway
// does not run, so they go back to the client.
func textAndCalls() provider.Reply {
	calls, _ := json.Marshal([]provider.ToolCall{
		{ID: "call_a", Type: "function", Function: provider.ToolFunction{Name: "read", Arguments: `{"path":"a.txt"}`}},
		{ID: "call_b", Type: "function", Function: provider.ToolFunction{Name: "shell", Arguments: `{"command":["ls"]}`}},
	})
	return provider.Reply{Messages: []sessions.Message{{Role: "assistant", Content: sessions.TextContent("let me look"), ToolCalls: calls}}}
}

// streamEvent is the part of a Responses stream event the tests read.
type streamEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	OutputIndex    int             `json:"output_index"`
	ItemID         string          `json:"item_id"`
	Item           json.RawMessage `json:"item"`
	Delta          string          `json:"delta"`
	Arguments      string          `json:"arguments"`
	Name           string          `json:"name"`
	Response       json.RawMessage `json:"response"`
}

func streamEvents(t *testing.T, body []byte) []streamEvent {
	t.Helper()
	var events []streamEvent
	for i, ev := range parseSSE(t, body) {
		se := decode[streamEvent](t, []byte(ev.Data))
		if se.Type != ev.Name || se.SequenceNumber != i {
			t.Fatalf("event %d: name %q, type %q, sequence %d", i, ev.Name, se.Type, se.SequenceNumber)
		}
		events = append(events, se)
	}
	return events
}

type outItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

// A function call output item streams as the API streams it: added with
// empty arguments, the arguments as function_call_arguments.delta events,
// then function_call_arguments.done and output_item.done. A client that
// builds the response from the events, as openai-node's ResponseStream
// does (the added item, plus each delta appended to its arguments), ends
// with the response that response.completed carries.
func TestResponsesStreamFunctionCallArguments(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.Provider = replyOf(textAndCalls()) })
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "look around", "stream": true}, nil)
	mustStatus(t, resp, body, 200)
	events := streamEvents(t, body)

	var names []string
	var built []outItem
	var completed struct {
		Output []outItem `json:"output"`
	}
	for _, ev := range events {
		names = append(names, strings.TrimPrefix(ev.Type, "response."))
		switch ev.Type {
		case "response.output_item.added":
			if ev.OutputIndex != len(built) {
				t.Fatalf("item added at %d after %d items", ev.OutputIndex, len(built))
			}
			built = append(built, decode[outItem](t, ev.Item))
		case "response.function_call_arguments.delta":
			it := &built[ev.OutputIndex]
			if it.Type != "function_call" || ev.ItemID != it.ID {
				t.Fatalf("delta for %q at %d, item %+v", ev.ItemID, ev.OutputIndex, it)
			}
			it.Arguments += ev.Delta
		case "response.function_call_arguments.done":
			it := built[ev.OutputIndex]
			if ev.ItemID != it.ID || ev.Arguments != it.Arguments || ev.Name != it.Name {
				t.Fatalf("arguments done %+v, item %+v", ev, it)
			}
		case "response.output_item.done":
			done := decode[outItem](t, ev.Item)
			if done.ID != built[ev.OutputIndex].ID || done.Arguments != built[ev.OutputIndex].Arguments || done.Status != "completed" {
				t.Fatalf("item done %+v, built %+v", done, built[ev.OutputIndex])
			}
		case "response.completed":
			completed = decode[struct {
				Output []outItem `json:"output"`
			}](t, ev.Response)
		}
	}
	want := "created in_progress output_item.added content_part.added output_text.done content_part.done output_item.done " +
		"output_item.added function_call_arguments.delta function_call_arguments.done output_item.done " +
		"output_item.added function_call_arguments.delta function_call_arguments.done output_item.done completed"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events:\n  %s\nwant:\n  %s", got, want)
	}
	if len(completed.Output) != 3 {
		t.Fatalf("completed output %+v", completed.Output)
	}
	for i, it := range completed.Output[1:] {
		b := built[i+1]
		if it.ID != b.ID || it.CallID != b.CallID || it.Name != b.Name || it.Arguments != b.Arguments {
			t.Fatalf("completed %+v, built from the events %+v", it, b)
		}
	}
	if built[1].CallID != "call_a" || built[1].Arguments != `{"path":"a.txt"}` || built[2].Arguments != `{"command":["ls"]}` {
		t.Fatalf("built %+v", built)
	}
}

// usage is in a reply when the provider reported it, and left out (not
// null) when it did not, in every shape of both APIs.
func TestUsageGivenOrLeftOut(t *testing.T) {
	t.Parallel()
	counted := assistant("counted")
	counted.Usage = &provider.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}
	for _, tc := range []struct {
		name  string
		reply provider.Reply
	}{{"reported", counted}, {"not reported", assistant("uncounted")}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, func(o *Options) { o.Provider = replyOf(tc.reply) })
			reported := tc.reply.Usage != nil
			// checkUsage checks the usage field of one JSON object.
			checkUsage := func(where string, obj json.RawMessage, want string) {
				t.Helper()
				var fields map[string]json.RawMessage
				if err := json.Unmarshal(obj, &fields); err != nil {
					t.Fatalf("%s: %v: %s", where, err, obj)
				}
				u, ok := fields["usage"]
				switch {
				case want == "" && ok:
					t.Fatalf("%s has usage %s, want none", where, u)
				case want != "" && !ok:
					t.Fatalf("%s has no usage", where)
				case want != "":
					for _, kv := range strings.Split(want, ",") {
						if !strings.Contains(string(u), kv) {
							t.Fatalf("%s: usage %s lacks %s", where, u, kv)
						}
					}
				}
			}
			respWant, chatWant := "", ""
			if reported {
				respWant = `"input_tokens":7,"output_tokens":3,"total_tokens":10`
				chatWant = `"prompt_tokens":7,"completion_tokens":3,"total_tokens":10`
			}

			resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "hi"}, nil)
			mustStatus(t, resp, body, 200)
			checkUsage("a response", body, respWant)
			id := decode[respObj](t, body).ID
			resp, body = e.do("GET", "/v1/responses/"+id, nil, nil)
			mustStatus(t, resp, body, 200)
			checkUsage("a stored response", body, respWant)

			resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "hi", "stream": true}, nil)
			mustStatus(t, resp, body, 200)
			for _, ev := range streamEvents(t, body) {
				switch ev.Type {
				case "response.created", "response.in_progress":
					checkUsage(ev.Type, ev.Response, "")
				case "response.completed":
					checkUsage(ev.Type, ev.Response, respWant)
				}
			}

			resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("hi")}}, nil)
			mustStatus(t, resp, body, 200)
			checkUsage("a chat completion", body, chatWant)

			resp, body = e.do("POST", "/v1/chat/completions", map[string]any{
				"messages": []any{userMsg("hi")}, "stream": true, "stream_options": map[string]any{"include_usage": true},
			}, nil)
			mustStatus(t, resp, body, 200)
			events := parseSSE(t, body)
			usageChunks := 0
			for _, ev := range events[:len(events)-1] {
				if strings.Contains(ev.Data, `"usage"`) {
					usageChunks++
					checkUsage("the usage chunk", json.RawMessage(ev.Data), chatWant)
				}
			}
			if reported != (usageChunks == 1) || usageChunks > 1 {
				t.Fatalf("%d usage chunks; stream: %s", usageChunks, body)
			}
		})
	}
}
