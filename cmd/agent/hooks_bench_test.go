package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/profiles"
)

// oneCall is a model that costs nothing: each turn, one call of echo,
// then a reply; it reads none of the history.
type oneCall struct{ n int }

func (p *oneCall) Name() string { return "oneCall" }
func (p *oneCall) Complete(context.Context, provider.Request) (provider.Reply, error) {
	p.n++
	if p.n%2 == 0 {
		return provider.Reply{Messages: []sessions.Message{text("done")}}, nil
	}
	raw, _ := json.Marshal([]provider.ToolCall{{ID: fmt.Sprintf("call_%d", p.n), Type: "function",
		Function: provider.ToolFunction{Name: "echo", Arguments: `{"a":1}`}}})
	return provider.Reply{Messages: []sessions.Message{{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: raw}}}, nil
}

// BenchmarkTurnHooks is a turn with one tool call (its user message, the
// call, the result and the reply stored, synced) with no hooks, with 10
// hooks of which none matches (the target: within 1 ms of none), and
// with one matching command hook (`true`) at PreToolUse, whose cost is
// its process's start.
func BenchmarkTurnHooks(b *testing.B) {
	miss := profiles.Hooks{}
	for i, m := range []string{"Write", "Edit|MultiEdit", "mcp__github__.*", "Notebook.*", "^Read$"} {
		miss[hooks.PreToolUse] = append(miss[hooks.PreToolUse], profiles.HookMatcher{Matcher: m, Command: fmt.Sprintf("exit %d", i)})
		miss[hooks.PostToolUse] = append(miss[hooks.PostToolUse], profiles.HookMatcher{Matcher: m, Command: fmt.Sprintf("exit %d", i)})
	}
	for _, tc := range []struct {
		name string
		cfg  profiles.Hooks
	}{
		{"none", nil},
		{"10-none-matching", miss},
		{"1-matching-true", profiles.Hooks{hooks.PreToolUse: {{Matcher: "echo", Command: "true"}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			st := sessions.NewStore(dir, "default", 10*time.Second, func(msg string) { b.Fatal(msg) })
			s, _, err := st.Create(sessions.Session{Cwd: dir})
			if err != nil {
				b.Fatal(err)
			}
			set, err := hooks.New("hooks", tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			e := &Engine{Sessions: st, Provider: &oneCall{}, Tools: []Tool{&fakeTool{name: "echo", run: func(context.Context, json.RawMessage) (string, error) { return "ok", nil }}},
				Approver: Fixed(true), Hooks: set}
			for b.Loop() {
				res, err := e.Run(context.Background(), Turn{SessionID: s.ID, Input: user("go"), Env: &Env{Cwd: dir}})
				if err != nil || res.Text() != "done" {
					b.Fatalf("%q: %v", res.Text(), err)
				}
			}
		})
	}
}
