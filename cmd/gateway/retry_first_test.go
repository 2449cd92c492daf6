package gateway

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
)

// failsOnce answers 500 to its first call, as an upstream that hiccups,
// then echoes.
func failsOnce() (*funcProvider, *atomic.Int32) {
	var calls atomic.Int32
	echo, _ := provider.New(provider.Config{Name: "echo"})
	return &funcProvider{name: "flaky", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
		if calls.Add(1) == 1 {
			return provider.Reply{}, &provider.Error{Provider: "openai", StatusCode: 500, Message: "openai: HTTP 500: overloaded"}
		}
		return echo.Complete(ctx, req)
	}}, &calls
}

// How a retried first turn is told from a new conversation that begins
// with the same words: within OpeningRetryWindow of the failed attempt,
// or whenever it carries X-Stainless-Retry-Count above 0, it continues
// the failed attempt's session; later and unmarked, it is a new
// conversation.
func TestRetriedFirstTurnOrNewConversation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		header map[string]string
		same   bool
	}{
		{"later, unmarked", nil, false},
		{"later, marked", map[string]string{RetryCountHeader: "1"}, true},
		{"later, marked 0", map[string]string{RetryCountHeader: "0"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			flaky, _ := failsOnce()
			var skew atomic.Int64
			e := newTestEnv(t, func(o *Options) {
				o.Provider = flaky
				o.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
			})
			body := map[string]any{"messages": []any{userMsg("good morning")}}
			resp, rbody := e.do("POST", "/v1/chat/completions", body, nil)
			mustError(t, resp, rbody, 502, "server_error")
			first := resp.Header.Get(SessionHeader)
			skew.Store(int64(OpeningRetryWindow + time.Minute))
			resp, rbody = e.do("POST", "/v1/chat/completions", body, c.header)
			mustStatus(t, resp, rbody, 200)
			if got := resp.Header.Get(SessionHeader); (got == first) != c.same {
				t.Errorf("the second request went to %s, the first to %s; want the same session: %v", got, first, c.same)
			}
		})
	}
}
