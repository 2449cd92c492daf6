package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// scripted is a provider that answers from a list of replies, one a call,
// and records the history of each call after checking it as the API
// would: every call answered by a tool message before the next message.
type scripted struct {
	t       *testing.T
	replies []sessions.Message
	seen    [][]sessions.Message
	tools   [][]json.RawMessage
	block   chan struct{} // when set, a call waits for it (or ctx)
}

func (p *scripted) Name() string { return "scripted" }

func (p *scripted) Complete(ctx context.Context, req provider.Request) (provider.Reply, error) {
	var hist []sessions.Message
	if err := req.History.Each(func(m sessions.Message) error { hist = append(hist, m); return nil }); err != nil {
		return provider.Reply{}, err
	}
	if err := validForAPI(hist); err != nil {
		p.t.Errorf("provider got a history the API would refuse: %v\n%s", err, dumpMsgs(hist))
		return provider.Reply{}, &provider.Error{Provider: "scripted", StatusCode: 400, Message: err.Error()}
	}
	p.seen = append(p.seen, hist)
	p.tools = append(p.tools, req.Tools)
	if p.block != nil {
		select {
		case <-p.block:
		case <-ctx.Done():
			return provider.Reply{}, ctx.Err()
		}
	}
	if len(p.replies) == 0 {
		return provider.Reply{}, &provider.Error{Provider: "scripted", Message: "scripted: no reply left"}
	}
	m := p.replies[0]
	p.replies = p.replies[1:]
	return provider.Reply{Messages: []sessions.Message{m}, Usage: &provider.Usage{TotalTokens: 10}}, nil
}

