package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// toolsSeen is a model that records, for each call, the names of the tools
// it was offered, and echoes.
type toolsSeen struct {
	mu    sync.Mutex
	calls [][]string
}

func (m *toolsSeen) provider() *funcProvider {
	echo, _ := provider.New(provider.Config{Name: "echo"})
	return &funcProvider{name: "tools-seen", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
		var names []string
		for _, raw := range req.Tools {
			var tool struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal(raw, &tool); err != nil {
				return provider.Reply{}, err
			}
			names = append(names, tool.Function.Name)
		}
		m.mu.Lock()
		m.calls = append(m.calls, names)
		m.mu.Unlock()
		return echo.Complete(ctx, req)
	}}
}

func clientTool(name string) map[string]any {
	return map[string]any{"type": "function", "function": map[string]any{
		"name": name, "parameters": map[string]any{"type": "object", "properties": map[string]any{}},
	}}
}

// Clients that open with the same words at the same instant, none saying it
// retries, are as many conversations: each one's turn runs, with its own
// tool offered to the model, in a session of its own; none is answered with
// another's stored reply. (A reply handed to the second of two such clients,
// sent as soon as the first had read its reply, is what the delivered record
// written after the send let through.)
func TestIdenticalOpeningsAreTheirOwn(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			model := &toolsSeen{}
			e := newTestEnv(t, func(o *Options) { o.Provider = model.provider() })
			const clients, rounds = 8, 4
			var wg sync.WaitGroup
			sids := make([][]string, clients)
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := range rounds {
						tool := fmt.Sprintf("tool_%d_%d", c, r)
						body := map[string]any{"messages": []any{userMsg("hello")}, "tools": []any{clientTool(tool)}, "stream": stream}
						resp, rbody := e.do("POST", "/v1/chat/completions", body, nil)
						if resp.StatusCode != 200 {
							t.Errorf("client %d round %d: status %d: %s", c, r, resp.StatusCode, rbody)
							return
						}
						sids[c] = append(sids[c], resp.Header.Get(SessionHeader))
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			seen := map[string]string{}
			for c := range clients {
				for r, sid := range sids[c] {
					who := fmt.Sprintf("client %d round %d", c, r)
					if other, ok := seen[sid]; ok {
						t.Errorf("%s and %s were both answered from session %s", other, who, sid)
					}
					seen[sid] = who
					if got := roles(messages(t, e.sessions, sid)); got != "user assistant" {
						t.Errorf("%s: session %s holds %s, want user assistant", who, sid, got)
					}
				}
			}
			model.mu.Lock()
			defer model.mu.Unlock()
			offered := map[string]int{}
			for _, names := range model.calls {
				offered[strings.Join(names, ",")]++
			}
			for c := range clients {
				for r := range rounds {
					if tool := fmt.Sprintf("tool_%d_%d", c, r); offered[tool] != 1 {
						t.Errorf("the model was offered %s in %d calls, want 1 (calls: %v)", tool, offered[tool], model.calls)
					}
				}
			}
		})
	}
}

// A first turn whose reply was stored and never delivered (the record a
// crash between the store and the send leaves: no delivered mark) is
// handed over only to the same request, its client's retry; a client that
// opens with the same words and tools of its own gets its own turn, in its
// own session, with its tools offered.
func TestUndeliveredOpeningReplyGoesToItsRequestOnly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		tool   string
		header map[string]string
		same   bool
	}{
		{"same request", "tool_a", nil, true},
		{"same request, marked", "tool_a", map[string]string{RetryCountHeader: "1"}, true},
		{"other tools", "tool_b", nil, false},
		{"other tools, marked", "tool_b", map[string]string{RetryCountHeader: "1"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			model := &toolsSeen{}
			e := newTestEnv(t, func(o *Options) { o.Provider = model.provider() })
			first := map[string]any{"messages": []any{userMsg("hello")}, "tools": []any{clientTool("tool_a")}}
			resp, rbody := e.do("POST", "/v1/chat/completions", first, nil)
			mustStatus(t, resp, rbody, 200)
			sid := resp.Header.Get(SessionHeader)
			if err := e.srv.router.deliveries.wait(context.Background(), sid); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(e.dir, "gateway", "delivered", sid+".jsonl")); err != nil {
				t.Fatal(err)
			}
			second := map[string]any{"messages": []any{userMsg("hello")}, "tools": []any{clientTool(c.tool)}}
			resp, rbody = e.do("POST", "/v1/chat/completions", second, c.header)
			mustStatus(t, resp, rbody, 200)
			if got := resp.Header.Get(SessionHeader); (got == sid) != c.same {
				t.Fatalf("the second request went to %s, the first to %s; want the same session: %v", got, sid, c.same)
			}
			model.mu.Lock()
			defer model.mu.Unlock()
			want := [][]string{{"tool_a"}}
			if !c.same {
				want = append(want, []string{c.tool})
			}
			if fmt.Sprint(model.calls) != fmt.Sprint(want) {
				t.Errorf("the model was offered %v, want %v", model.calls, want)
			}
			if got := roles(messages(t, e.sessions, sid)); got != "user assistant" {
				t.Errorf("the first session holds %s, want user assistant", got)
			}
		})
	}
}

