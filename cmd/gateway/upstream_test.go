package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
)

// upstream is a strict model behind the gateway's openai provider, as a
// real one is: it records every request body, and calls a tool only when
// the request offers it (the first tool offered, once per conversation:
// after a tool result it answers in text). refuse, when set, answers
// every request with that status and an OpenAI error body.
type upstream struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]json.RawMessage
	refuse int
	// args are the arguments of the model's calls; empty: {"input":"x"}.
	args string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{t: t}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

// provider is the gateway's openai provider for u, model "configured".
func (u *upstream) provider() provider.Provider {
	p, err := provider.New(provider.Config{Name: "openai", BaseURL: u.srv.URL + "/v1", Model: "configured", MaxRetries: -1})
	if err != nil {
		u.t.Fatal(err)
	}
	return p
}

// count is how many requests u got.
func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.bodies)
}

// last is the body of the last request.
func (u *upstream) last() map[string]json.RawMessage {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		u.t.Fatal("the upstream got no request")
	}
	return u.bodies[len(u.bodies)-1]
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil {
		http.Error(w, "bad json", 400)
		return
	}
	u.mu.Lock()
	u.bodies = append(u.bodies, body)
	refuse, args := u.refuse, u.args
	u.mu.Unlock()
	if args == "" {
		args = `{"input":"x"}`
	}
	if refuse != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(refuse)
		io.WriteString(w, `{"error":{"message":"The model 'nope' does not exist","type":"invalid_request_error","param":"model","code":"model_not_found"}}`)
		return
	}
	var model string
	json.Unmarshal(body["model"], &model)
	var tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	json.Unmarshal(body["tools"], &tools)
	var msgs []struct {
		Role string `json:"role"`
	}
	json.Unmarshal(body["messages"], &msgs)
	answered := len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool"
	stream := string(body["stream"]) == "true"
	var call string
	if len(tools) > 0 && !answered {
		call = tools[0].Function.Name
	}
	text := "plain answer"
	if answered {
		text = "after the tool"
	}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": text}
		finish := "stop"
		if call != "" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_u1", "type": "function", "function": map[string]any{"name": call, "arguments": args}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"model": model + "-answered", "choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	delta := map[string]any{"content": text}
	finish := "stop"
	if call != "" {
		delta = map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_u1", "type": "function",
			"function": map[string]any{"name": call, "arguments": args}}}}
		finish = "tool_calls"
	}
	chunk, _ := json.Marshal(map[string]any{"model": model + "-answered", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunk)
}

// paramCase is one parameter as each API names it, and what the upstream
// must receive.
type paramCase struct {
	name      string
	chat      map[string]any // fields of a chat completion request
	responses map[string]any // fields of a Responses request
	field     string         // the upstream body's field
	want      string         // its value, as JSON
}

var paramCases = []paramCase{
	{"model", map[string]any{"model": "m1"}, map[string]any{"model": "m1"}, "model", `"m1"`},
	{"temperature", map[string]any{"temperature": 0.3}, map[string]any{"temperature": 0.3}, "temperature", `0.3`},
	{"top_p", map[string]any{"top_p": 0.9}, map[string]any{"top_p": 0.9}, "top_p", `0.9`},
	{"max_tokens", map[string]any{"max_tokens": 50}, nil, "max_tokens", `50`},
	{"max_completion_tokens", map[string]any{"max_completion_tokens": 60}, map[string]any{"max_output_tokens": 60}, "max_completion_tokens", `60`},
	{"stop", map[string]any{"stop": []string{"END"}}, nil, "stop", `["END"]`},
	{"seed", map[string]any{"seed": 7}, nil, "seed", `7`},
	{"presence_penalty", map[string]any{"presence_penalty": 0.5}, nil, "presence_penalty", `0.5`},
	{"frequency_penalty", map[string]any{"frequency_penalty": 0.25}, nil, "frequency_penalty", `0.25`},
	{"user", map[string]any{"user": "u-9"}, map[string]any{"user": "u-9"}, "user", `"u-9"`},
	{"reasoning", map[string]any{"reasoning_effort": "high"}, map[string]any{"reasoning": map[string]any{"effort": "high", "summary": "auto"}}, "reasoning_effort", `"high"`},
	{"parallel_tool_calls", map[string]any{"parallel_tool_calls": false}, map[string]any{"parallel_tool_calls": false}, "parallel_tool_calls", `false`},
	{"response_format json_object", map[string]any{"response_format": map[string]any{"type": "json_object"}},
		map[string]any{"text": map[string]any{"format": map[string]any{"type": "json_object"}}}, "response_format", `{"type":"json_object"}`},
	{"response_format json_schema",
		map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "o", "schema": map[string]any{"type": "object"}, "strict": true}}},
		map[string]any{"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "o", "schema": map[string]any{"type": "object"}, "strict": true}}},
		"response_format", `{"type":"json_schema","json_schema":{"name":"o","schema":{"type":"object"},"strict":true}}`},
	{"tool_choice string", map[string]any{"tool_choice": "required"}, map[string]any{"tool_choice": "required"}, "tool_choice", `"required"`},
	{"tool_choice named",
		map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get"}}},
		map[string]any{"tool_choice": map[string]any{"type": "function", "name": "get"}},
		"tool_choice", `{"type":"function","function":{"name":"get"}}`},
	{"tool_choice allowed_tools",
		map[string]any{"tool_choice": map[string]any{"type": "allowed_tools", "allowed_tools": map[string]any{"mode": "required", "tools": []any{
			map[string]any{"type": "function", "function": map[string]any{"name": "apply_patch"}},
			map[string]any{"type": "function", "function": map[string]any{"name": "get"}}}}}},
		map[string]any{"tool_choice": map[string]any{"type": "allowed_tools", "mode": "required", "tools": []any{
			map[string]any{"type": "custom", "name": "apply_patch"},
			map[string]any{"type": "function", "name": "get"}}}},
		"tool_choice", `{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"apply_patch"}},{"type":"function","function":{"name":"get"}}]}}`},
	{"tools",
		map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get", "description": "d", "parameters": map[string]any{"type": "object"}}}}},
		map[string]any{"tools": []any{map[string]any{"type": "function", "name": "get", "description": "d", "parameters": map[string]any{"type": "object"}}}},
		"tools", `[{"type":"function","function":{"name":"get","description":"d","parameters":{"type":"object"}}}]`},
}

