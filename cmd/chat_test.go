package cmd

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// The openai provider end to end: hermes chat against an httptest server
// that speaks the chat completions API, in process through Run.

// chatEnv clears every setting chat reads from the environment, so the
// tests see only their own flags.
func chatEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		"HERMES_HOME", "HERMES_PROFILE", "HERMES_PROVIDER", "HERMES_MODEL",
		"HERMES_BASE_URL", "HERMES_EXEC_COMMAND", "HERMES_API_KEY", "OPENAI_API_KEY",
	} {
		t.Setenv(k, "")
	}
}

// runHermes runs hermes in process with home as --home.
func runHermes(t *testing.T, home, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut strings.Builder
	code = Run(append([]string{"hermes", "--home", home}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustRun is runHermes that fails the test unless the exit code is 0.
func mustRun(t *testing.T, home, stdin string, args ...string) string {
	t.Helper()
	code, out, errOut := runHermes(t, home, stdin, args...)
	if code != 0 {
		t.Fatalf("hermes %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// chatRequest is what the server is sent.
type chatRequest struct {
	Model    string                       `json:"model"`
	Messages []map[string]json.RawMessage `json:"messages"`
	Stream   bool                         `json:"stream"`
}

// fakeOpenAI is a chat completions server. Each request is recorded and
// answered by respond (status, extra headers, body).
type fakeOpenAI struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []chatRequest
	auth    []string
	respond func(n int) (int, map[string]string, string) // n: 1 for the first request
}

func newFakeOpenAI(t *testing.T, respond func(n int) (int, map[string]string, string)) *fakeOpenAI {
	f := &fakeOpenAI{t: t, respond: respond}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("server got %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading request: %v", err)
			return
		}
		var req chatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request is not JSON: %v\n%s", err, body)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		n := len(f.reqs)
		f.mu.Unlock()
		status, headers, resp := f.respond(n)
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, resp)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) baseURL() string { return f.srv.URL + "/v1" }

func (f *fakeOpenAI) authHeaders() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}

func (f *fakeOpenAI) requests() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chatRequest(nil), f.reqs...)
}

// completion is a 200 body with one assistant message.
func completion(text string) string {
	b, _ := json.Marshal(map[string]any{
		"id":      "chatcmpl-1",
		"object":  "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]int{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
	})
	return string(b)
}

