package gateway

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

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

// The SDK's own retry of a first turn whose first attempt failed (502
// after its message was stored) continues the session that attempt made:
// one session, holding the message once and its reply, on both
// endpoints.
func TestSDKRetryOfAFailedFirstTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, api := range []string{"chat", "responses"} {
		t.Run(api, func(t *testing.T) {
			flaky, calls := failsOnce()
			e := newTestEnv(t, func(o *Options) { o.Provider = flaky })
			client := openai.NewClient(
				option.WithBaseURL(e.ts.URL+"/v1"),
				option.WithAPIKey("unused"),
				option.WithHTTPClient(e.ts.Client()),
				option.WithMaxRetries(1),
			)
			var sid string
			if api == "chat" {
				_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "echo",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")}}, sessionOf(&sid))
				if err != nil {
					t.Fatal(err)
				}
			} else {
				_, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "echo",
					Instructions: openai.String("be brief"),
					Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hello there")}}, sessionOf(&sid))
				if err != nil {
					t.Fatal(err)
				}
			}
			if calls.Load() != 2 {
				t.Fatalf("%d provider calls, want 2 (the failed one and the retry's)", calls.Load())
			}
			all, err := e.sessions.All()
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 1 || all[0].ID != sid {
				var ids []string
				for _, s := range all {
					ids = append(ids, s.ID+" ("+roles(messages(t, e.sessions, s.ID))+")")
				}
				t.Fatalf("sessions %v, want the one the reply came from, %s", ids, sid)
			}
			msgs := messages(t, e.sessions, sid)
			want := "user assistant"
			if api == "responses" {
				want = "system user assistant"
			}
			if roles(msgs) != want {
				t.Errorf("transcript %s, want %s", dump(msgs), want)
			}
		})
	}
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
