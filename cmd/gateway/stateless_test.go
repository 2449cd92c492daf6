package gateway

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
)

// A chat client that names no session and whose first turn is cut
// mid-stream (it drops the connection) retries with the same messages: the
// retry continues the session that holds them, which stores them once.
func TestStatelessFirstTurnCutAndRetried(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	e := newTestEnv(t, func(o *Options) {
		o.Provider = &funcProvider{name: "slow", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			if calls.Add(1) == 1 {
				io.WriteString(req.Stream, "part")
				<-ctx.Done()
				return provider.Reply{}, ctx.Err()
			}
			return assistant("whole"), nil
		}}
	})
	body := `{"stream":true,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"first"}]}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", e.ts.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get(SessionHeader)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "part") {
	}
	cancel()
	resp.Body.Close()

	resp, out := e.do("POST", "/v1/chat/completions", strings.Replace(body, `"stream":true`, `"stream":false`, 1), nil)
	mustStatus(t, resp, out, 200)
	if got := decode[chatResp](t, out).Choices[0].Message.Content; got != "whole" {
		t.Fatalf("the retry got %s", out)
	}
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("the retry went to session %s, not %s", got, sid)
	}
	if got := texts(messages(t, e.sessions, sid)); got != "system:be brief | user:first | assistant:whole" {
		t.Fatalf("transcript %s", got)
	}
	all, err := e.sessions.All()
	if err != nil || len(all) != 1 {
		t.Fatalf("%d sessions (%v), want 1", len(all), err)
	}
	// Its reply delivered, the same opening is a new conversation.
	resp, out = e.do("POST", "/v1/chat/completions", strings.Replace(body, `"stream":true`, `"stream":false`, 1), nil)
	mustStatus(t, resp, out, 200)
	if got := resp.Header.Get(SessionHeader); got == sid {
		t.Fatalf("a conversation opening as an answered one went to its session %s", sid)
	}
}
