package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// testEnv is a gateway on httptest over a fresh profile directory.
type testEnv struct {
	t        *testing.T
	dir      string
	sessions *sessions.Store
	store    *gatewaystate.Store
	srv      *Server
	ts       *httptest.Server
}

func newTestEnv(t *testing.T, mod func(*Options)) *testEnv {
	t.Helper()
	dir := t.TempDir()
	warn := func(msg string) { t.Logf("warning: %s", msg) }
	sessions := sessions.NewStore(dir, "default", 10*time.Second, warn)
	store := gatewaystate.NewStore(dir, 10*time.Second, warn)
	echo, err := provider.New(provider.Config{Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Sessions: sessions, Store: store, Provider: echo, Logf: t.Logf}
	if mod != nil {
		mod(&opts)
	}
	srv := New(opts)
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.BaseContext = func(net.Listener) context.Context { return srv.BaseContext() }
	ts.Start()
	t.Cleanup(ts.Close)
	return &testEnv{t: t, dir: dir, sessions: sessions, store: store, srv: srv, ts: ts}
}

// do sends a request with a JSON body (a string is sent as it is) and
// returns the response with its body read.
func (e *testEnv) do(method, path string, body any, header map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	return doRequest(e.t, e.ts.URL, method, path, body, header)
}

func doRequest(t *testing.T, base, method, path string, body any, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	var text string
	h := map[string]string{}
	switch b := body.(type) {
	case nil:
	case string:
		text = b
	case []byte:
		text = string(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		text = string(j)
	}
	if body != nil {
		h["Content-Type"] = "application/json"
	}
	for k, v := range header {
		h[k] = v
	}
	return sendTo(t, base, method, path, "", text, h)
}

// mustStatus fails the test unless resp has status want.
func mustStatus(t *testing.T, resp *http.Response, body []byte, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d; body: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want, body)
	}
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return v
}

// sseEvent is one server-sent event.
type sseEvent struct {
	Name string
	Data string
}

// parseSSE splits a stream into events; it fails on a line that is neither
// an event, a data line nor blank.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data != "" || cur.Name != "" {
				events = append(events, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data += strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected line in event stream: %q", line)
		}
	}
	if cur.Data != "" {
		t.Fatalf("event stream ends inside an event: %+v", cur)
	}
	return events
}

// errorShape is the OpenAI error body.
type errorShape struct {
	Error struct {
		Message *string `json:"message"`
		Type    *string `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// mustError checks status and the OpenAI error shape: message and type set,
// param and code present (possibly null), and returns the body.
func mustError(t *testing.T, resp *http.Response, body []byte, status int, typ string) errorShape {
	t.Helper()
	mustStatus(t, resp, body, status)
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw["error"][k]; !ok {
			t.Fatalf("error body %s lacks error.%s", body, k)
		}
	}
	e := decode[errorShape](t, body)
	if e.Error.Message == nil || *e.Error.Message == "" || e.Error.Type == nil || *e.Error.Type != typ {
		t.Fatalf("error body %s: want a message and type %q", body, typ)
	}
	return e
}

// sessionsByKey returns the ids of the sessions whose session_key is key.
func sessionsByKey(t *testing.T, sessions *sessions.Store, key string) []string {
	t.Helper()
	all, err := sessions.All()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		if s.SessionKey == key {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// messages returns the transcript of id.
func messages(t *testing.T, sessions *sessions.Store, id string) []sessions.Message {
	t.Helper()
	msgs, err := sessions.Messages(id)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func getSession(t *testing.T, sessions *sessions.Store, id string) sessions.Session {
	t.Helper()
	s, err := sessions.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkTranscript checks the invariants of a gateway transcript made by
// the echo provider: seq 1, 2, 3 … without gaps, and each user message
// followed directly by its own reply (the echo of its text, counting the
// history it was sent with), so turns were never interleaved.
func checkTranscript(t *testing.T, msgs []sessions.Message) {
	t.Helper()
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d; transcript: %s", i+1, m.Seq, dump(msgs))
		}
	}
	for i := 0; i < len(msgs); i++ {
		if msgs[i].Role != "user" {
			continue
		}
		if i+1 >= len(msgs) || msgs[i+1].Role != "assistant" {
			t.Fatalf("user message seq %d is not followed by its reply; transcript: %s", msgs[i].Seq, dump(msgs))
		}
		want := echoText(i+1, msgs[i].Text())
		if got := msgs[i+1].Text(); got != want {
			t.Fatalf("reply seq %d is %q, want %q (turns interleaved?); transcript: %s", msgs[i+1].Seq, got, want, dump(msgs))
		}
		i++
	}
}

func echoText(n int, text string) string {
	return "echo: " + itoa(n) + " messages received; you said: " + text
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func dump(msgs []sessions.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		line, _ := m.MarshalJSON()
		b.WriteString("\n  ")
		b.Write(line)
	}
	return b.String()
}

// funcProvider is a provider whose Complete is a function.
type funcProvider struct {
	name string
	fn   func(ctx context.Context, req provider.Request) (provider.Reply, error)
}

func (p *funcProvider) Name() string { return p.name }
func (p *funcProvider) Complete(ctx context.Context, req provider.Request) (provider.Reply, error) {
	return p.fn(ctx, req)
}

func assistant(text string) provider.Reply {
	return provider.Reply{Messages: []sessions.Message{{Role: "assistant", Content: sessions.TextContent(text)}}}
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// historyOf reads a request's history into memory.
func historyOf(h provider.History) []sessions.Message {
	var msgs []sessions.Message
	h.Each(func(m sessions.Message) error {
		msgs = append(msgs, m)
		return nil
	})
	return msgs
}
