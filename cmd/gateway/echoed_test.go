package gateway

import (
	"encoding/json"
	"fmt"
	"testing"
)

// echoedFields are the fields of a Responses request that its response
// object reports, as the client sent them.
var echoedFields = map[string]any{
	"temperature":         0.3,
	"top_p":               0.8,
	"parallel_tool_calls": false,
	"max_output_tokens":   77,
	"tools":               []any{map[string]any{"type": "function", "name": "get", "description": "d", "parameters": map[string]any{"type": "object"}, "strict": false}},
	"tool_choice":         map[string]any{"type": "function", "name": "get"},
	"text":                map[string]any{"format": map[string]any{"type": "json_schema", "name": "o", "schema": map[string]any{"type": "object"}, "strict": true}},
	"reasoning":           map[string]any{"effort": "high", "summary": "auto"},
	"user":                "u-9",
}

// checkEchoed fails unless the response object obj reports each field of
// want as want has it.
func checkEchoed(t *testing.T, where string, obj map[string]json.RawMessage, want map[string]any) {
	t.Helper()
	for k, v := range want {
		w, _ := json.Marshal(v)
		if got, ok := obj[k]; !ok || canonicalJSON(t, got) != canonicalJSON(t, w) {
			t.Errorf("%s: %s = %s, want %s", where, k, got, w)
		}
	}
}

// A response reports the parameters its request sent (temperature, top_p,
// tools, tool_choice, parallel_tool_calls, max_output_tokens, text,
// reasoning, user): whole, streamed (response.created, response.completed)
// and read back (GET /v1/responses/{id}); a request that sends none gets
// the API's defaults.
func TestResponseReportsRequestFields(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	defaults := map[string]any{
		"temperature": 1, "top_p": 1, "parallel_tool_calls": true, "max_output_tokens": nil,
		"tools": []any{}, "tool_choice": "auto", "text": map[string]any{"format": map[string]any{"type": "text"}},
		"reasoning": map[string]any{"effort": nil, "summary": nil}, "user": nil,
	}
	for _, sent := range []map[string]any{echoedFields, nil} {
		want := sent
		if sent == nil {
			want = defaults
		}
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("fields=%v/stream=%v", sent != nil, stream), func(t *testing.T) {
				body := map[string]any{"input": "hi", "stream": stream}
				for k, v := range sent {
					body[k] = v
				}
				resp, rbody := e.do("POST", "/v1/responses", body, nil)
				mustStatus(t, resp, rbody, 200)
				var id string
				if !stream {
					obj := decode[map[string]json.RawMessage](t, rbody)
					checkEchoed(t, "the response", obj, want)
					json.Unmarshal(obj["id"], &id)
				} else {
					seen := 0
					for _, ev := range parseSSE(t, rbody) {
						if ev.Name != "response.created" && ev.Name != "response.completed" {
							continue
						}
						seen++
						obj := decode[struct {
							Response map[string]json.RawMessage `json:"response"`
						}](t, []byte(ev.Data)).Response
						checkEchoed(t, ev.Name, obj, want)
						json.Unmarshal(obj["id"], &id)
					}
					if seen != 2 {
						t.Fatalf("%d response.created and response.completed events in %s", seen, rbody)
					}
				}
				resp, rbody = e.do("GET", "/v1/responses/"+id, nil, nil)
				mustStatus(t, resp, rbody, 200)
				checkEchoed(t, "the stored response", decode[map[string]json.RawMessage](t, rbody), want)
			})
		}
	}
}
