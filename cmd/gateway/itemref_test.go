package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// An item_reference (the Vercel AI SDK's second turn) names an output item
// of a stored response, streamed or not: a message, or a function call
// followed by the client's result; it stands for that item, so the
// conversation continues its session. An id no stored response holds is a
// 400 naming it, and nothing is stored.
func TestItemReference(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	e := newTestEnv(t, func(o *Options) { o.Provider = u.provider() })
	userItem := func(text string) map[string]any {
		return map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
	}
	for _, stream := range []bool{false, true} {
		// A message item.
		resp, body := e.do("POST", "/v1/responses", map[string]any{"input": []any{userItem("first")}, "stream": stream}, nil)
		mustStatus(t, resp, body, 200)
		sid := resp.Header.Get(SessionHeader)
		id := outputID(t, body, stream, "message")
		resp, body = e.do("POST", "/v1/responses", map[string]any{"input": []any{
			userItem("first"), map[string]any{"type": "item_reference", "id": id}, userItem("second"),
		}}, nil)
		mustStatus(t, resp, body, 200)
		if got := resp.Header.Get(SessionHeader); got != sid {
			t.Errorf("stream %v: the reference to %s went to session %s, want %s", stream, id, got, sid)
		}
		if msgs := messages(t, e.sessions, sid); roles(msgs) != "user assistant user assistant" {
			t.Errorf("stream %v: transcript %s", stream, dump(msgs))
		}

		// A function call item, answered by the client.
		tools := []any{map[string]any{"type": "function", "name": "get", "parameters": map[string]any{"type": "object"}}}
		resp, body = e.do("POST", "/v1/responses", map[string]any{"input": []any{userItem("call it")}, "tools": tools, "stream": stream}, nil)
		mustStatus(t, resp, body, 200)
		sid = resp.Header.Get(SessionHeader)
		id = outputID(t, body, stream, "function_call")
		resp, body = e.do("POST", "/v1/responses", map[string]any{"tools": tools, "input": []any{
			userItem("call it"), map[string]any{"type": "item_reference", "id": id},
			map[string]any{"type": "function_call_output", "call_id": "call_u1", "output": "42"},
		}}, nil)
		mustStatus(t, resp, body, 200)
		if got := resp.Header.Get(SessionHeader); got != sid {
			t.Errorf("stream %v: the reference to %s went to session %s, want %s", stream, id, got, sid)
		}
		if msgs := messages(t, e.sessions, sid); roles(msgs) != "user assistant tool assistant" {
			t.Errorf("stream %v: transcript %s", stream, dump(msgs))
		}
	}

	all, _ := e.sessions.All()
	for _, id := range []string{"msg_20260101_000000_000000_00000000000000aa_0", "rs_123", "nonsense"} {
		resp, body := e.do("POST", "/v1/responses", map[string]any{"input": []any{
			userItem("first"), map[string]any{"type": "item_reference", "id": id},
		}}, nil)
		er := mustError(t, resp, body, 400, "invalid_request_error")
		if !strings.Contains(*er.Error.Message, id) || er.Error.Param == nil || *er.Error.Param != "input[1]" {
			t.Errorf("unknown reference %s: %s, want a 400 naming it at input[1]", id, body)
		}
	}
	if after, _ := e.sessions.All(); len(after) != len(all) {
		t.Errorf("an unknown reference made a session")
	}
}

// outputID is the id of the first output item of type typ of a response,
// whole or streamed (then from its response.completed event).
func outputID(t *testing.T, body []byte, stream bool, typ string) string {
	t.Helper()
	var r struct {
		Output []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"output"`
	}
	if !stream {
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
	} else {
		var seen []string
		for _, ev := range parseSSE(t, body) {
			var item struct {
				Item struct {
					ID string `json:"id"`
				} `json:"item"`
			}
			if ev.Name == "response.output_item.done" && json.Unmarshal([]byte(ev.Data), &item) == nil {
				seen = append(seen, item.Item.ID)
			}
			if ev.Name == "response.completed" {
				var c struct {
					Response json.RawMessage `json:"response"`
				}
				json.Unmarshal([]byte(ev.Data), &c)
				json.Unmarshal(c.Response, &r)
			}
		}
		if len(r.Output) == 0 || len(seen) != len(r.Output) || seen[0] != r.Output[0].ID {
			t.Fatalf("streamed item ids %v differ from the response's output %+v", seen, r.Output)
		}
	}
	for _, o := range r.Output {
		if o.Type == typ {
			return o.ID
		}
	}
	t.Fatalf("no %s item in %s", typ, body)
	return ""
}
