package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/subagents"
)

// delayed is a model whose answer to a child takes the time its prompt
// names ("sleep 50ms"); the parent's calls are at once: one delegate
// call of the tasks, then a reply.
type delayed struct{ tasks []string }

func (p *delayed) Name() string { return "delayed" }

func (p *delayed) Complete(ctx context.Context, req provider.Request) (provider.Reply, error) {
	var first, last sessions.Message
	n := 0
	req.History.Each(func(m sessions.Message) error {
		if n == 0 {
			first = m
		}
		last, n = m, n+1
		return nil
	})
	prompt := first.Text()
	if d, ok := strings.CutPrefix(prompt, "sleep "); ok {
		wait, _ := time.ParseDuration(d)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return provider.Reply{}, ctx.Err()
		}
		return provider.Reply{Messages: []sessions.Message{text("slept " + d)}}, nil
	}
	if last.Role == "tool" {
		return provider.Reply{Messages: []sessions.Message{text("done")}}, nil
	}
	var tasks []string
	for _, t := range p.tasks {
		tasks = append(tasks, fmt.Sprintf(`{"prompt":"sleep %s"}`, t))
	}
	return provider.Reply{Messages: []sessions.Message{delegateCall(tasks...)}}, nil
}

// BenchmarkDelegate is a parent turn whose delegate call runs children
// whose model takes 20, 35 and 50 ms: three in parallel should take
// about the slowest alone (the bound: at most 1.2x), hermes's own
// cost being the children's sessions, claims and their synced writes.
//
//	go test ./cmd/agent/ -run '^$' -bench BenchmarkDelegate -benchtime 20x -count 5
func BenchmarkDelegate(b *testing.B) {
	for _, c := range []struct {
		name  string
		tasks []string
	}{
		{"slowest-alone", []string{"50ms"}},
		{"three-parallel", []string{"20ms", "35ms", "50ms"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			st := sessions.NewStore(filepath.Join(dir, "profile"), "default", 10*time.Second, func(msg string) { b.Fatal(msg) })
			sa := subagents.Open(filepath.Join(dir, "profile"))
			e := &Engine{Sessions: st, Provider: &delayed{tasks: c.tasks}, Tools: []Tool{delegateTool{}}}
			ids := make([]string, b.N)
			for i := range ids {
				s, _, err := st.Create(sessions.Session{})
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = s.ID
			}
			b.ResetTimer()
			for i := range b.N {
				res, err := e.Run(context.Background(), Turn{SessionID: ids[i], Input: user("go"), Env: &Env{Subagents: sa}})
				if err != nil || res.Text() != "done" {
					b.Fatalf("turn: %q, %v", res.Text(), err)
				}
			}
		})
	}
}