// validForAPI checks the rule the chat completions API enforces.
func validForAPI(msgs []sessions.Message) error {
	var pending []string
	for _, m := range msgs {
		if m.Role == "tool" {
			i := indexOf(pending, m.ToolCallID)
			if i < 0 {
				return fmt.Errorf("tool message for %q answers no pending call", m.ToolCallID)
			}
			pending = append(pending[:i], pending[i+1:]...)
			continue
		}
		if len(pending) > 0 {
			return fmt.Errorf("calls %v have no result before a %s message", pending, m.Role)
		}
		for _, c := range ToolCalls(m) {
			pending = append(pending, c.ID)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("calls %v have no result", pending)
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func dumpMsgs(msgs []sessions.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		line, _ := m.MarshalJSON()
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// calls is an assistant message calling tools, each given as name and
// arguments text.
func calls(pairs ...string) sessions.Message {
	var cs []provider.ToolCall
	for i := 0; i < len(pairs); i += 2 {
		cs = append(cs, provider.ToolCall{ID: fmt.Sprintf("call_%s_%d", pairs[i], i/2), Type: "function",
			Function: provider.ToolFunction{Name: pairs[i], Arguments: pairs[i+1]}})
	}
	raw, _ := json.Marshal(cs)
	return sessions.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: raw}
}

func text(s string) sessions.Message {
	return sessions.Message{Role: "assistant", Content: sessions.TextContent(s)}
}

func user(s string) []sessions.Message {
	return []sessions.Message{{Role: "user", Content: sessions.TextContent(s)}}
}

// fakeTool records its calls and answers with its function's result.
type fakeTool struct {
	name     string
	approval bool
	run      func(ctx context.Context, args json.RawMessage) (string, error)
	ran      []string
}

func (f *fakeTool) Name() string { return f.name }
func (f *fakeTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"function","function":{"name":"` + f.name + `","parameters":{"type":"object"}}}`)
}
func (f *fakeTool) NeedsApproval(json.RawMessage) bool { return f.approval }
func (f *fakeTool) Run(ctx context.Context, _ *Env, args json.RawMessage) (string, error) {
	f.ran = append(f.ran, string(args))
	if f.run == nil {
		return "ran " + string(args), nil
	}
	return f.run(ctx, args)
}

func newStore(t *testing.T) *sessions.Store {
	t.Helper()
	st := sessions.NewStore(t.TempDir(), "default", time.Second, func(msg string) { t.Log(msg) })
	return st
}

func newSession(t *testing.T, st *sessions.Store) string {
	t.Helper()
	s, _, err := st.Create(sessions.Session{})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func stored(t *testing.T, st *sessions.Store, id string) []sessions.Message {
	t.Helper()
	msgs, err := st.Messages(id)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// resultOf is the content of the tool message answering call id.
func resultOf(t *testing.T, msgs []sessions.Message, id string) string {
	t.Helper()
	var found []string
	for _, m := range msgs {
		if m.Role == "tool" && m.ToolCallID == id {
			found = append(found, m.Text())
		}
	}
	if len(found) != 1 {
		t.Fatalf("call %s has %d results, want exactly 1:\n%s", id, len(found), dumpMsgs(msgs))
	}
	return found[0]
}

func TestSeveralCallsInOneMessage(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	echo := &fakeTool{name: "echo"}
	p := &scripted{t: t, replies: []sessions.Message{calls("echo", `{"a":1}`, "echo", `{"b":2}`), text("done")}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{echo}}
	res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go")})
	if err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, st, id)
	if res.Text() != "done" || res.Steps != 2 || res.Count != 5 || len(msgs) != 5 {
		t.Fatalf("text %q, steps %d, count %d:\n%s", res.Text(), res.Steps, res.Count, dumpMsgs(msgs))
	}
	if got := resultOf(t, msgs, "call_echo_0"); got != `ran {"a":1}` {
		t.Fatalf("first result %q", got)
	}
	if got := resultOf(t, msgs, "call_echo_1"); got != `ran {"b":2}` {
		t.Fatalf("second result %q", got)
	}
	// The second call saw both results, in the calls' order.
	if h := p.seen[1]; len(h) != 4 || h[2].ToolCallID != "call_echo_0" || h[3].ToolCallID != "call_echo_1" {
		t.Fatalf("second request:\n%s", dumpMsgs(p.seen[1]))
	}
	if len(p.tools[0]) != 1 || !strings.Contains(string(p.tools[0][0]), `"name":"echo"`) {
		t.Fatalf("tools offered: %s", p.tools[0])
	}
	if res.Usage == nil || res.Usage.TotalTokens != 20 {
		t.Fatalf("usage %+v, want the two calls' sum", res.Usage)
	}
}

func TestCallsAreStoredBeforeTheyRun(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	var during []sessions.Message
	probe := &fakeTool{name: "probe", run: func(context.Context, json.RawMessage) (string, error) {
		during = stored(t, st, id)
		return "ok", nil
	}}
	p := &scripted{t: t, replies: []sessions.Message{calls("probe", `{}`, "probe", `{}`), text("done")}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{probe}}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go")}); err != nil {
		t.Fatal(err)
	}
	// When the second call ran, the calls and the first result were on disk.
	if len(during) != 3 || during[1].Role != "assistant" || during[2].ToolCallID != "call_probe_0" {
		t.Fatalf("stored while the second call ran:\n%s", dumpMsgs(during))
	}
}

func TestStepLimit(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	loop := &fakeTool{name: "loop"}
	var replies []sessions.Message
	for range 5 {
		replies = append(replies, calls("loop", `{}`))
	}
	p := &scripted{t: t, replies: replies}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{loop}, MaxSteps: 3}
	res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go")})
	if err != nil {
		t.Fatal(err)
	}
	if !res.StepLimit || res.Steps != 3 || len(loop.ran) != 2 {
		t.Fatalf("step limit %v, steps %d, ran %d times", res.StepLimit, res.Steps, len(loop.ran))
	}
	msgs := stored(t, st, id)
	last := msgs[len(msgs)-1]
	if last.Role != "system" || !IsNote(last) || !strings.Contains(last.Text(), "3 steps") {
		t.Fatalf("last message is not the step limit's note:\n%s", dumpMsgs(msgs))
	}
	// The last step's call is answered, not run, and the session is valid
	// for the next turn.
	if err := validForAPI(msgs); err != nil {
		t.Fatalf("session left invalid: %v\n%s", err, dumpMsgs(msgs))
	}
	if !strings.Contains(msgs[len(msgs)-2].Text(), "not run") {
		t.Fatalf("the last call's result:\n%s", dumpMsgs(msgs))
	}
}

func TestFailingUnknownAndMalformedCalls(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	fail := &fakeTool{name: "fail", run: func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("disk on fire")
	}}
	p := &scripted{t: t, replies: []sessions.Message{
		calls("fail", `{}`, "nosuch", `{}`, "fail", `{"unterminated`, "fail", ``),
		text("recovered"),
	}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{fail}}
	res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go")})
	if err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, st, id)
	for call, want := range map[string]string{
		"call_fail_0":   "error: disk on fire",
		"call_nosuch_1": `error: unknown tool "nosuch" (offered: fail)`,
		"call_fail_2":   "error: the arguments of fail are not valid JSON",
		"call_fail_3":   "error: disk on fire", // empty arguments are {}
	} {
		if got := resultOf(t, msgs, call); !strings.HasPrefix(got, want) {
			t.Errorf("%s: result %q, want %q…", call, got, want)
		}
	}
	if len(fail.ran) != 2 || fail.ran[1] != "{}" {
		t.Fatalf("fail ran with %q; the malformed call must not run", fail.ran)
	}
	if res.Text() != "recovered" {
		t.Fatalf("text %q", res.Text())
	}
}

