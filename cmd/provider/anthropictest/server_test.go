package anthropictest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The fake refuses what the API refuses; the provider's tests rely on it.
func TestRefuses(t *testing.T) {
	const user, call = `{"role":"user","content":"hi"}`, `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}`
	cc := func(ttl string) string {
		return `{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"` + ttl + `"}}`
	}
	for _, c := range []struct{ body, want string }{
		{`{"model":"m","max_tokens":5,"messages":[` + user + `]}`, ""},
		{`{"model":"m","max_tokens":5,"messages":[` + user + `,` + call + `,` + result + `]}`, ""},
		{`{"model":"m","messages":[` + user + `]}`, "max_tokens"},
		{`{"model":"m","max_tokens":5,"messages":[]}`, "at least one message"},
		{`{"model":"m","max_tokens":5,"messages":[` + user + `,` + user + `]}`, "roles must alternate"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":""}]}`, "non-empty content"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "must be non-empty"},
		{`{"model":"m","max_tokens":5,"messages":[` + user + `,` + call + `]}`, "without `tool_result`"},
		{`{"model":"m","max_tokens":5,"messages":[` + user + `,` + call + `,` + user + `]}`, "without `tool_result`"},
		{`{"model":"m","max_tokens":5,"messages":[` + result + `]}`, "unexpected `tool_use_id`"},
		{`{"model":"m","max_tokens":5,"messages":[` + user + `,` + call + `,{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"t1"}]}]}`, "must come first"},
		{`{"model":"m","max_tokens":5,"messages":[` + user + `,{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"b"}]},` + user + `]}`, "Invalid `signature`"},
		{`{"model":"m","max_tokens":5,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + user + `,` + call + `,` + result + `]}`, "must start with a thinking block"},
		{`{"model":"m","max_tokens":5,"system":[` + cc("1h") + `,` + cc("5m") + `],"messages":[` + user + `]}`, ""},
		{`{"model":"m","max_tokens":5,"system":[` + cc("5m") + `,` + cc("1h") + `],"messages":[` + user + `]}`, "ttl 1h must not come after"},
		{`{"model":"m","max_tokens":5,"system":[` + strings.Repeat(cc("5m")+`,`, 4) + cc("5m") + `],"messages":[` + user + `]}`, "maximum of 4"},
	} {
		s := &Server{}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/messages", strings.NewReader(c.body)))
		if c.want == "" {
			if rec.Code != http.StatusOK {
				t.Errorf("%s: %d %s", c.body, rec.Code, rec.Body)
			}
			continue
		}
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), c.want) || !strings.Contains(rec.Body.String(), `"type":"error"`) {
			t.Errorf("%s: %d %s, want a 400 saying %q", c.body, rec.Code, rec.Body, c.want)
		}
	}
}

// The cache is read where a request's prefix up to a breakpoint is the
// bytes a previous request wrote, whatever the breakpoints' own marks.
func TestCache(t *testing.T) {
	s := &Server{}
	sys := `"system":[{"type":"text","text":"` + strings.Repeat("x", 400) + `","cache_control":{"type":"ephemeral"}}]`
	send := func(body string) Usage {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body)))
		if rec.Code != 200 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		r := s.Requests()
		return r[len(r)-1].Usage
	}
	first := send(`{"model":"m","max_tokens":5,` + sys + `,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`)
	if first.CacheReadInputTokens != 0 || first.CacheCreationInputTokens == 0 {
		t.Errorf("first %+v", first)
	}
	second := send(`{"model":"m","max_tokens":5,` + sys + `,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"more","cache_control":{"type":"ephemeral"}}]}]}`)
	if second.CacheReadInputTokens != first.CacheCreationInputTokens {
		t.Errorf("second %+v after %+v", second, first)
	}
	changed := send(`{"model":"m","max_tokens":5,` + sys + `,"messages":[{"role":"user","content":[{"text":"hi","type":"text"}]},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"more","cache_control":{"type":"ephemeral"}}]}]}`)
	if changed.CacheReadInputTokens >= second.CacheReadInputTokens {
		t.Errorf("a block's bytes changed, yet %+v", changed)
	}
}

// A script that calls a tool the request did not offer is an error of
// the fake's own (500), never a tool_use: a real model calls only what it
// was offered, so a test that passes through such a call would pass where
// a real model fails.
func TestCallsOnlyOfferedTools(t *testing.T) {
	s := &Server{Reply: func(*Request) []Block {
		return []Block{{Type: "tool_use", ID: "t1", Name: "mcp__hermes__kanban_create", Input: []byte(`{}`)}}
	}}
	for _, c := range []struct {
		tools string
		code  int
	}{
		{``, 500},
		{`,"tools":[{"name":"Bash","input_schema":{"type":"object"}}]`, 500},
		{`,"tools":[{"name":"mcp__hermes__kanban_create","input_schema":{"type":"object"}}]`, 200},
	} {
		rec := httptest.NewRecorder()
		body := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]` + c.tools + `}`
		s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body)))
		if rec.Code != c.code || c.code == 500 && !strings.Contains(rec.Body.String(), "mcp__hermes__kanban_create") {
			t.Errorf("tools %q: %d %s, want %d", c.tools, rec.Code, rec.Body, c.code)
		}
	}
}