// canonicalJSON re-encodes raw so that two encodings of one value compare
// equal.
func canonicalJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Each parameter a client sends reaches the model, under the chat
// completions name, on both endpoints, streamed and not; one left out is
// not sent.
func TestParametersReachTheModel(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	e := newTestEnv(t, func(o *Options) { o.Provider = u.provider() })
	for _, c := range paramCases {
		for _, api := range []string{"chat", "responses"} {
			fields := c.chat
			if api == "responses" {
				fields = c.responses
			}
			if fields == nil {
				continue // the Responses API has no such parameter
			}
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", c.name, api, stream), func(t *testing.T) {
					body := map[string]any{"stream": stream}
					path := "/v1/chat/completions"
					if api == "chat" {
						body["messages"] = []any{userMsg("hi " + c.name)}
					} else {
						path, body["input"] = "/v1/responses", "hi "+c.name
					}
					for k, v := range fields {
						body[k] = v
					}
					resp, rbody := e.do("POST", path, body, nil)
					mustStatus(t, resp, rbody, 200)
					got := u.last()
					if raw, ok := got[c.field]; !ok || canonicalJSON(t, raw) != canonicalJSON(t, json.RawMessage(c.want)) {
						t.Errorf("the model got %s = %s, want %s", c.field, raw, c.want)
					}
					for _, p := range paramCases {
						if _, ok := got[p.field]; ok && p.field != c.field && p.field != "model" {
							t.Errorf("the model got %s = %s, which the client did not send", p.field, got[p.field])
						}
					}
					if c.field != "model" && string(got["model"]) != `"configured"` {
						t.Errorf("a request naming no model: the model got model %s, want the configured one", got["model"])
					}
				})
			}
		}
	}
}

// A client's tool and the gateway's own are offered together; a client's
// tool named as one of the gateway's is a 400 naming it, on both
// endpoints, and nothing reaches the model or the store.
func TestClientToolsBesideTheGatewaysOwn(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	e := newTestEnv(t, func(o *Options) {
		o.Provider = u.provider()
		o.Tools = []agent.Tool{&lookupTool{}}
		o.Approver = agent.Fixed(true)
	})
	chatTool := func(name string) any {
		return map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": map[string]any{"type": "object"}}}
	}
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{
		"messages": []any{userMsg("hi")}, "tools": []any{chatTool("client_fn")},
	}, nil)
	mustStatus(t, resp, body, 200)
	var names []string
	var tools []struct {
		Function struct{ Name string } `json:"function"`
	}
	json.Unmarshal(u.last()["tools"], &tools)
	for _, tl := range tools {
		names = append(names, tl.Function.Name)
	}
	if strings.Join(names, ",") != "lookup,client_fn" {
		t.Errorf("the model was offered %v, want lookup (the gateway's) and client_fn", names)
	}

	n := u.count()
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/chat/completions", map[string]any{"messages": []any{userMsg("clash")}, "tools": []any{chatTool("lookup")}}},
		{"/v1/responses", map[string]any{"input": "clash", "tools": []any{map[string]any{"type": "function", "name": "lookup"}}}},
		{"/v1/chat/completions", map[string]any{"messages": []any{userMsg("twice")}, "tools": []any{chatTool("a"), chatTool("a")}}},
	} {
		resp, body := e.do("POST", c.path, c.body, nil)
		er := mustError(t, resp, body, 400, "invalid_request_error")
		if !strings.Contains(*er.Error.Message, `"lookup"`) && !strings.Contains(*er.Error.Message, `"a"`) {
			t.Errorf("%s: the error does not name the tool: %s", c.path, body)
		}
		if er.Error.Param == nil || !strings.HasPrefix(*er.Error.Param, "tools[") {
			t.Errorf("%s: param %v, want tools[i]", c.path, er.Error.Param)
		}
	}
	if u.count() != n {
		t.Errorf("a refused request reached the model")
	}
	all, _ := e.sessions.All()
	if len(all) != 1 {
		t.Errorf("%d sessions, want the one of the first request: a refused request stored something", len(all))
	}
}