func TestApproval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		approver Approver
		ran      bool
	}{
		{"auto", Fixed(true), true},
		{"deny", Fixed(false), false},
		{"none", nil, false},
		{"ask yes", &Prompter{In: bufio.NewReader(strings.NewReader("y\n")), Out: &strings.Builder{}}, true},
		{"ask no", &Prompter{In: bufio.NewReader(strings.NewReader("n\n")), Out: &strings.Builder{}}, false},
		{"ask end of input", &Prompter{In: bufio.NewReader(strings.NewReader("")), Out: &strings.Builder{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			id := newSession(t, st)
			risky := &fakeTool{name: "risky", approval: true}
			safe := &fakeTool{name: "safe"}
			p := &scripted{t: t, replies: []sessions.Message{calls("risky", `{}`, "safe", `{}`), text("ok")}}
			e := &Engine{Sessions: st, Provider: p, Tools: []Tool{risky, safe}, Approver: tc.approver}
			if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go")}); err != nil {
				t.Fatal(err)
			}
			msgs := stored(t, st, id)
			if (len(risky.ran) == 1) != tc.ran || len(safe.ran) != 1 {
				t.Fatalf("risky ran %d times, safe %d", len(risky.ran), len(safe.ran))
			}
			if got := resultOf(t, msgs, "call_risky_0"); !tc.ran && got != notApprovedResult {
				t.Fatalf("refused call answered %q", got)
			}
		})
	}
}

