package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/subagents"
	"github.com/hermes/hermes/fsstore/usage"
	"github.com/hermes/hermes/profiles"
)

// byPrompt is a provider for a parent and its children: a session's
// replies are picked by its first user message (a child's prompt), each
// call the next of that list. It checks each history as the API would,
// and records the tools each session was offered. before, when set, runs
// before a call is answered (a test holds a child there). Safe for
// concurrent calls, as the children make them.
type byPrompt struct {
	t       *testing.T
	mu      sync.Mutex
	replies map[string][]sessions.Message
	tools   map[string][]string
	models  map[string]string
	calls   map[string]int
	before  func(ctx context.Context, prompt string) error
}

func newByPrompt(t *testing.T, replies map[string][]sessions.Message) *byPrompt {
	return &byPrompt{t: t, replies: replies, tools: map[string][]string{}, models: map[string]string{}, calls: map[string]int{}}
}

func (p *byPrompt) Name() string { return "byPrompt" }

func (p *byPrompt) Complete(ctx context.Context, req provider.Request) (provider.Reply, error) {
	var hist []sessions.Message
	if err := req.History.Each(func(m sessions.Message) error { hist = append(hist, m); return nil }); err != nil {
		return provider.Reply{}, err
	}
	if err := validForAPI(hist); err != nil {
		p.t.Errorf("provider got a history the API would refuse: %v\n%s", err, dumpMsgs(hist))
		return provider.Reply{}, &provider.Error{Provider: "byPrompt", StatusCode: 400, Message: err.Error()}
	}
	prompt := ""
	for _, m := range hist {
		if m.Role == "user" {
			prompt = m.Text()
			break
		}
	}
	var names []string
	for _, s := range req.Tools {
		var f struct {
			Function struct{ Name string } `json:"function"`
		}
		json.Unmarshal(s, &f)
		names = append(names, f.Function.Name)
	}
	p.mu.Lock()
	p.tools[prompt] = names
	p.models[prompt] = req.Model
	p.calls[prompt]++
	p.mu.Unlock()
	if p.before != nil {
		if err := p.before(ctx, prompt); err != nil {
			return provider.Reply{}, err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.replies[prompt]
	if len(list) == 0 {
		return provider.Reply{}, &provider.Error{Provider: "byPrompt", Message: "no reply left for " + prompt}
	}
	p.replies[prompt] = list[1:]
	m := sessions.CopyMessages(list[:1])[0]
	usage.Put(&m, usage.Call{ID: usage.NewID(time.Now()), Input: 6, Output: 4})
	return provider.Reply{Messages: []sessions.Message{m}, Usage: &provider.Usage{TotalTokens: 10}}, nil
}

func delegateCall(tasks ...string) sessions.Message {
	return calls("delegate", `{"tasks":[`+strings.Join(tasks, ",")+`]}`)
}

func newDelegateStore(t *testing.T) *sessions.Store {
	return sessions.NewStore(filepath.Join(t.TempDir(), "profile"), "default", time.Second, func(string) {})
}

// Three tasks run as three child sessions at once (the slow one waits
// until the two others have answered): the call's result is their
// answers in the order of the tasks; each child records its parent, the
// call and its task, starts with its prompt alone, and is offered the
// parent's tools but delegate.
func TestDelegateRunsChildrenInParallel(t *testing.T) {
	t.Parallel()
	st := newDelegateStore(t)
	id := newSession(t, st)
	p := newByPrompt(t, map[string][]sessions.Message{
		"go":     {delegateCall(`{"prompt":"a"}`, `{"prompt":"slow b"}`, `{"prompt":"c"}`), text("all done")},
		"a":      {text("answer a")},
		"slow b": {text("answer b")},
		"c":      {text("answer c")},
	})
	// a and c answer once b has started; b answers once they have: in
	// any order one at a time, the first of them would wait for ever.
	bStarted, answered := make(chan struct{}), make(chan struct{}, 2)
	wait := func(ctx context.Context, ch <-chan struct{}) error {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return fmt.Errorf("children did not run at once")
		}
	}
	p.before = func(ctx context.Context, prompt string) error {
		switch prompt {
		case "a", "c":
			if err := wait(ctx, bStarted); err != nil {
				return err
			}
			answered <- struct{}{}
		case "slow b":
			close(bStarted)
			for range 2 {
				if err := wait(ctx, answered); err != nil {
					return err
				}
			}
		}
		return nil
	}
	other := &fakeTool{name: "other"}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{other, delegateTool{}}}
	res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "all done" {
		t.Fatalf("reply %q", res.Text())
	}
	// The children's calls are the turn's too, apart from its own.
	if res.Usage == nil || res.Usage.TotalTokens != 20 || res.Subagents == nil || res.Subagents.TotalTokens != 30 {
		t.Fatalf("usage %+v, the children's %+v", res.Usage, res.Subagents)
	}
	msgs := stored(t, st, id)
	for _, m := range msgs {
		if c, ok, _ := usage.Of(m); ok && c.Purpose != "" {
			t.Fatalf("the parent's call has purpose %q", c.Purpose)
		}
	}
	got := resultOf(t, msgs, "call_delegate_0")
	var want []string
	for i, a := range []string{"a", "b", "c"} {
		want = append(want, fmt.Sprintf("task %d (session %s):\nanswer %s", i+1, childID(id, "call_delegate_0", i), a))
	}
	if got != strings.Join(want, "\n\n") {
		t.Fatalf("result:\n%s\nwant:\n%s", got, strings.Join(want, "\n\n"))
	}
	for i, prompt := range []string{"a", "slow b", "c"} {
		cid := childID(id, "call_delegate_0", i)
		sess, err := st.Get(cid)
		if err != nil {
			t.Fatal(err)
		}
		if sess.ParentSessionID != id || sess.Source != SourceDelegate || sess.Delegation == nil ||
			*sess.Delegation != (sessions.Delegation{ToolCallID: "call_delegate_0", TaskIndex: i, Depth: 1}) {
			t.Fatalf("child %d: %+v (delegation %+v)", i, sess, sess.Delegation)
		}
		cm := stored(t, st, cid)
		if len(cm) != 2 || cm[0].Role != "user" || cm[0].Text() != prompt || cm[1].Role != "assistant" {
			t.Fatalf("child %d transcript:\n%s", i, dumpMsgs(cm))
		}
		if c, ok, _ := usage.Of(cm[1]); !ok || c.Purpose != usage.PurposeDelegate {
			t.Fatalf("child %d's call: %+v", i, c)
		}
		if tools := strings.Join(p.tools[prompt], ","); tools != "other" {
			t.Errorf("child %d was offered %s, want other", i, tools)
		}
	}
}

