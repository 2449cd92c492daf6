package gateway

import (
	"context"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// A chat completions message of role developer reaches the model as a
// system message, whether the role is written plainly or with JSON
// escapes; a role the API does not have is a 400.
func TestChatDeveloperRole(t *testing.T) {
	t.Parallel()
	for _, role := range []string{`"developer"`, `"\u0064eveloper"`, `"dev\u0065loper"`} {
		var got []sessions.Message
		e := newTestEnv(t, func(o *Options) {
			o.Provider = &funcProvider{name: "rec", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
				got = historyOf(req.History)
				return assistant("ok"), nil
			}}
		})
		body := `{"messages":[{"role":` + role + `,"content":"be brief"},{"role":"user","content":"hi"}]}`
		resp, out := e.do("POST", "/v1/chat/completions", body, nil)
		mustStatus(t, resp, out, 200)
		if len(got) != 2 || got[0].Role != "system" || got[0].Text() != "be brief" || got[1].Role != "user" {
			t.Fatalf("role %s: the model got %s", role, dump(got))
		}
	}
	e := newTestEnv(t, nil)
	resp, out := e.do("POST", "/v1/chat/completions", `{"messages":[{"role":"\u0064eveloperx","content":"x"}]}`, nil)
	mustError(t, resp, out, 400, "invalid_request_error")
}
