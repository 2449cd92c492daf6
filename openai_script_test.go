package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// scriptedModel is an OpenAI-compatible chat completions server that plays
// a model from a script, for the end-to-end scripts: `openai-server start
// FILE` runs one for the rest of a script and points hermes at it. It
// refuses what the real API refuses (a tool call without its result before
// the next message, a result that answers no call) with a 400, so a script
// proves that hermes never sends such a history.
//
// FILE holds one rule a line (JSON; blank lines and lines starting with #
// skipped):
//
//	{"match": "text", "role": "user", "times": 1, "delay_ms": 0,
//	 "reply": {"content": "text", "tool_calls": [{"id": "call_1", "name": "terminal", "arguments": {…}}]},
//	 "status": 500, "error": "text"}
//
// A request is answered by the first rule with uses left (times: default
// 1, -1 for no limit) whose match is in the request's last message, as raw
// JSON, and whose role, if set, is that message's. status and error answer
// with an error instead. No rule: a 500 naming the last message.
type scriptedModel struct {
	mu       sync.Mutex
	rules    []scriptRule
	requests [][]byte
	log      string // where each request body is appended, one a line
	calls    int
}

type scriptRule struct {
	Match   string `json:"match"`
	Role    string `json:"role"`
	Times   int    `json:"times"`
	DelayMS int    `json:"delay_ms"`
	Status  int    `json:"status"`
	Error   string `json:"error"`
	Reply   struct {
		Content   *string `json:"content"`
		ToolCalls []struct {
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
	} `json:"reply"`
	used int
}

func parseScript(r io.Reader) ([]scriptRule, error) {
	var rules []scriptRule
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r scriptRule
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if r.Times == 0 {
			r.Times = 1
		}
		rules = append(rules, r)
	}
	return rules, sc.Err()
}

// chatMessage is what the server reads of a request's message.
type chatMessage struct {
	Role       string                `json:"role"`
	ToolCallID string                `json:"tool_call_id"`
	ToolCalls  []struct{ ID string } `json:"tool_calls"`
}

// validate applies the API's rules on the order of tool calls and results.
func validate(msgs []chatMessage) error {
	var pending []string
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return fmt.Errorf("messages[%d]: invalid role %q", i, m.Role)
		}
		if m.Role == "tool" {
			k := -1
			for j, id := range pending {
				if id == m.ToolCallID {
					k = j
				}
			}
			if k < 0 {
				return fmt.Errorf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[%d], tool_call_id %q)", i, m.ToolCallID)
			}
			pending = append(pending[:k], pending[k+1:]...)
			continue
		}
		if len(pending) > 0 {
			break
		}
		for _, c := range m.ToolCalls {
			pending = append(pending, c.ID)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", "))
	}
	return nil
}

func (s *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, body)
	if s.log != "" {
		if f, err := os.OpenFile(s.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			var b bytes.Buffer
			json.Compact(&b, body)
			f.Write(append(b.Bytes(), '\n'))
			f.Close()
		}
	}
	s.mu.Unlock()
	var req struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
		Stream   bool              `json:"stream"`
		Tools    []struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		apiError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
		return
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Messages) == 0 {
		apiError(w, http.StatusBadRequest, fmt.Sprintf("a request needs model and messages (%v)", err))
		return
	}
	for _, t := range req.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			apiError(w, http.StatusBadRequest, "tools must be function entries with a name")
			return
		}
	}
	msgs := make([]chatMessage, len(req.Messages))
	for i, raw := range req.Messages {
		if err := json.Unmarshal(raw, &msgs[i]); err != nil {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("messages[%d]: %v", i, err))
			return
		}
	}
	if err := validate(msgs); err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	last := string(req.Messages[len(req.Messages)-1])
	rule := s.pick(last, msgs[len(msgs)-1].Role)
	if rule == nil {
		apiError(w, http.StatusInternalServerError, "the script has no rule for the last message "+last)
		return
	}
	if rule.DelayMS > 0 {
		select {
		case <-time.After(time.Duration(rule.DelayMS) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
	if rule.Status != 0 {
		apiError(w, rule.Status, rule.Error)
		return
	}
	s.answer(w, rule, req.Stream)
}

func (s *scriptedModel) pick(last, role string) *scriptRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.rules {
		r := &s.rules[i]
		if (r.Times < 0 || r.used < r.Times) && strings.Contains(last, r.Match) && (r.Role == "" || r.Role == role) {
			r.used++
			return r
		}
	}
	return nil
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": "messages", "code": nil,
	}})
}