// A first turn that a restart interrupted holds its opening and the resume
// note the next attempt stored after it: the client's retry still finds
// that session (the note is hermes's, not a reply), and its turn runs
// there; it used to start a new session at each attempt, each able to run
// the turn's tools again.
func TestOpeningRetriedAfterItsResumeNote(t *testing.T) {
	t.Parallel()
	model := &toolsSeen{}
	e := newTestEnv(t, func(o *Options) { o.Provider = model.provider() })
	sess, _, err := e.sessions.Create(sessions.Session{ID: "20261128_000000_aaaaaa", Source: "gateway"})
	if err != nil {
		t.Fatal(err)
	}
	// What a first attempt, killed, then retried after a restart and
	// killed again before its model answered, leaves.
	note := sessions.Message{Role: "system", Content: sessions.TextContent("Note: the previous turn was interrupted by a restart."),
		Extra: map[string]json.RawMessage{"hermes_note": json.RawMessage("true")}}
	msgs, err := e.sessions.Append(sess.ID, []sessions.Message{{Role: "user", Content: sessions.TextContent("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	stored := messages(t, e.sessions, sess.ID)
	if err := e.store.PutHistory(gatewaystate.History{Digest: conversationDigest("", stored), SessionID: sess.ID, MessageCount: msgs, LastTS: stored[0].TS}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sessions.Append(sess.ID, []sessions.Message{note}); err != nil {
		t.Fatal(err)
	}
	resp, rbody := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("hello")}}, nil)
	mustStatus(t, resp, rbody, 200)
	if got := resp.Header.Get(SessionHeader); got != sess.ID {
		t.Fatalf("the retry went to %s, not to its session %s", got, sess.ID)
	}
	if got := roles(messages(t, e.sessions, sess.ID)); got != "user system assistant" {
		t.Fatalf("the session holds %s", got)
	}
}

// A client that names no session follows its conversation to the session
// that replaced a suspended one, as a client that names it does: each
// request used to make one more successor of the suspended session, each
// starting the turn (and its tools) again.
func TestHistoryFollowsTheSuccessor(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, rbody := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("hello")}}, nil)
	mustStatus(t, resp, rbody, 200)
	first := resp.Header.Get(SessionHeader)
	hi := decode[chatResp](t, rbody).Choices[0].Message.Content
	history := []any{userMsg("hello"), asstMsg(hi), userMsg("next")}
	if _, err := e.sessions.SetState(first, sessions.StateSuspended, "stuck"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for range 3 {
		resp, rbody = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
		mustStatus(t, resp, rbody, 200)
		// The same request again: a regenerate of that turn each time.
		seen = append(seen, resp.Header.Get(SessionHeader))
	}
	if seen[0] == first {
		t.Fatalf("a suspended session %s took a turn", first)
	}
	all, err := e.sessions.All()
	if err != nil {
		t.Fatal(err)
	}
	successors := 0
	for _, s := range all {
		if s.ParentSessionID == first {
			successors++
		}
	}
	if successors != 1 {
		t.Fatalf("%d successors of the suspended session, want 1", successors)
	}
}

