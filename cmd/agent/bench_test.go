package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/scripts/fixture"
)

// stepper is a model that costs nothing: it calls terminal with `true`
// until told to stop, and reads none of the history.
type stepper struct {
	left int
	n    int
}

func (p *stepper) Name() string { return "stepper" }
func (p *stepper) Complete(context.Context, provider.Request) (provider.Reply, error) {
	if p.left == 0 {
		return provider.Reply{Messages: []sessions.Message{text("done")}}, nil
	}
	p.left--
	p.n++
	raw, _ := json.Marshal([]provider.ToolCall{{ID: fmt.Sprintf("call_%d", p.n), Type: "function",
		Function: provider.ToolFunction{Name: "terminal", Arguments: `{"command":"true"}`}}})
	return provider.Reply{Messages: []sessions.Message{{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: raw}}}, nil
}

// BenchmarkToolStep is hermes's own cost of one tool step, the model
// excluded: store the reply holding a terminal call (synced), run `true`
// through the terminal tool, store its result (synced). One turn runs b.N
// steps, on a session of 10 and of 100,000 messages (200 bytes each): the
// cost must not grow with the history (the prelude reads only its tail,
// and no step re-reads the transcript beyond the provider's own pass,
// which this model skips).
func BenchmarkToolStep(b *testing.B) {
	for _, n := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			ids, err := fixture.Write(filepath.Join(dir, "sessions"), fixture.Options{Sessions: 1, Messages: n, BytesPerMessage: 200})
			if err != nil {
				b.Fatal(err)
			}
			st := sessions.NewStore(dir, "default", 10*time.Second, func(msg string) { b.Fatal(msg) })
			tools, err := Select([]string{"terminal"}, false)
			if err != nil {
				b.Fatal(err)
			}
			p := &stepper{left: b.N}
			e := &Engine{Sessions: st, Provider: p, Tools: tools, Approver: Fixed(true), MaxSteps: b.N + 1}
			env := &Env{Cwd: dir, MaxOutput: DefaultMaxOutput, TerminalTimeout: DefaultTerminalTimeout}
			b.ResetTimer()
			res, err := e.Run(context.Background(), Turn{SessionID: ids[0], Input: user("go"), Env: env})
			b.StopTimer()
			if err != nil || res.Steps != b.N+1 || res.Text() != "done" {
				b.Fatalf("steps %d, text %q: %v", res.Steps, res.Text(), err)
			}
		})
	}
}

// BenchmarkTerminalTrue is the terminal tool alone running `true`: most
// of a step is this process's creation (sh, then true), which the machine
// sets, not hermes. BenchmarkToolStep less this is the store's part.
func BenchmarkTerminalTrue(b *testing.B) {
	env := &Env{Cwd: b.TempDir(), MaxOutput: DefaultMaxOutput, TerminalTimeout: time.Minute}
	for b.Loop() {
		if _, err := (terminalTool{}).Run(context.Background(), env, json.RawMessage(`{"command":"true"}`)); err != nil {
			b.Fatal(err)
		}
	}
}
