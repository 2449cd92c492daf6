//go:build sdk

package gateway

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

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