// A first turn cut inside one of the gateway's tools, whose session was
// then suspended, goes on in a successor that carries the cut call; when
// that attempt fails too and the successor is suspended in turn, the next
// retry still finds the conversation (the successor of the successor),
// never a new session of its own that would run the turn, and its tools,
// from the start. (The opening's index entry counted the carried call, which
// the routing view cuts, so the entry no longer held.)
func TestOpeningRetriedThroughSuccessors(t *testing.T) {
	t.Parallel()
	flaky, _ := failsOnce()
	e := newTestEnv(t, func(o *Options) {
		o.Provider = flaky
		o.Tools = []agent.Tool{&lookupTool{}}
		o.Approver = agent.Fixed(true)
	})
	first, _, err := e.sessions.Create(sessions.Session{ID: "20261128_000000_aaaaaa", Source: "gateway"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.sessions.Append(first.ID, []sessions.Message{{Role: "user", Content: sessions.TextContent("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	stored := messages(t, e.sessions, first.ID)
	body := map[string]any{"messages": []any{userMsg("hello")}}
	if err := e.store.PutHistory(gatewaystate.History{Digest: conversationDigest("", stored), SessionID: first.ID, MessageCount: n, LastTS: stored[0].TS}); err != nil {
		t.Fatal(err)
	}
	calls, _ := json.Marshal([]provider.ToolCall{{ID: "call_1", Type: "function", Function: provider.ToolFunction{Name: "lookup", Arguments: "{}"}}})
	if _, err := e.sessions.Append(first.ID, []sessions.Message{{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: calls}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sessions.SetState(first.ID, sessions.StateSuspended, "stuck"); err != nil {
		t.Fatal(err)
	}
	// The first retry: a successor, carrying the cut call; its model call
	// fails (502), so it holds no reply.
	resp, rbody := e.do("POST", "/v1/chat/completions", body, nil)
	mustError(t, resp, rbody, 502, "server_error")
	second := resp.Header.Get(SessionHeader)
	if s := getSession(t, e.sessions, second); s.ParentSessionID != first.ID {
		t.Fatalf("the first retry went to %s (parent %q), want a successor of %s", second, s.ParentSessionID, first.ID)
	}
	if _, err := e.sessions.SetState(second, sessions.StateSuspended, "stuck"); err != nil {
		t.Fatal(err)
	}
	resp, rbody = e.do("POST", "/v1/chat/completions", body, nil)
	mustStatus(t, resp, rbody, 200)
	third := resp.Header.Get(SessionHeader)
	if s := getSession(t, e.sessions, third); s.ParentSessionID != second {
		t.Fatalf("the second retry went to %s (parent %q), want a successor of %s", third, s.ParentSessionID, second)
	}
}

// A client thread seen for the first time (Codex CLI's thread-id) whose
// history belongs to a session the gateway replaced goes on from the
// successor, as a request naming no thread does.
func TestNewThreadFollowsTheSuccessor(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, rbody := e.do("POST", "/v1/chat/completions", map[string]any{"messages": []any{userMsg("hello")}}, nil)
	mustStatus(t, resp, rbody, 200)
	first := resp.Header.Get(SessionHeader)
	hi := decode[chatResp](t, rbody).Choices[0].Message.Content
	if _, err := e.sessions.SetState(first, sessions.StateSuspended, "stuck"); err != nil {
		t.Fatal(err)
	}
	history := []any{userMsg("hello"), asstMsg(hi), userMsg("more")}
	resp, rbody = e.do("POST", "/v1/chat/completions", map[string]any{"messages": history}, nil)
	mustStatus(t, resp, rbody, 200)
	second := resp.Header.Get(SessionHeader)
	input := []any{
		map[string]any{"type": "message", "role": "user", "content": "hello"},
		map[string]any{"type": "message", "role": "assistant", "content": hi},
		map[string]any{"type": "message", "role": "user", "content": "again"},
	}
	resp, rbody = e.do("POST", "/v1/responses", map[string]any{"input": input}, map[string]string{"Thread-Id": "t-new"})
	mustStatus(t, resp, rbody, 200)
	got := resp.Header.Get(SessionHeader)
	if got != second && getSession(t, e.sessions, got).ParentSessionID != second {
		t.Fatalf("the new thread went to %s, not to the successor %s of %s or a fork of it", got, second, first)
	}
}
