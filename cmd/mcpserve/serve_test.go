package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/sessions"
)

func testOptions(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	warn := func(string) {}
	return Options{
		Sessions: sessions.NewStore(dir, "default", time.Second, warn),
		Board:    kanban.NewBoard(dir, time.Second, warn),
		Profile:  "default",
		Author:   "tester",
	}
}

// addSession stores a session id with one user message per content.
func addSession(t *testing.T, st *sessions.Store, id string, contents ...string) {
	t.Helper()
	if _, _, err := st.Create(sessions.Session{ID: id}); err != nil {
		t.Fatal(err)
	}
	var msgs []sessions.Message
	for _, c := range contents {
		msgs = append(msgs, sessions.Message{Role: "user", Content: sessions.TextContent(c)})
	}
	if _, err := st.Append(id, msgs); err != nil {
		t.Fatal(err)
	}
}

// connect is a client session of New(o) over an in-memory transport.
func connect(t *testing.T, o Options) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New(o).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls tool name and returns its text and whether it is an error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.(*mcp.TextContent).Text)
	}
	return b.String(), res.IsError
}

// shown is the part of a session_show result the tests read.
type shown struct {
	ID       string            `json:"id"`
	Offset   int64             `json:"offset"`
	Messages []json.RawMessage `json:"messages"`
	Next     int64             `json:"next_offset"`
}

func TestShowPagesWithinTheBound(t *testing.T) {
	o := testOptions(t)
	o.MaxBytes = 4096
	var contents []string
	for i := range 30 {
		contents = append(contents, fmt.Sprintf("%03d %s", i+1, strings.Repeat("x", 500)))
	}
	addSession(t, o.Sessions, "s1", contents...)
	cs := connect(t, o)
	var seqs []int64
	offset := int64(0)
	for pages := 0; ; pages++ {
		if pages > 30 {
			t.Fatal("paging does not end")
		}
		out, isErr := call(t, cs, "session_show", map[string]any{"session": "s1", "offset": offset, "limit": 200})
		if isErr {
			t.Fatal(out)
		}
		if len(out) > o.MaxBytes {
			t.Fatalf("a result of %d bytes, over the bound of %d", len(out), o.MaxBytes)
		}
		var s shown
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if s.ID != "s1" || s.Offset != offset || len(s.Messages) == 0 {
			t.Fatalf("page at %d: %s", offset, out)
		}
		for _, m := range s.Messages {
			var msg struct{ Seq int64 }
			json.Unmarshal(m, &msg)
			seqs = append(seqs, msg.Seq)
		}
		if s.Next == 0 {
			break
		}
		offset = s.Next
	}
	if len(seqs) != 30 {
		t.Fatalf("pages held %d messages, want 30: %v", len(seqs), seqs)
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("message %d has seq %d: %v", i, seq, seqs)
		}
	}
}

func TestShowOmitsAMessageOverTheBound(t *testing.T) {
	o := testOptions(t)
	o.MaxBytes = 2048
	addSession(t, o.Sessions, "s1", strings.Repeat("y", 10000), "small")
	cs := connect(t, o)
	out, isErr := call(t, cs, "session_show", map[string]any{"session": "s1"})
	if isErr || len(out) > o.MaxBytes {
		t.Fatalf("error %v, %d bytes: %.300s", isErr, len(out), out)
	}
	var s shown
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Messages) != 2 || s.Next != 0 || !strings.HasPrefix(string(s.Messages[0]), `{"seq":1,"role":"user","omitted":"a message of 10`) ||
		!strings.Contains(string(s.Messages[1]), `"content":"small"`) {
		t.Fatalf("want the first message omitted, the second whole: %s", out)
	}
}

