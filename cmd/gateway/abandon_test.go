package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore/sessions"
)

// workTool is a gateway tool whose calls begin when they are told to
// (started) and run until their context ends, taking a moment to stop; a
// stubborn one runs on
// until the test ends, as a read that never returns does. Each call that
// ran is counted.
type workTool struct {
	stubborn bool
	started  chan struct{}
	release  chan struct{}
	mu       sync.Mutex
	runs     int
}

func (w *workTool) Name() string { return "work" }
func (w *workTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"function","function":{"name":"work","parameters":{"type":"object"}}}`)
}
func (w *workTool) NeedsApproval(json.RawMessage) bool { return false }
func (w *workTool) Run(ctx context.Context, _ *agent.Env, _ json.RawMessage) (string, error) {
	w.mu.Lock()
	w.runs++
	w.mu.Unlock()
	w.started <- struct{}{}
	if w.stubborn {
		<-w.release
		return "worked late", nil
	}
	<-ctx.Done()
	// A tool takes a moment to stop what it started (the terminal tool
	// kills a process group and waits for it): the window in which a
	// client's immediate retry arrives.
	time.Sleep(50 * time.Millisecond)
	return "worked until cancelled", nil
}

// checkAnsweredOnce fails unless every call in msgs has exactly one
// result, each right after its call's message, and no reply is stored
// twice in a row.
func checkAnsweredOnce(t *testing.T, msgs []sessions.Message) {
	t.Helper()
	results := map[string]int{}
	open := map[string]bool{}
	for i, m := range msgs {
		switch {
		case m.Role == "assistant":
			if len(open) > 0 {
				t.Errorf("message %d: an assistant message before calls %v were answered:%s", i+1, open, dump(msgs))
			}
			for _, c := range agent.ToolCalls(m) {
				open[c.ID] = true
			}
			if i > 0 && msgs[i-1].Role == "assistant" && len(agent.ToolCalls(m)) == 0 && msgs[i-1].Text() == m.Text() {
				t.Errorf("message %d: the reply is stored twice:%s", i+1, dump(msgs))
			}
		case m.Role == "tool":
			results[m.ToolCallID]++
			if !open[m.ToolCallID] {
				t.Errorf("message %d: a result of %s, which no message before it calls unanswered:%s", i+1, m.ToolCallID, dump(msgs))
			}
			delete(open, m.ToolCallID)
			if strings.Contains(m.Text(), "did not run it again") {
				t.Errorf("message %d: %q, but the call ran", i+1, m.Text())
			}
		}
	}
	for id, n := range results {
		if n != 1 {
			t.Errorf("call %s has %d results:%s", id, n, dump(msgs))
		}
	}
}

// A client that leaves during a call of a gateway tool and retries at
// once: its call is answered once, by the turn the client left (cancelled,
// or abandoned when the tool does not stop), and the retry carries that
// reply on; a result the tool returns later is never a second one.
func TestClientLeavesMidToolAndRetries(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	for _, stubborn := range []bool{false, true} {
		t.Run(fmt.Sprintf("stubborn=%v", stubborn), func(t *testing.T) {
			t.Parallel()
			tool := &workTool{stubborn: stubborn, started: make(chan struct{}, 16), release: make(chan struct{})}
			t.Cleanup(func() { close(tool.release) })
			e := newTestEnv(t, func(o *Options) {
				o.Provider = callsOrAnswers("work")
				o.Tools = []agent.Tool{tool}
				o.Approver = agent.Fixed(true)
				// Late results come after the test, at its cleanup.
				o.Logf = (&logged{}).logf
			})
			e.srv.engine.CancelGrace = 20 * time.Millisecond
			for round := range 5 {
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"round %d"}]}`, round)
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					<-tool.started
					cancel()
				}()
				req, _ := http.NewRequestWithContext(ctx, "POST", e.ts.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
					t.Fatalf("round %d: the first attempt was answered %d; want it cut by its client", round, resp.StatusCode)
				}
				resp, rbody := e.do("POST", "/v1/chat/completions", body, nil)
				mustStatus(t, resp, rbody, 200)
				reply := decode[chatResp](t, rbody).Choices[0].Message.Content
				if !strings.HasPrefix(reply, "the answer is ") {
					t.Fatalf("round %d: reply %q", round, reply)
				}
				checkAnsweredOnce(t, messages(t, e.sessions, resp.Header.Get(SessionHeader)))
			}
			all, err := e.sessions.All()
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 5 {
				t.Errorf("%d sessions for 5 conversations", len(all))
			}
			for _, s := range all {
				checkAnsweredOnce(t, messages(t, e.sessions, s.ID))
			}
		})
	}
}

// Calls of a tool that never returns (a read of a file that never
// answers), each made by a client that gives up on it, hold no connection
// slot once abandoned: with more such clients than gateway.max_connections
// gone, /health is answered every time, and each call has one result.
func TestAbandonedCallsDoNotLockOut(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	tool := &workTool{stubborn: true, started: make(chan struct{}, 400), release: make(chan struct{})}
	t.Cleanup(func() { close(tool.release) })
	e := newServedEnv(t, func(o *Options) {
		o.Provider = callsOrAnswers("work")
		o.Tools = []agent.Tool{tool}
		o.Approver = agent.Fixed(true)
		o.Logf = (&logged{}).logf // late results come after the test
	}, DefaultMaxConnections, 0)
	e.srv.engine.CancelGrace = 50 * time.Millisecond
	const clients = 300
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each client gives up after its call has begun: the
			// gateway learns of it when the connection closes.
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"hang %d"}]}`, i)
			if resp, err := client.Post(e.ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body)); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	health := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	// The slots come free as the gateway sees each client gone and gives
	// up on its call CancelGrace later, while the calls themselves never
	// return: wait until the gateway holds no connection (a watchdog
	// bounds it; on a loaded machine the last are seen gone seconds after
	// the first), then every probe must be answered.
	lim := e.ts.Listener.(*limiter)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		lim.mu.Lock()
		held := len(lim.conns)
		lim.mu.Unlock()
		if held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still held 30 s after %d clients left calls that never return", held, clients)
		}
	}
	const probes = 50
	failed := 0
	for range probes {
		resp, err := health.Get(e.ts.URL + "/health")
		if err != nil {
			t.Logf("/health: %v", err)
			failed++
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			failed++
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d /health requests failed after %d clients left calls that never return", failed, probes, clients)
	}
	all, err := e.sessions.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no call was made")
	}
	for _, s := range all {
		checkAnsweredOnce(t, messages(t, e.sessions, s.ID))
	}
}