// An upstream's refusal of the request (400, 404, 422) reaches the client
// as that status with the upstream's message and code, not as a 502 that a
// client library would retry; a 5xx stays a 502.
func TestUpstreamRefusalPassedOn(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	e := newTestEnv(t, func(o *Options) { o.Provider = u.provider() })
	for _, status := range []int{400, 404, 422, 500} {
		u.mu.Lock()
		u.refuse = status
		u.mu.Unlock()
		for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
			body := map[string]any{"model": "nope", "messages": []any{userMsg("hi")}}
			if path == "/v1/responses" {
				body = map[string]any{"model": "nope", "input": "hi"}
			}
			resp, rbody := e.do("POST", path, body, nil)
			if status == 500 {
				mustError(t, resp, rbody, 502, "server_error")
				continue
			}
			er := mustError(t, resp, rbody, status, "invalid_request_error")
			if !strings.Contains(*er.Error.Message, "The model 'nope' does not exist") || er.Error.Code == nil || *er.Error.Code != "model_not_found" {
				t.Errorf("%s, upstream %d: %s, want the upstream's message and code", path, status, rbody)
			}
		}
	}
}

// A call of the client's tool goes back to the client, on both endpoints:
// a Responses custom tool (Codex's apply_patch) is offered as a function
// of one string argument, input, its grammar in the description, and its
// call comes back as a custom_tool_call with that input; the input sent
// back with the result continues the same session.
func TestCustomToolRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args   string
		header map[string]string
	}{
		{`{"input":"x"}`, nil},
		{"{\"input\": \"x\"}\n", nil},
		{"{ \"input\" : \"x\" }", map[string]string{"Session-Id": "thread-1"}},
	} {
		t.Run(c.args, func(t *testing.T) { customToolRoundTrip(t, c.args, c.header) })
	}
}

func customToolRoundTrip(t *testing.T, args string, header map[string]string) {
	u := newUpstream(t)
	u.args = args
	e := newTestEnv(t, func(o *Options) { o.Provider = u.provider() })
	tools := []any{map[string]any{"type": "custom", "name": "apply_patch", "description": "Patch files.",
		"format": map[string]any{"type": "grammar", "syntax": "lark", "definition": "start: \"x\""}}}
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "patch it", "tools": tools, "store": false}, header)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	want := `[{"type":"function","function":{"description":"Patch files.\n\nThe argument input is the tool's input: free-form text, not JSON, in this grammar (lark syntax):\nstart: \"x\"",` +
		`"name":"apply_patch","parameters":{"type":"object","properties":{"input":{"type":"string"}},"required":["input"],"additionalProperties":false}}}]`
	if got := u.last()["tools"]; canonicalJSON(t, got) != canonicalJSON(t, json.RawMessage(want)) {
		t.Errorf("the model was offered\n %s\nwant\n %s", got, want)
	}
	r := decode[map[string]json.RawMessage](t, body)
	var out []map[string]any
	json.Unmarshal(r["output"], &out)
	if len(out) != 1 || out[0]["type"] != "custom_tool_call" || out[0]["input"] != "x" || out[0]["call_id"] != "call_u1" || out[0]["name"] != "apply_patch" {
		t.Fatalf("output %s, want one custom_tool_call of apply_patch with input x", r["output"])
	}
	// Codex re-sends the whole conversation with the call's output.
	resp, body = e.do("POST", "/v1/responses", map[string]any{"store": false, "tools": tools, "input": []any{
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "patch it"}}},
		map[string]any{"type": "custom_tool_call", "call_id": "call_u1", "name": "apply_patch", "input": "x"},
		map[string]any{"type": "custom_tool_call_output", "call_id": "call_u1", "output": "done"},
	}}, header)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Errorf("the tool result went to session %s, want %s", got, sid)
	}
	if !strings.Contains(string(body), "after the tool") {
		t.Errorf("reply %s, want the model's answer after the tool", body)
	}
}

