package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// The history index is a cache written after the turn it indexes: a
// gateway killed between the store of a reply and its index entry leaves a
// stateless client's history unindexed. These tests take the entries away
// as such a kill does, and check that no turn runs twice for it (the crash
// loop's impatient clients found a gateway tool run once for each retry of
// one turn, each retry in a new session).

// workOrEcho is a model that calls the work tool for a user message that
// begins with "work", answers "done: RESULT" after its result, and
// "echo: TEXT" otherwise.
func workOrEcho(calls *atomic.Int64) *funcProvider {
	return &funcProvider{name: "work-or-echo", fn: func(_ context.Context, req provider.Request) (provider.Reply, error) {
		calls.Add(1)
		h := historyOf(req.History)
		last := h[len(h)-1]
		switch {
		case last.Role == "tool":
			return assistant("done: " + last.Text()), nil
		case strings.HasPrefix(last.Text(), "work"):
			c, _ := json.Marshal([]provider.ToolCall{{ID: "call_w", Type: "function", Function: provider.ToolFunction{Name: "work", Arguments: "{}"}}})
			return provider.Reply{Messages: []sessions.Message{{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: c}}}, nil
		default:
			return assistant("echo: " + last.Text()), nil
		}
	}}
}

// dropHistoryEntries removes the history index's entries that drop
// reports: what a kill before they were written leaves. Each shard is written anew (another file, as fsck
// would write it), without those lines.
func dropHistoryEntries(t *testing.T, e *testEnv, drop func(gatewaystate.History) bool) int {
	t.Helper()
	dir := filepath.Join(e.store.Dir, "history")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range entries {
		if filepath.Ext(de.Name()) != ".jsonl" {
			continue
		}
		path := filepath.Join(dir, de.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var kept []byte
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			var h gatewaystate.History
			if json.Unmarshal(line, &h) == nil && drop(h) {
				n++
				continue
			}
			kept = append(kept, line...)
		}
		if err := os.WriteFile(path+".new", kept, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestReplayedReplyIsIndexed: a reply stored and never delivered, whose
// index entry a kill took, is given to the client's retry; the next turn
// of that client's history continues in the same session.
func TestReplayedReplyIsIndexed(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	e := newTestEnv(t, func(o *Options) { o.Provider = workOrEcho(&calls) })
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("hi")}}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	two := []any{userMsg("hi"), asstMsg("echo: hi"), userMsg("two")}
	e.cut("/v1/chat/completions", map[string]any{"messages": two}, nil)
	if n := dropHistoryEntries(t, e, func(h gatewaystate.History) bool { return h.SessionID == sid && h.MessageCount == 4 }); n != 1 {
		t.Fatalf("dropped %d entries of the cut turn, want 1", n)
	}
	before := calls.Load()
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": two}, nil)
	mustStatus(t, resp, body, 200)
	if got := decode[chatResp](t, body).Choices[0].Message.Content; got != "echo: two" || calls.Load() != before || resp.Header.Get(SessionHeader) != sid {
		t.Fatalf("the retry: %q in %s (want %s), %d model calls", got, resp.Header.Get(SessionHeader), sid, calls.Load()-before)
	}
	three := append(two, asstMsg("echo: two"), userMsg("three"))
	resp, body = e.do("POST", "/v1/chat/completions", map[string]any{"messages": three}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("the next turn went to session %s, want %s, where the conversation is", got, sid)
	}
}

// TestUnindexedHistoryRetryRunsNoToolTwice: a turn of a history the index
// lost starts a new session; its client leaves while the gateway's tool
// runs and retries: the retry carries the turn on in that session, and the
// tool runs once.
func TestUnindexedHistoryRetryRunsNoToolTwice(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	tool := &workTool{started: make(chan struct{}, 16), release: make(chan struct{})}
	t.Cleanup(func() { close(tool.release) })
	e := newTestEnv(t, func(o *Options) {
		o.Provider = workOrEcho(&calls)
		o.Tools = []agent.Tool{tool}
		o.Approver = agent.Fixed(true)
		o.Logf = (&logged{}).logf
	})
	e.srv.engine.CancelGrace = 20 * time.Millisecond
	resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("hi")}}, nil)
	mustStatus(t, resp, body, 200)
	if n := dropHistoryEntries(t, e, func(gatewaystate.History) bool { return true }); n == 0 {
		t.Fatal("no history entry to drop")
	}
	work := map[string]any{"messages": []any{userMsg("hi"), asstMsg("echo: hi"), userMsg("work please")}}
	b, _ := json.Marshal(work)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-tool.started
		cancel()
	}()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.ts.URL+"/v1/chat/completions", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the first attempt was answered %d; want it cut by its client", resp.StatusCode)
	}
	resp, body = e.do("POST", "/v1/chat/completions", work, nil)
	mustStatus(t, resp, body, 200)
	if got := decode[chatResp](t, body).Choices[0].Message.Content; !strings.HasPrefix(got, "done: ") {
		t.Fatalf("the retry's reply: %q", got)
	}
	tool.mu.Lock()
	runs := tool.runs
	tool.mu.Unlock()
	if runs != 1 {
		t.Fatalf("the tool ran %d times for one call", runs)
	}
	all, err := e.sessions.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		checkAnsweredOnce(t, messages(t, e.sessions, s.ID))
	}
}
