package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd/importer"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// importedSnapshot is a Python hermes snapshot as that program writes it
// after a Codex-backed turn: tool_calls null on messages that have none,
// call_id and response_item_id inside the tool calls, and keys of its own
// on the messages (reasoning, finish_reason, a tool's name).
const importedSnapshot = `{
  "session_id": "20250301_101500_ab12cd",
  "model": "gpt-5-codex",
  "session_start": "2025-03-01T10:15:00.123456",
  "system_prompt": "You are Hermes.",
  "messages": [
    {"role": "user", "content": "What is in /tmp?", "tool_calls": null},
    {"role": "assistant", "content": "", "reasoning": "list it", "reasoning_content": "list it",
     "finish_reason": "tool_calls", "codex_reasoning_items": [{"id": "rs_1"}],
     "tool_calls": [{"id": "call_ls1", "call_id": "call_ls1", "response_item_id": "fc_1", "type": "function",
       "function": {"name": "terminal", "arguments": "{\"command\": \"ls /tmp\"}"}}]},
    {"role": "tool", "tool_call_id": "call_ls1", "name": "terminal", "content": "a.txt\nb.txt", "tool_calls": null},
    {"role": "assistant", "content": "Two files.", "tool_calls": null, "finish_reason": "stop"}
  ]
}`

// apiFields are the fields the chat completions API defines for a request
// message of each role that hermes sends (system, user, assistant, tool),
// and name on a tool message, which tool-use examples send.
var apiFields = map[string][]string{
	"system":    {"content", "name", "role"},
	"user":      {"content", "name", "role"},
	"assistant": {"content", "name", "role", "tool_calls"},
	"tool":      {"content", "name", "role", "tool_call_id"},
}

// resumeImported imports importedSnapshot, resumes it with one turn through
// the openai provider set up by cfg, and returns the body the server got.
func resumeImported(t *testing.T, cfg provider.Config) map[string]json.RawMessage {
	t.Helper()
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer srv.Close()

	parsed, err := importer.Parse(strings.NewReader(importedSnapshot), "")
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(t)
	in := parsed[0]
	sess, _, err := st.CreateWith(sessions.Session{ID: in.ID, Source: in.Source, State: sessions.StateEnded, EndReason: "imported"}, in.Messages)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Name, cfg.BaseURL, cfg.Model = "openai", srv.URL+"/v1", "test-model"
	p, err := provider.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Sessions: st, Provider: p}
	if _, err := e.Run(context.Background(), Turn{SessionID: sess.ID, Input: user("and now?")}); err != nil {
		t.Fatal(err)
	}
	// The transcript stays lossless: only the request was cleaned.
	msgs := stored(t, st, sess.ID)
	if !bytes.Contains(msgs[2].ToolCalls, []byte(`"response_item_id":"fc_1"`)) || msgs[2].Extra["finish_reason"] == nil {
		t.Errorf("the stored assistant message lost its fields: %s", dumpMsgs(msgs[2:3]))
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body %s: %v", body, err)
	}
	return req
}

// keysOf returns an object and its keys, sorted, and fails on a null
// value.
func keysOf(t *testing.T, where string, raw json.RawMessage) (map[string]json.RawMessage, []string) {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("%s: %s is not an object", where, raw)
	}
	keys := make([]string, 0, len(obj))
	for k, v := range obj {
		keys = append(keys, k)
		// The one null the API takes: the content of a message with tool calls.
		if string(v) == "null" && !(k == "content" && obj["tool_calls"] != nil) {
			t.Errorf("%s: %q is null: %s", where, k, raw)
		}
	}
	sort.Strings(keys)
	return obj, keys
}

func subset(keys, allowed []string) bool {
	for _, k := range keys {
		if !contains(allowed, k) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// checkAPIFields fails on any field of the request outside the API's, and
// returns the messages.
func checkAPIFields(t *testing.T, req map[string]json.RawMessage, extra map[string][]string) []map[string]json.RawMessage {
	t.Helper()
	var top []string
	for k := range req {
		top = append(top, k)
	}
	if !subset(top, []string{"model", "messages", "tools", "stream", "stream_options"}) {
		t.Errorf("request keys %v", top)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(req["messages"], &raws); err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]json.RawMessage
	for i, raw := range raws {
		m, keys := keysOf(t, "message", raw)
		var role string
		json.Unmarshal(m["role"], &role)
		if allowed := append(apiFields[role], extra[role]...); !subset(keys, allowed) {
			t.Errorf("messages[%d] (%s) has keys %v, want only %v: %s", i, role, keys, allowed, raw)
		}
		if tc, ok := m["tool_calls"]; ok {
			var calls []json.RawMessage
			if err := json.Unmarshal(tc, &calls); err != nil || len(calls) == 0 {
				t.Errorf("messages[%d].tool_calls is not a list of calls: %s", i, tc)
			}
			for j, c := range calls {
				call, keys := keysOf(t, "tool call", c)
				if strings.Join(keys, ",") != "function,id,type" {
					t.Errorf("messages[%d].tool_calls[%d] has keys %v, want function, id and type: %s", i, j, keys, c)
				}
				if _, keys := keysOf(t, "function", call["function"]); strings.Join(keys, ",") != "arguments,name" {
					t.Errorf("messages[%d].tool_calls[%d].function has keys %v: %s", i, j, keys, c)
				}
			}
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// A resumed import sends only what the chat completions API defines: no
// null tool_calls, tool calls without call_id and response_item_id, no
// key of the program that wrote the transcript, and by default no
// reasoning_content.
func TestResumedImportSendsOnlyAPIFields(t *testing.T) {
	req := resumeImported(t, provider.Config{})
	msgs := checkAPIFields(t, req, nil)
	var roles []string
	for _, m := range msgs {
		var role string
		json.Unmarshal(m["role"], &role)
		roles = append(roles, role)
	}
	if got := strings.Join(roles, " "); got != "system user assistant tool assistant user" {
		t.Errorf("roles %s", got)
	}
}

// With reasoning_content: replay, each assistant message carries its
// reasoning_content, an empty one when the transcript has none (DeepSeek
// refuses a tool-call message without it); nothing else is added.
func TestResumedImportReplaysReasoningContent(t *testing.T) {
	req := resumeImported(t, provider.Config{ReasoningContent: provider.ReasoningReplay})
	msgs := checkAPIFields(t, req, map[string][]string{"assistant": {"reasoning_content"}})
	var got []string
	for _, m := range msgs {
		if string(m["role"]) == `"assistant"` {
			got = append(got, string(m["reasoning_content"]))
		}
	}
	if strings.Join(got, " ") != `"list it" ""` {
		t.Errorf("reasoning_content of the assistant messages: %v", got)
	}
}