func TestListingStopsAtTheBound(t *testing.T) {
	o := testOptions(t)
	o.MaxBytes = 1024
	for i := range 20 {
		addSession(t, o.Sessions, fmt.Sprintf("s%02d", i), "needle here")
	}
	cs := connect(t, o)
	out, isErr := call(t, cs, "session_search", map[string]any{"query": "needle"})
	if isErr || len(out) > o.MaxBytes+200 {
		t.Fatalf("error %v, %d bytes: %s", isErr, len(out), out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, fmt.Sprintf("(%d more not shown: over the output limit of 1024 bytes", 20-(len(lines)-1))) {
		t.Fatalf("last line %q", last)
	}
	for _, l := range lines[:len(lines)-1] {
		if !json.Valid([]byte(l)) {
			t.Fatalf("not a record: %q", l)
		}
	}
}

func TestWorkerToolsOnlyInAWorker(t *testing.T) {
	names := func(o Options) string {
		res, err := connect(t, o).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
			if tl.InputSchema == nil {
				t.Errorf("%s has no input schema", tl.Name)
			}
		}
		return strings.Join(out, " ")
	}
	o := testOptions(t)
	if got := names(o); strings.Contains(got, "kanban_complete") || strings.Contains(got, "kanban_block") {
		t.Fatalf("outside a worker: %s", got)
	}
	o.Worker = &kanban.Worker{Task: "t1", Run: "r1", Claim: "c1"}
	if got := names(o); !strings.Contains(got, "kanban_complete") || !strings.Contains(got, "kanban_block") {
		t.Fatalf("inside a worker: %s", got)
	}
}

// bearer adds the key to each request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPGuardAndKey(t *testing.T) {
	o := testOptions(t)
	addSession(t, o.Sessions, "s1", "over http")
	hs := httptest.NewServer(nil)
	hs.Config.Handler = Handler(New(o), hs.Listener.Addr().String(), "sekrit", nil, nil, 0)
	defer hs.Close()
	url := hs.URL + "/mcp"
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)

	// With the key: a call works.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{"sekrit"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, isErr := call(t, cs, "session_search", map[string]any{"query": "over"})
	cs.Close()
	if isErr || !strings.Contains(out, `"session_id":"s1"`) {
		t.Fatalf("with the key: %s", out)
	}

	// Without it, or with another: refused.
	for _, hc := range []*http.Client{http.DefaultClient, {Transport: bearer{"wrong"}}} {
		if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil); err == nil {
			cs.Close()
			t.Fatal("connected without the key")
		}
	}

	// A foreign Host, or an Origin not allowed, is refused before the key
	// is asked for.
	for _, h := range []map[string]string{{"Host": "attacker.example"}, {"Origin": "http://attacker.example"}} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sekrit")
		for k, v := range h {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%v: status %d, want 403", h, resp.StatusCode)
		}
	}
}