func TestPrompterAlways(t *testing.T) {
	t.Parallel()
	out := &strings.Builder{}
	p := &Prompter{In: bufio.NewReader(strings.NewReader("always\n")), Out: out}
	c := provider.ToolCall{Function: provider.ToolFunction{Name: "terminal", Arguments: `{"command": "rm -rf build"}`}}
	for i := range 3 {
		ok, err := p.Approve(context.Background(), c)
		if err != nil || !ok {
			t.Fatalf("call %d: %v %v", i, ok, err)
		}
	}
	if n := strings.Count(out.String(), "allow?"); n != 1 {
		t.Fatalf("asked %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out.String(), `terminal {"command": "rm -rf build"}`) {
		t.Fatalf("the question does not show the call:\n%s", out)
	}
}

// A crash between a call's storing and its result's: the next turn first
// answers the call as interrupted, runs nothing again, and the provider
// gets a valid history.
func TestInterruptedCallIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	if _, err := st.Append(id, append(user("build it"), calls("build", `{}`, "build", `{"n":2}`))); err != nil {
		t.Fatal(err)
	}
	// The first call's result made it to disk before the crash.
	if _, err := st.Append(id, []sessions.Message{{Role: "tool", ToolCallID: "call_build_0", Content: sessions.TextContent("built")}}); err != nil {
		t.Fatal(err)
	}
	build := &fakeTool{name: "build"}
	p := &scripted{t: t, replies: []sessions.Message{text("resumed")}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{build}}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go on")}); err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, st, id)
	if got := resultOf(t, msgs, "call_build_1"); got != interruptedResult {
		t.Fatalf("interrupted call answered %q", got)
	}
	resultOf(t, msgs, "call_build_0")
	if len(build.ran) != 0 {
		t.Fatalf("an interrupted call ran again: %q", build.ran)
	}
	if err := validForAPI(msgs); err != nil {
		t.Fatalf("%v\n%s", err, dumpMsgs(msgs))
	}
	// A second turn adds nothing more for it.
	p.replies = []sessions.Message{text("again")}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("and?")}); err != nil {
		t.Fatal(err)
	}
	resultOf(t, stored(t, st, id), "call_build_1")
}

// A resume_pending session's note names the interrupted calls, comes after
// their results, and the session is active after the turn.
func TestResumePendingNoteCoversInterruptedCalls(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	if _, err := st.Append(id, append(user("deploy"), calls("deploy", `{}`))); err != nil {
		t.Fatal(err)
	}
	if _, err := st.MarkInterrupted(id, "restart_interrupted", 3); err != nil {
		t.Fatal(err)
	}
	p := &scripted{t: t, replies: []sessions.Message{text("ok")}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{&fakeTool{name: "deploy"}}}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("status?")}); err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, st, id)
	roles := ""
	for _, m := range msgs {
		roles += m.Role + " "
	}
	if roles != "user assistant tool system user assistant " {
		t.Fatalf("roles %q:\n%s", roles, dumpMsgs(msgs))
	}
	if n := msgs[3].Text(); !strings.HasPrefix(n, ResumeNote("restart_interrupted")) || !strings.Contains(n, "(deploy)") {
		t.Fatalf("note %q", n)
	}
	sess, err := st.Get(id)
	if err != nil || sess.State != sessions.StateActive {
		t.Fatalf("state %q, %v", sess.State, err)
	}
}

// A failed provider call after the note leaves it stored; the retry does
// not add a second one.
func TestResumeNoteOnceAcrossAFailedTurn(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	st.Append(id, append(user("a"), text("b")))
	if _, err := st.MarkInterrupted(id, "restart_timeout", 3); err != nil {
		t.Fatal(err)
	}
	p := &scripted{t: t}
	e := &Engine{Sessions: st, Provider: p}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("c")}); err == nil {
		t.Fatal("a provider with no reply left must fail the turn")
	}
	p.replies = []sessions.Message{text("d")}
	if _, err := e.Run(context.Background(), Turn{SessionID: id}); err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, m := range stored(t, st, id) {
		if IsNote(m) {
			notes++
		}
	}
	if notes != 1 {
		t.Fatalf("%d notes:\n%s", notes, dumpMsgs(stored(t, st, id)))
	}
}

// Calls left unanswered in the middle of a transcript (another writer
// appended after them) are answered in the provider's view only.
func TestHistoryIsMadeValid(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	st.Append(id, append(user("a"), calls("x", `{}`)))
	st.Append(id, user("b"))
	st.Append(id, []sessions.Message{{Role: "tool", ToolCallID: "stray", Content: sessions.TextContent("?")}})
	p := &scripted{t: t, replies: []sessions.Message{text("ok")}}
	e := &Engine{Sessions: st, Provider: p}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("c")}); err != nil {
		t.Fatal(err)
	}
	h := p.seen[0]
	if len(h) != 5 || h[2].ToolCallID != "call_x_0" || h[2].Text() != interruptedResult || h[4].Text() != "c" {
		t.Fatalf("provider saw:\n%s", dumpMsgs(h))
	}
	if n := len(stored(t, st, id)); n != 6 {
		t.Fatalf("the view's repair was stored: %d messages", n)
	}
}