// At most Engine.MaxSubagents children run at once.
func TestDelegateBoundsParallelChildren(t *testing.T) {
	t.Parallel()
	st := newDelegateStore(t)
	id := newSession(t, st)
	replies := map[string][]sessions.Message{"go": {delegateCall(`{"prompt":"1"}`, `{"prompt":"2"}`, `{"prompt":"3"}`, `{"prompt":"4"}`), text("ok")}}
	for _, k := range []string{"1", "2", "3", "4"} {
		replies[k] = []sessions.Message{text("done " + k)}
	}
	p := newByPrompt(t, replies)
	var mu sync.Mutex
	running, most := 0, 0
	p.before = func(ctx context.Context, prompt string) error {
		if prompt == "go" {
			return nil
		}
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{delegateTool{}}, MaxSubagents: 2}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{}}); err != nil {
		t.Fatal(err)
	}
	if most > 2 {
		t.Fatalf("%d children ran at once; agent.max_subagents is 2", most)
	}
}

// Bad arguments are refused with a tool error and no child is made.
func TestDelegateRefusesBadArguments(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ args, want string }{
		"no tasks":       {`{"tasks":[]}`, "tasks is required"},
		"missing tasks":  {`{}`, "tasks is required"},
		"unknown field":  {`{"tasks":[{"prompt":"x","tool":["a"]}]}`, `unknown field "tool"`},
		"empty prompt":   {`{"tasks":[{"prompt":"x"},{"prompt":"  "}]}`, "task 2: prompt is required"},
		"not its tool":   {`{"tasks":[{"prompt":"x","tools":["terminal"]}]}`, `task 1: tool "terminal" is not one of yours (other, delegate)`},
		"too deep":       {`{"tasks":[{"prompt":"x","tools":["delegate"]}]}`, "may not delegate (agent.subagent_depth is 1)"},
		"tasks a string": {`{"tasks":"x"}`, "cannot unmarshal"},
	} {
		t.Run(name, func(t *testing.T) {
			st := newDelegateStore(t)
			id := newSession(t, st)
			p := newByPrompt(t, map[string][]sessions.Message{"go": {calls("delegate", c.args), text("ok")}})
			e := &Engine{Sessions: st, Provider: p, Tools: []Tool{&fakeTool{name: "other"}, delegateTool{}}}
			if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{}}); err != nil {
				t.Fatal(err)
			}
			got := resultOf(t, stored(t, st, id), "call_delegate_0")
			if !strings.HasPrefix(got, "error: delegate: ") || !strings.Contains(got, c.want) {
				t.Fatalf("result %q, want an error with %q", got, c.want)
			}
			ids, _ := st.IDs()
			if len(ids) != 1 {
				t.Fatalf("sessions %v: a child was made", ids)
			}
		})
	}
}