// answer writes the rule's reply as a chat.completion, or as its stream of
// chunks: the content in two deltas, each call's arguments in two.
func (s *scriptedModel) answer(w http.ResponseWriter, rule *scriptRule, stream bool) {
	type function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		Index    *int     `json:"index,omitempty"` // in a stream's deltas only
		ID       string   `json:"id,omitempty"`
		Type     string   `json:"type,omitempty"`
		Function function `json:"function"`
	}
	var calls []call
	s.mu.Lock()
	for _, c := range rule.Reply.ToolCalls {
		s.calls++
		id := c.ID
		if id == "" {
			id = "call_" + strconv.Itoa(s.calls)
		}
		args := string(c.Arguments)
		var str string
		if json.Unmarshal(c.Arguments, &str) == nil {
			args = str // a string is sent as it is: a test may send broken JSON
		}
		calls = append(calls, call{ID: id, Type: "function", Function: function{Name: c.Name, Arguments: args}})
	}
	s.mu.Unlock()
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": rule.Reply.Content}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-script", "object": "chat.completion", "created": 0, "model": "script",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-script", "object": "chat.completion.chunk", "created": 0, "model": "script",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant"}, nil)
	if c := rule.Reply.Content; c != nil {
		half := len(*c) / 2
		chunk(map[string]any{"content": (*c)[:half]}, nil)
		chunk(map[string]any{"content": (*c)[half:]}, nil)
	}
	for i, c := range calls {
		args := c.Function.Arguments
		first := c
		first.Index, first.Function.Arguments = &i, args[:len(args)/2]
		chunk(map[string]any{"tool_calls": []call{first}}, nil)
		rest := call{Index: &i, Function: function{Arguments: args[len(args)/2:]}}
		chunk(map[string]any{"tool_calls": []call{rest}}, nil)
	}
	chunk(map[string]any{}, finish)
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-script", "object": "chat.completion.chunk", "choices": []any{}, "usage": usage})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

// openAIServerCmd is the testscript command:
//
//	openai-server start FILE   serve FILE's rules on 127.0.0.1 until the script ends,
//	                           with HERMES_PROVIDER, HERMES_BASE_URL and HERMES_MODEL set
//	openai-server requests N   exactly N requests came (each is in $WORK/requests.jsonl)
func openAIServerCmd(servers *sync.Map) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: openai-server start FILE | openai-server requests N")
		}
		switch args[0] {
		case "start":
			f, err := os.Open(ts.MkAbs(args[1]))
			ts.Check(err)
			rules, err := parseScript(f)
			f.Close()
			ts.Check(err)
			m := &scriptedModel{rules: rules, log: filepath.Join(ts.Getenv("WORK"), "requests.jsonl")}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			ts.Check(err)
			srv := &http.Server{Handler: m}
			go srv.Serve(l)
			ts.Defer(func() { srv.Shutdown(context.Background()) })
			servers.Store(ts, m)
			ts.Setenv("HERMES_PROVIDER", "openai")
			ts.Setenv("HERMES_BASE_URL", "http://"+l.Addr().String()+"/v1")
			ts.Setenv("HERMES_MODEL", "test-model")
		case "requests":
			v, ok := servers.Load(ts)
			if !ok {
				ts.Fatalf("openai-server requests: no server started")
			}
			m := v.(*scriptedModel)
			want, err := strconv.Atoi(args[1])
			ts.Check(err)
			m.mu.Lock()
			got := len(m.requests)
			m.mu.Unlock()
			if got != want {
				ts.Fatalf("the server got %d requests, want %d (see $WORK/requests.jsonl)", got, want)
			}
		default:
			ts.Fatalf("usage: openai-server start FILE | openai-server requests N")
		}
	}
}

// The scripted model refuses what the real API refuses: hermes's scripts
// rely on it to prove every call is answered before the next message.
func TestScriptedModelValidates(t *testing.T) {
	msg := func(s string) chatMessage {
		var m chatMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	user := msg(`{"role":"user"}`)
	call := msg(`{"role":"assistant","tool_calls":[{"id":"a"},{"id":"b"}]}`)
	resA, resB, resX := msg(`{"role":"tool","tool_call_id":"a"}`), msg(`{"role":"tool","tool_call_id":"b"}`), msg(`{"role":"tool","tool_call_id":"x"}`)
	for _, c := range []struct {
		msgs []chatMessage
		bad  string
	}{
		{[]chatMessage{user, call, resA, resB, user}, ""},
		{[]chatMessage{user, call, resB, resA}, ""},
		{[]chatMessage{user, call, resA, user}, "did not have response messages: b"},
		{[]chatMessage{user, call}, "did not have response messages: a, b"},
		{[]chatMessage{user, call, resA, resB, resX}, "must be a response to a preceeding message"},
		{[]chatMessage{user, resA}, "must be a response"},
		{[]chatMessage{user, call, resA, resA, resB}, "must be a response"},
		{[]chatMessage{msg(`{"role":"robot"}`)}, "invalid role"},
	} {
		err := validate(c.msgs)
		if (c.bad == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%+v: %v, want %q", c.msgs, err, c.bad)
		}
	}
}