// Ctrl-C while a tool runs: the tool stops, its call is answered
// "cancelled by the user", the rest "not run", and the turn fails with
// context.Canceled, leaving the session valid.
func TestCancelDuringACall(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	slow := &fakeTool{name: "slow", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		cancel()
		<-ctx.Done()
		return "", ctx.Err()
	}}
	p := &scripted{t: t, replies: []sessions.Message{calls("slow", `{}`, "slow", `{}`)}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{slow}}
	_, err := e.Run(ctx, Turn{SessionID: id, Input: user("go")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	msgs := stored(t, st, id)
	if got := resultOf(t, msgs, "call_slow_0"); got != cancelledResult {
		t.Fatalf("first %q", got)
	}
	if got := resultOf(t, msgs, "call_slow_1"); got != notRunCancelled {
		t.Fatalf("second %q", got)
	}
	if len(slow.ran) != 1 {
		t.Fatalf("ran %d times", len(slow.ran))
	}
	if err := validForAPI(msgs); err != nil {
		t.Fatal(err)
	}
}

// The gateway's clients run their own tools: a call naming none of the
// engine's tools ends the turn unanswered.
func TestClientTools(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	p := &scripted{t: t, replies: []sessions.Message{calls("client_fn", `{}`), text("thanks")}}
	e := &Engine{Sessions: st, Provider: p, ClientTools: true}
	res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pending) != 1 || res.Pending[0].Function.Name != "client_fn" || res.Steps != 1 {
		t.Fatalf("pending %+v, steps %d", res.Pending, res.Steps)
	}
	// The client answers the call in its next request.
	answer := sessions.Message{Role: "tool", ToolCallID: "call_client_fn_0", Content: sessions.TextContent("42")}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: []sessions.Message{answer}}); err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, stored(t, st, id), "call_client_fn_0"); got != "42" {
		t.Fatalf("result %q: the client's answer must not be replaced", got)
	}
}

func TestEndedSessionIsReopened(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	if _, err := st.End(id, "done"); err != nil {
		t.Fatal(err)
	}
	e := &Engine{Sessions: st, Provider: &scripted{t: t, replies: []sessions.Message{text("hi")}}}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("again")}); err != nil {
		t.Fatal(err)
	}
	if s, _ := st.Get(id); s.State != sessions.StateActive {
		t.Fatalf("state %q", s.State)
	}
}

// streamer writes each reply's text to the stream, as a streaming
// provider does.
type streamer struct{ scripted }

func (p *streamer) Complete(ctx context.Context, req provider.Request) (provider.Reply, error) {
	reply, err := p.scripted.Complete(ctx, req)
	if err == nil && req.Stream != nil {
		io.WriteString(req.Stream, reply.Messages[0].Text())
	}
	return reply, err
}

// The text of a step that follows a step with text starts on a new line;
// a step that only calls tools adds no blank line.
func TestStreamSeparatesSteps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		first sessions.Message
		want  string
	}{
		{calls("echo", `{}`), "done"},
		{sessions.Message{Role: "assistant", Content: sessions.TextContent("looking"), ToolCalls: calls("echo", `{}`).ToolCalls}, "looking\ndone"},
	} {
		st := newStore(t)
		id := newSession(t, st)
		p := &streamer{scripted{t: t, replies: []sessions.Message{c.first, text("done")}}}
		var out strings.Builder
		e := &Engine{Sessions: st, Provider: p, Tools: []Tool{&fakeTool{name: "echo"}}}
		if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Stream: &out}); err != nil {
			t.Fatal(err)
		}
		if out.String() != c.want {
			t.Errorf("streamed %q, want %q", out.String(), c.want)
		}
	}
}