// A task's tools are its child's tools; with agent.subagent_depth 2 a
// child is offered delegate, and its own child is not.
func TestDelegateChildTools(t *testing.T) {
	t.Parallel()
	st := newDelegateStore(t)
	id := newSession(t, st)
	p := newByPrompt(t, map[string][]sessions.Message{
		"go":         {delegateCall(`{"prompt":"only other","tools":["other"]}`, `{"prompt":"deeper"}`), text("ok")},
		"only other": {text("x")},
		"deeper":     {delegateCall(`{"prompt":"deepest"}`), text("y")},
		"deepest":    {text("z")},
	})
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{&fakeTool{name: "other"}, &fakeTool{name: "more"}, delegateTool{}}, SubagentDepth: 2}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{}}); err != nil {
		t.Fatal(err)
	}
	for prompt, want := range map[string]string{"only other": "other", "deeper": "other,more,delegate", "deepest": "other,more"} {
		if got := strings.Join(p.tools[prompt], ","); got != want {
			t.Errorf("%s was offered %s, want %s", prompt, got, want)
		}
	}
	deepest, err := st.Get(childID(childID(id, "call_delegate_0", 1), "call_delegate_0", 0))
	if err != nil {
		t.Fatal(err)
	}
	if deepest.Delegation == nil || deepest.Delegation.Depth != 2 || deepest.ParentSessionID != childID(id, "call_delegate_0", 1) {
		t.Fatalf("grandchild %+v", deepest)
	}
}

// A cancelled turn (Ctrl-C) stops the children: their model calls are
// called off, the delegate call is answered as cancelled, the turn ends
// with the context's error, and no child's claim is left held.
func TestDelegateCancelStopsChildren(t *testing.T) {
	t.Parallel()
	st := newDelegateStore(t)
	id := newSession(t, st)
	p := newByPrompt(t, map[string][]sessions.Message{
		"go": {delegateCall(`{"prompt":"a"}`, `{"prompt":"b"}`)},
	})
	ctx, cancel := context.WithCancel(context.Background())
	var started sync.WaitGroup
	started.Add(2)
	stopped := make(chan string, 2)
	p.before = func(ctx context.Context, prompt string) error {
		if prompt == "go" {
			return nil
		}
		started.Done()
		<-ctx.Done()
		stopped <- prompt
		return ctx.Err()
	}
	go func() { started.Wait(); cancel() }()
	sa := subagents.Open(filepath.Join(t.TempDir(), "profile"))
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{delegateTool{}}}
	_, err := e.Run(ctx, Turn{SessionID: id, Input: user("go"), Env: &Env{Subagents: sa}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("turn: %v", err)
	}
	if len(stopped) != 2 {
		t.Fatalf("%d children stopped", len(stopped))
	}
	if got := resultOf(t, stored(t, st, id), "call_delegate_0"); got != cancelledResult {
		t.Fatalf("result %q", got)
	}
	for i := range 2 {
		h, err := sa.Claim(subagents.Claim{SessionID: childID(id, "call_delegate_0", i)}, nil)
		if err != nil {
			t.Fatalf("child %d's claim is still held: %v", i, err)
		}
		h.Release()
	}
}

// A sub-agent's session resumed with the delegate tool (a follow-up in
// chat, which offers it) still may not delegate past
// agent.subagent_depth.
func TestDelegateDepthOfResumedChild(t *testing.T) {
	t.Parallel()
	st := newDelegateStore(t)
	s, _, err := st.Create(sessions.Session{ID: "p-task-00000000-1", ParentSessionID: "p", Source: SourceDelegate,
		Delegation: &sessions.Delegation{ToolCallID: "call_x", Depth: 1}})
	if err != nil {
		t.Fatal(err)
	}
	p := newByPrompt(t, map[string][]sessions.Message{"more": {delegateCall(`{"prompt":"x"}`), text("ok")}})
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{delegateTool{}}}
	if _, err := e.Run(context.Background(), Turn{SessionID: s.ID, Input: user("more"), Env: &Env{}}); err != nil {
		t.Fatal(err)
	}
	got := resultOf(t, stored(t, st, s.ID), "call_delegate_0")
	if !strings.Contains(got, "error: delegate: this session is a sub-agent at depth 1, and agent.subagent_depth is 1") {
		t.Fatalf("result %q", got)
	}
	if ids, _ := st.IDs(); len(ids) != 1 {
		t.Fatalf("sessions %v: a child was made", ids)
	}
}