// gateway.models: a listed model is answered by its provider, asked by
// its upstream name; /v1/models lists it; responses report the model
// that answered; with models_only a model not listed is a 404
// model_not_found, and a request naming none gets the configured one.
func TestGatewayModels(t *testing.T) {
	t.Parallel()
	def, other := newUpstream(t), newUpstream(t)
	e := newTestEnv(t, func(o *Options) {
		o.Provider, o.Model = def.provider(), "configured"
		o.Models = []Model{{Name: "fast", Upstream: "fast-7b", Provider: other.provider()}}
		o.ModelsOnly = true
	})
	resp, body := e.do("GET", "/v1/models", nil, nil)
	mustStatus(t, resp, body, 200)
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.Unmarshal(body, &list)
	if len(list.Data) != 2 || list.Data[0].ID != "configured" || list.Data[1].ID != "fast" {
		t.Errorf("/v1/models: %s, want configured and fast", body)
	}

	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"model": "fast", "messages": []any{userMsg("hi")}}, nil)
	mustStatus(t, resp, body, 200)
	if got := string(other.last()["model"]); got != `"fast-7b"` {
		t.Errorf("the listed model's provider was asked for model %s, want fast-7b", got)
	}
	if c := decode[chatResp](t, body); c.Model != "fast-7b-answered" {
		t.Errorf("reply model %q, want the one that answered", c.Model)
	}
	resp, body = e.do("POST", "/v1/responses", map[string]any{"model": "fast", "input": "hi"}, nil)
	mustStatus(t, resp, body, 200)
	if r := decode[map[string]any](t, body); r["model"] != "fast-7b-answered" {
		t.Errorf("response model %v, want the one that answered", r["model"])
	}

	n := def.count() + other.count()
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		body := map[string]any{"model": "gpt-unlisted", "messages": []any{userMsg("hi")}}
		if path == "/v1/responses" {
			body = map[string]any{"model": "gpt-unlisted", "input": "hi"}
		}
		resp, rbody := e.do("POST", path, body, nil)
		er := mustError(t, resp, rbody, 404, "invalid_request_error")
		if er.Error.Code == nil || *er.Error.Code != "model_not_found" || !strings.Contains(*er.Error.Message, "gpt-unlisted") {
			t.Errorf("%s: %s, want model_not_found naming the model", path, rbody)
		}
	}
	if def.count()+other.count() != n {
		t.Error("a request for an unlisted model reached a provider")
	}
	for _, model := range []string{"configured", ""} {
		resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"model": model, "messages": []any{userMsg("hi " + model)}}, nil)
		mustStatus(t, resp, body, 200)
		if got := string(def.last()["model"]); got != `"configured"` {
			t.Errorf("model %q: the configured provider was asked for %s", model, got)
		}
	}
}

// A request that retries a turn whose first attempt failed (the same
// Idempotency-Key, or the same opening messages) sends the model the
// tools and parameters it carries, as the first attempt did.
func TestRetrySendsTheSameToolsAndParameters(t *testing.T) {
	t.Parallel()
	for _, header := range []map[string]string{{IdempotencyHeader: "k-1"}, nil} {
		u := newUpstream(t)
		e := newTestEnv(t, func(o *Options) { o.Provider = u.provider() })
		body := map[string]any{"messages": []any{userMsg("use it")}, "temperature": 0.2,
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get"}}}}
		u.mu.Lock()
		u.refuse = 500
		u.mu.Unlock()
		resp, rbody := e.do("POST", "/v1/chat/completions", body, header)
		mustError(t, resp, rbody, 502, "server_error")
		first := u.last()
		u.mu.Lock()
		u.refuse = 0
		u.mu.Unlock()
		resp, rbody = e.do("POST", "/v1/chat/completions", body, header)
		mustStatus(t, resp, rbody, 200)
		retry := u.last()
		for _, f := range []string{"tools", "temperature"} {
			if len(retry[f]) == 0 || string(retry[f]) != string(first[f]) {
				t.Errorf("key %v: the retry sent %s = %s, the first attempt %s", header, f, retry[f], first[f])
			}
		}
		if all, _ := e.sessions.All(); len(all) != 1 {
			t.Errorf("key %v: %d sessions, want 1", header, len(all))
		}
	}
}