// storedMessage is a transcript line as sessions show --json prints it.
type storedMessage struct {
	Seq        int64           `json:"seq"`
	TS         string          `json:"ts"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	Reasoning  json.RawMessage `json:"reasoning"`
}

type shownSession struct {
	ID           string          `json:"id"`
	Model        string          `json:"model"`
	State        string          `json:"state"`
	MessageCount int64           `json:"message_count"`
	Messages     []storedMessage `json:"messages"`
}

func showSession(t *testing.T, home, id string) shownSession {
	t.Helper()
	out := mustRun(t, home, "", "--json", "sessions", "show", id)
	var s shownSession
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("sessions show --json %s: %v\n%s", id, err, out)
	}
	return s
}

// chatTurn is chat --json's output.
type chatTurn struct {
	SessionID    string `json:"session_id"`
	Reply        string `json:"reply"`
	MessageCount int64  `json:"message_count"`
}

func parseTurn(t *testing.T, out string) chatTurn {
	t.Helper()
	var r chatTurn
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("chat --json output: %v\n%s", err, out)
	}
	return r
}

func jsonString(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("not a JSON string: %s", raw)
	}
	return s
}

func TestChatOpenAIFullHistory(t *testing.T) {
	chatEnv(t)
	t.Setenv("HERMES_API_KEY", "sk-test")
	home := t.TempDir()
	srv := newFakeOpenAI(t, func(n int) (int, map[string]string, string) {
		return 200, nil, completion([]string{"", "first reply", "second reply"}[min(n, 2)])
	})
	openai := []string{"chat", "--provider", "openai", "--base-url", srv.baseURL(), "--model", "m"}

	// Turn 1: a new session.
	out := mustRun(t, home, "", append([]string{"--json"}, append(openai, "-q", "hi")...)...)
	turn := parseTurn(t, out)
	if turn.Reply != "first reply" || turn.MessageCount != 2 || turn.SessionID == "" {
		t.Fatalf("first turn = %+v, want reply %q and 2 messages", turn, "first reply")
	}
	id := turn.SessionID

	// A tool exchange stored between the turns, with a key the API does
	// not define (reasoning), which must not be sent.
	tools := `{"role":"assistant","content":null,"reasoning":"check the disk","tool_calls":[{"id":"call_1","type":"function","function":{"name":"df","arguments":"{\"path\":\"/\"}"}}]}
{"role":"tool","tool_call_id":"call_1","name":"df","content":"42% used"}
`
	if got := mustRun(t, home, tools, "sessions", "append", id); strings.TrimSpace(got) != "4" {
		t.Fatalf("sessions append printed %q, want 4", got)
	}

	// Turn 2: resume; the server must see the whole history in order.
	out = mustRun(t, home, "", append(openai, "--resume", id, "-q", "and now?")...)
	if out != "second reply\n" {
		t.Errorf("second turn printed %q, want %q", out, "second reply\n")
	}

	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.Model != "m" {
			t.Errorf("request %d: model %q, want m", i+1, r.Model)
		}
		if r.Stream {
			t.Errorf("request %d asked for a stream; stdout is not a terminal", i+1)
		}
	}
	if auth := srv.authHeaders(); auth[0] != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want the API key as a bearer token", auth[0])
	}
	if got := reqs[0].Messages; len(got) != 1 || jsonString(t, got[0]["role"]) != "user" || jsonString(t, got[0]["content"]) != "hi" {
		t.Errorf("first request messages = %v, want the one user message", got)
	}

	got := reqs[1].Messages
	type want struct{ role, content string }
	wants := []want{
		{"user", `"hi"`},
		{"assistant", `"first reply"`},
		{"assistant", `null`},
		{"tool", `"42% used"`},
		{"user", `"and now?"`},
	}
	if len(got) != len(wants) {
		t.Fatalf("second request has %d messages, want %d: %v", len(got), len(wants), got)
	}
	for i, w := range wants {
		if r := jsonString(t, got[i]["role"]); r != w.role {
			t.Errorf("message %d: role %q, want %q", i+1, r, w.role)
		}
		if c := string(got[i]["content"]); c != w.content {
			t.Errorf("message %d: content %s, want %s", i+1, c, w.content)
		}
		for _, k := range []string{"seq", "ts", "reasoning"} {
			if _, ok := got[i][k]; ok {
				t.Errorf("message %d was sent with %q: %v", i+1, k, got[i])
			}
		}
	}
	wantCalls := `[{"id":"call_1","type":"function","function":{"name":"df","arguments":"{\"path\":\"/\"}"}}]`
	if tc := string(got[2]["tool_calls"]); tc != wantCalls {
		t.Errorf("tool_calls sent = %s, want %s", tc, wantCalls)
	}
	if jsonString(t, got[3]["tool_call_id"]) != "call_1" || jsonString(t, got[3]["name"]) != "df" {
		t.Errorf("tool message sent = %v, want tool_call_id call_1 and name df", got[3])
	}

	// The reply is stored after the user message; the stored history keeps
	// its extra key and its order.
	s := showSession(t, home, id)
	if s.Model != "m" || s.State != "ended" || s.MessageCount != 6 || len(s.Messages) != 6 {
		t.Fatalf("session = model %q state %q count %d (%d messages), want m ended 6", s.Model, s.State, s.MessageCount, len(s.Messages))
	}
	var roles []string
	for i, m := range s.Messages {
		roles = append(roles, m.Role)
		if m.Seq != int64(i+1) {
			t.Errorf("message %d has seq %d", i+1, m.Seq)
		}
	}
	if want := []string{"user", "assistant", "assistant", "tool", "user", "assistant"}; !reflect.DeepEqual(roles, want) {
		t.Errorf("stored roles = %v, want %v", roles, want)
	}
	if c := string(s.Messages[5].Content); c != `"second reply"` {
		t.Errorf("stored reply content = %s", c)
	}
	if string(s.Messages[2].Reasoning) != `"check the disk"` {
		t.Errorf("stored tool-call message lost its reasoning: %s", s.Messages[2].Reasoning)
	}
}

func TestChatOpenAIRetries429(t *testing.T) {
	chatEnv(t)
	home := t.TempDir()
	srv := newFakeOpenAI(t, func(n int) (int, map[string]string, string) {
		if n == 1 {
			return 429, map[string]string{"Retry-After": "0"}, `{"error":{"message":"Rate limit reached","type":"requests"}}`
		}
		return 200, nil, completion("after the wait")
	})
	code, out, errOut := runHermes(t, home, "", "--json", "chat", "--provider", "openai", "--base-url", srv.baseURL(), "--model", "m", "-q", "hi")
	if code != 0 {
		t.Fatalf("exit %d, want 0 after one 429\nstderr: %s", code, errOut)
	}
	turn := parseTurn(t, out)
	if turn.Reply != "after the wait" || turn.MessageCount != 2 {
		t.Errorf("turn = %+v", turn)
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2 (one 429, one retry)", len(reqs))
	}
	if !reflect.DeepEqual(reqs[0], reqs[1]) {
		t.Errorf("the retry differs from the first request:\n%v\n%v", reqs[0], reqs[1])
	}
	s := showSession(t, home, turn.SessionID)
	if len(s.Messages) != 2 || s.Messages[0].Role != "user" || s.Messages[1].Role != "assistant" {
		t.Fatalf("transcript = %+v, want user then assistant (one reply, not two user messages)", s.Messages)
	}
}

func TestChatOpenAIServerErrorKeepsSession(t *testing.T) {
	chatEnv(t)
	home := t.TempDir()
	var failing sync.Map // set once the server should fail
	srv := newFakeOpenAI(t, func(n int) (int, map[string]string, string) {
		if _, ok := failing.Load("on"); ok {
			return 500, map[string]string{"Retry-After": "0"}, `{"error":{"message":"upstream exploded"}}`
		}
		return 200, nil, completion("fine")
	})
	openai := []string{"chat", "--provider", "openai", "--base-url", srv.baseURL(), "--model", "m"}
	turn := parseTurn(t, mustRun(t, home, "", append([]string{"--json"}, append(openai, "-q", "first")...)...))
	id := turn.SessionID
	before := showSession(t, home, id)

	failing.Store("on", true)
	code, out, errOut := runHermes(t, home, "", append(openai, "--resume", id, "-q", "second")...)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d\nstderr: %s", code, ExitFailed, errOut)
	}
	if out != "" {
		t.Errorf("stdout = %q, want nothing", out)
	}
	for _, want := range []string{"openai: HTTP 500: upstream exploded", "session " + id + " keeps your message", "hermes chat --resume " + id} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q does not contain %q", errOut, want)
		}
	}
	// One request and three retries (the default), then it gives up.
	if n := len(srv.requests()); n != 5 {
		t.Errorf("server got %d requests, want 5: the first turn, then the failing call and its 3 retries", n)
	}

	after := showSession(t, home, id)
	if after.MessageCount != 3 || len(after.Messages) != 3 {
		t.Fatalf("after the failure: count %d, %d messages; want 3", after.MessageCount, len(after.Messages))
	}
	if !reflect.DeepEqual(after.Messages[:2], before.Messages) {
		t.Errorf("the earlier messages changed:\n%+v\n%+v", before.Messages, after.Messages[:2])
	}
	last := after.Messages[2]
	if last.Role != "user" || string(last.Content) != `"second"` {
		t.Errorf("last message = %+v, want the user's %q", last, "second")
	}
	// The chat exited normally, failure and all: the session is ended
	// (cli_exit), and the next turn reopens it.
	if after.State != "ended" {
		t.Errorf("state = %q, want ended", after.State)
	}

	// A later turn, with the server back, continues the session and sends
	// the unanswered message too.
	failing.Delete("on")
	mustRun(t, home, "", append(openai, "--resume", id, "-q", "third")...)
	reqs := srv.requests()
	msgs := reqs[len(reqs)-1].Messages
	if len(msgs) != 4 || string(msgs[2]["content"]) != `"second"` || string(msgs[3]["content"]) != `"third"` {
		t.Errorf("request after recovery = %v, want 4 messages ending with second, third", msgs)
	}
	if s := showSession(t, home, id); s.MessageCount != 5 || s.Messages[4].Role != "assistant" {
		t.Errorf("after recovery: %d messages, last %q", s.MessageCount, s.Messages[len(s.Messages)-1].Role)
	}
}

func TestChatOpenAIClientErrorNotRetried(t *testing.T) {
	chatEnv(t)
	home := t.TempDir()
	srv := newFakeOpenAI(t, func(n int) (int, map[string]string, string) {
		return 400, nil, `{"error":{"message":"model m does not exist"}}`
	})
	code, _, errOut := runHermes(t, home, "", "chat", "--provider", "openai", "--base-url", srv.baseURL(), "--model", "m", "-q", "hi")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d", code, ExitFailed)
	}
	if !strings.Contains(errOut, "openai: HTTP 400: model m does not exist") {
		t.Errorf("stderr = %q", errOut)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("server got %d requests; a 400 is not retried", n)
	}
}

// A reply that calls a tool the chat does not offer is stored as the
// server sent it; the call is answered as an error, and the model is
// called again with the answer.
func TestChatOpenAIUnknownToolAnswered(t *testing.T) {
	chatEnv(t)
	home := t.TempDir()
	srv := newFakeOpenAI(t, func(n int) (int, map[string]string, string) {
		if n == 1 {
			return 200, nil, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"ls","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
		}
		return 200, nil, completion("no ls here")
	})
	out := mustRun(t, home, "", "--json", "chat", "--provider", "openai", "--base-url", srv.baseURL(), "--model", "m", "-q", "list")
	turn := parseTurn(t, out)
	if turn.Reply != "no ls here" || turn.MessageCount != 4 {
		t.Errorf("turn = %+v, want the second reply and 4 messages", turn)
	}
	s := showSession(t, home, turn.SessionID)
	m := s.Messages[1]
	if m.Role != "assistant" || string(m.Content) != "null" || string(m.ToolCalls) != `[{"id":"call_9","type":"function","function":{"name":"ls","arguments":"{}"}}]` {
		t.Errorf("stored reply = role %q content %s tool_calls %s", m.Role, m.Content, m.ToolCalls)
	}
	if r := s.Messages[2]; r.Role != "tool" || r.ToolCallID != "call_9" || !strings.HasPrefix(string(r.Content), `"error: unknown tool \"ls\"`) {
		t.Errorf("the call's answer: %+v", r)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || len(reqs[1].Messages) != 3 || string(reqs[1].Messages[2]["role"]) != `"tool"` {
		t.Errorf("the second request did not carry the answer: %+v", reqs)
	}
}

func TestChatOpenAIFromEnvironment(t *testing.T) {
	chatEnv(t)
	home := t.TempDir()
	srv := newFakeOpenAI(t, func(n int) (int, map[string]string, string) { return 200, nil, completion("from env") })
	t.Setenv("HERMES_PROVIDER", "openai")
	t.Setenv("HERMES_MODEL", "env-model")
	t.Setenv("HERMES_BASE_URL", srv.baseURL())
	if out := mustRun(t, home, "", "chat", "-q", "hi"); out != "from env\n" {
		t.Errorf("stdout = %q", out)
	}
	// A flag wins over the environment.
	mustRun(t, home, "", "chat", "--model", "flag-model", "-c", "-q", "again")
	reqs := srv.requests()
	if len(reqs) != 2 || reqs[0].Model != "env-model" || reqs[1].Model != "flag-model" {
		t.Errorf("models sent = %v", reqs)
	}
}