// A child runs on its task's model, else on its parent's turn's, and on
// the turn's provider when the turn names one (the gateway's routing).
func TestDelegateChildModelAndProvider(t *testing.T) {
	t.Parallel()
	st := newDelegateStore(t)
	id := newSession(t, st)
	p := newByPrompt(t, map[string][]sessions.Message{
		"go":      {delegateCall(`{"prompt":"default"}`, `{"prompt":"its own","model":"small"}`), text("ok")},
		"default": {text("a")},
		"its own": {text("b")},
	})
	e := &Engine{Sessions: st, Provider: &scripted{t: t}, Tools: []Tool{delegateTool{}}}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{}, Model: "big", Provider: p}); err != nil {
		t.Fatal(err)
	}
	if p.models["default"] != "big" || p.models["its own"] != "small" {
		t.Fatalf("models %v", p.models)
	}
	if sess, _ := st.Get(childID(id, "call_delegate_0", 0)); sess.Model != "big" {
		t.Fatalf("the child's document says model %q", sess.Model)
	}
}

// A child of a gateway's turn (ClientTools) has no client: its call of a
// tool it was not given is answered as unknown, and it goes on to its
// answer.
func TestDelegateChildHasNoClientTools(t *testing.T) {
	t.Parallel()
	st := newDelegateStore(t)
	id := newSession(t, st)
	p := newByPrompt(t, map[string][]sessions.Message{
		"go":    {delegateCall(`{"prompt":"child"}`), text("ok")},
		"child": {calls("client_tool", "{}"), text("answered")},
	})
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{delegateTool{}}, ClientTools: true}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{}}); err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, stored(t, st, id), "call_delegate_0"); !strings.HasSuffix(got, ":\nanswered") {
		t.Fatalf("result %q", got)
	}
	cm := stored(t, st, childID(id, "call_delegate_0", 0))
	if got := resultOf(t, cm, "call_client_tool_0"); !strings.HasPrefix(got, "error: unknown tool") {
		t.Fatalf("the child's call: %q", got)
	}
}

// A child's end fires SubagentStop, not Stop, with the parent's session id
// and the child's as agent_id; a block keeps the child going once, with
// the reason, as Stop does for a turn.
func TestDelegateFiresSubagentStop(t *testing.T) {
	t.Parallel()
	st := newDelegateStore(t)
	id := newSession(t, st)
	p := newByPrompt(t, map[string][]sessions.Message{
		"go": {delegateCall(`{"prompt":"a"}`), text("all done")},
		"a":  {text("answer a"), text("answer a, cited")},
	})
	dir := t.TempDir()
	guard := `cat >> events.jsonl; echo >> events.jsonl; [ -f once ] && exit 0; touch once; echo 'cite your sources' >&2; exit 2`
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{delegateTool{}},
		Hooks: hookSet(t, profiles.Hooks{hooks.SubagentStop: {{Command: guard}}, hooks.Stop: {{Command: `cat >> stops.jsonl; echo >> stops.jsonl`}}})}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{Cwd: dir}}); err != nil {
		t.Fatal(err)
	}
	events, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	stops, _ := os.ReadFile(filepath.Join(dir, "stops.jsonl"))
	if n := strings.Count(string(events), `"hook_event_name":"SubagentStop"`); n != 2 || !strings.Contains(string(events), `"session_id":"`+id+`"`) || !strings.Contains(string(events), `"agent_id":"`+id+`-task-`) {
		t.Errorf("SubagentStop inputs:\n%s", events)
	}
	if n := strings.Count(string(stops), `"hook_event_name":"Stop"`); n != 1 || !strings.Contains(string(stops), `"session_id":"`+id+`"`) {
		t.Errorf("Stop inputs (the parent's turn alone):\n%s", stops)
	}
	if res := resultOf(t, stored(t, st, id), "call_delegate_0"); !strings.Contains(res, "answer a, cited") {
		t.Errorf("delegate result %q, want the child's answer after the hook kept it going", res)
	}
}