// A page of an allowed origin can speak MCP to mcp serve --http: its
// preflight allows the transport's headers and DELETE, and a response
// exposes Mcp-Session-Id, without which a browser client cannot go on.
func TestHTTPCORS(t *testing.T) {
	o := testOptions(t)
	hs := httptest.NewServer(nil)
	hs.Config.Handler = Handler(New(o), hs.Listener.Addr().String(), "sekrit", nil, []string{"http://app.example"}, 0)
	defer hs.Close()
	do := func(method, origin string, hdr map[string]string, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Origin", origin)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	preflight := map[string]string{
		"Access-Control-Request-Method":  "POST",
		"Access-Control-Request-Headers": "authorization, content-type, mcp-session-id, mcp-protocol-version, last-event-id",
	}

	resp := do("OPTIONS", "http://app.example", preflight, "")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("preflight: status %d", resp.StatusCode)
	}
	allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"authorization", "content-type", "mcp-session-id", "mcp-protocol-version", "last-event-id"} {
		if !strings.Contains(allowed, h) {
			t.Errorf("preflight: Access-Control-Allow-Headers %q lacks %s", allowed, h)
		}
	}
	if m := resp.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(m, "DELETE") || !strings.Contains(m, "POST") {
		t.Errorf("preflight: Access-Control-Allow-Methods %q", m)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "http://app.example" {
		t.Errorf("preflight: Access-Control-Allow-Origin %q", got)
	}

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`
	post := map[string]string{"Authorization": "Bearer sekrit", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	resp = do("POST", "http://app.example", post, initialize)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: status %d, Mcp-Session-Id %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
	if got := resp.Header.Get("Access-Control-Expose-Headers"); got != "Mcp-Session-Id" {
		t.Errorf("initialize: Access-Control-Expose-Headers %q, want Mcp-Session-Id", got)
	}

	// Another origin: refused, and told nothing of CORS.
	for _, method := range []string{"OPTIONS", "POST"} {
		resp = do(method, "http://attacker.example", preflight, initialize)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" ||
			resp.Header.Get("Access-Control-Allow-Headers") != "" || resp.Header.Get("Access-Control-Expose-Headers") != "" {
			t.Errorf("%s from another origin: status %d, headers %v", method, resp.StatusCode, resp.Header)
		}
	}
}

// TestKanbanWaitingChild: kanban_show and kanban_list show a child with a
// parent as hermes kanban show and list do: waiting, with what it waits
// for, then ready in the commit that completes its parent, though its
// document still says todo.
func TestKanbanWaitingChild(t *testing.T) {
	o := testOptions(t)
	if _, err := o.Board.Create(kanban.Task{ID: "p", Title: "parent"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Board.Create(kanban.Task{ID: "c", Title: "child", Parents: []string{"p"}}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, o)
	var got struct {
		Status string       `json:"status"`
		Hold   *kanban.Hold `json:"hold"`
	}
	out, isErr := call(t, cs, "kanban_show", map[string]any{"id": "c"})
	if isErr || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("kanban_show: %s", out)
	}
	if got.Status != "todo" || got.Hold == nil || got.Hold.Parent != "p" || got.Hold.Reason != "waiting for parent p (ready)" {
		t.Fatalf("waiting child shown as %s", out)
	}
	if _, err := o.Board.Complete("p", nil, "done"); err != nil {
		t.Fatal(err)
	}
	got.Hold = nil
	if out, _ := call(t, cs, "kanban_show", map[string]any{"id": "c"}); json.Unmarshal([]byte(out), &got) != nil || got.Status != "ready" || got.Hold != nil {
		t.Fatalf("child of a done parent shown as %s", out)
	}
	if out, _ := call(t, cs, "kanban_list", map[string]any{"status": "ready"}); !strings.Contains(out, `"id":"c"`) {
		t.Fatalf("kanban_list of ready tasks: %s", out)
	}
	if out, _ := call(t, cs, "kanban_list", map[string]any{"status": "todo"}); strings.Contains(out, `"id":"c"`) {
		t.Fatalf("kanban_list of todo tasks: %s", out)
	}
}

// TestHTTPSessionIdleTimeout: a session that receives no request for the
// idle timeout is closed and forgotten (3,000 sessions held 28 MB
// forever): a request naming it is then answered 404, which tells a
// client to start a new one. Polled within a generous bound, not timed.
func TestHTTPSessionIdleTimeout(t *testing.T) {
	o := testOptions(t)
	hs := httptest.NewServer(nil)
	hs.Config.Handler = Handler(New(o), hs.Listener.Addr().String(), "sekrit", nil, nil, 50*time.Millisecond)
	defer hs.Close()
	url := hs.URL + "/mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{"sekrit"}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, isErr := call(t, cs, "session_list", nil); isErr {
		t.Fatal("session_list failed")
	}
	status := func() int {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer sekrit")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Each look waits longer than the timeout, so that it is not
		// itself what keeps the session alive.
		time.Sleep(200 * time.Millisecond)
		code := status()
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s still answered (%d) long after its idle timeout", cs.ID(), code)
		}
	}
}
