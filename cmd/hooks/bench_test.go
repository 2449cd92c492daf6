package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hermes/hermes/profiles"
)

// BenchmarkRun is what an event costs the turn by itself: with 10 hooks
// configured of which none matches (a matcher test each, nothing run),
// and with one matching command (`true`: its process's start).
func BenchmarkRun(b *testing.B) {
	miss := profiles.Hooks{}
	for i, m := range []string{"Write", "Edit|MultiEdit", "mcp__github__.*", "Notebook.*", "^Read$", "Glob", "Grep", "WebFetch", "mcp__.*__write", "Task"} {
		miss[PreToolUse] = append(miss[PreToolUse], profiles.HookMatcher{Matcher: m, Command: fmt.Sprintf("exit %d", i)})
	}
	in := ToolInput(Input{SessionID: "s", Cwd: b.TempDir()}, PreToolUse, "terminal", "call_1", json.RawMessage(`{"command":"ls"}`))
	for _, tc := range []struct {
		name string
		cfg  profiles.Hooks
	}{
		{"10-none-matching", miss},
		{"1-matching-true", profiles.Hooks{PreToolUse: {{Matcher: "Bash", Command: "true"}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := New("hooks", tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if o := s.Run(context.Background(), in); o.Block || len(o.Notices) > 0 {
					b.Fatalf("%+v", o)
				}
			}
		})
	}
}
