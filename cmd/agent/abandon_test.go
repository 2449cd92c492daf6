package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// stubborn is a tool that ignores its context: it runs until released, as
// a read of a file that never answers does.
type stubborn struct {
	started chan struct{}
	release chan struct{}
}

func newStubborn() *stubborn {
	return &stubborn{started: make(chan struct{}), release: make(chan struct{})}
}

func (s *stubborn) Name() string { return "stubborn" }
func (s *stubborn) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"function","function":{"name":"stubborn","parameters":{"type":"object"}}}`)
}
func (s *stubborn) NeedsApproval(json.RawMessage) bool { return false }
func (s *stubborn) Run(context.Context, *Env, json.RawMessage) (string, error) {
	close(s.started)
	<-s.release
	return "the late result", nil
}

// late records what Engine.Late is told.
type late chan string

func (l late) tell(sid string, c provider.ToolCall, result string) { l <- c.ID + ": " + result }

// A call that does not end when its turn is cancelled is abandoned after
// CancelGrace: the turn ends at once, the call has one result saying it was
// still running, and the result it returns later is never stored (Late is
// told of it): the call is answered once, ever.
func TestAbandonedCallIsAnsweredOnce(t *testing.T) {
	st := newStore(t)
	id := newSession(t, st)
	tool := newStubborn()
	told := make(late, 1)
	p := &scripted{t: t, replies: []sessions.Message{calls("stubborn", `{}`)}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{tool}, CancelGrace: 10 * time.Millisecond, Late: told.tell}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-tool.started
		cancel()
	}()
	_, err := e.Run(ctx, Turn{SessionID: id, Input: user("go")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if got := resultOf(t, stored(t, st, id), "call_stubborn_0"); got != abandonedResult {
		t.Fatalf("the call's result is %q, want %q", got, abandonedResult)
	}
	close(tool.release)
	if got := <-told; got != "call_stubborn_0: the late result" {
		t.Fatalf("Late was told %q", got)
	}
	msgs := stored(t, st, id)
	resultOf(t, msgs, "call_stubborn_0") // still exactly one
	if err := validForAPI(msgs); err != nil {
		t.Fatal(err)
	}
}

// A call past ToolTimeout is cancelled and answered as timed out, and the
// turn goes on: the model reads that result. A tool that ends when told
// (its context) gives its own words after the timeout's; one that does not
// is abandoned after CancelGrace, as on a cancelled turn, and its late
// result is not stored.
func TestToolTimeout(t *testing.T) {
	for _, c := range []struct {
		name string
		tool func() (Tool, func())
		want string
	}{
		{"ends when told", func() (Tool, func()) {
			return &fakeTool{name: "slow", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			}}, func() {}
		}, "error: timed out after 20ms (tool_timeout): the call was cancelled; it may have taken effect in part: context deadline exceeded"},
		{"does not end", func() (Tool, func()) {
			s := newStubborn()
			return s, func() { close(s.release) }
		}, "error: timed out after 20ms (tool_timeout), and still running 10ms later: hermes stopped waiting for it; whatever it does from now on is not reported; check its effects before repeating it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t)
			id := newSession(t, st)
			tool, release := c.tool()
			defer release()
			p := &scripted{t: t, replies: []sessions.Message{calls(tool.Name(), `{}`), text("ok")}}
			e := &Engine{Sessions: st, Provider: p, Tools: []Tool{tool}, ToolTimeout: 20 * time.Millisecond, CancelGrace: 10 * time.Millisecond, Late: func(string, provider.ToolCall, string) {}}
			res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Text() != "ok" {
				t.Fatalf("reply %q", res.Text())
			}
			msgs := stored(t, st, id)
			if got := resultOf(t, msgs, "call_"+tool.Name()+"_0"); got != c.want {
				t.Fatalf("result %q\nwant   %q", got, c.want)
			}
			if last := p.seen[len(p.seen)-1]; !strings.HasPrefix(last[len(last)-1].Text(), "error: timed out") {
				t.Fatalf("the model did not read the timeout:\n%s", dumpMsgs(last))
			}
		})
	}
}
