package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/subagents"
	"github.com/hermes/hermes/fsstore/usage"
)

// DelegateToolName is the tool that runs sub-agents (delegate.go).
const DelegateToolName = "delegate"

// Delegation's defaults, each overridden by config.yaml's agent section.
const (
	// DefaultMaxSubagents is how many children of one delegate call run
	// at once (agent.max_subagents).
	DefaultMaxSubagents = 3
	// DefaultSubagentDepth is how deep delegation goes
	// (agent.subagent_depth): 1, the user's session delegates and its
	// children do not.
	DefaultSubagentDepth = 1
	// MaxDelegateTasks bounds the tasks of one call.
	MaxDelegateTasks = 16
)

// SourceDelegate is the source of a sub-agent's session.
const SourceDelegate = "delegate"

// delegateTool runs each task of its call as a child session: a turn of
// the engine that runs the parent's, on a session of its own that starts
// with the task's prompt, with the tools the task names among the
// parent's. The children run in parallel, at most Engine.MaxSubagents at
// once, and the call's result is each child's final answer, cut to an
// equal share of the output's bound, in the order of the tasks.
type delegateTool struct{}

func (delegateTool) Name() string { return DelegateToolName }

func (delegateTool) Schema() json.RawMessage {
	task := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"prompt": prop("string", "the whole task, self-contained: the sub-agent sees nothing of this conversation"),
			"tools": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
				"description": "the tools the sub-agent may use, among yours (default: all of yours but delegate)"},
			"model": prop("string", "the model the sub-agent runs on (default: yours)"),
		},
		"required":             []string{"prompt"},
		"additionalProperties": false,
	}
	return schema(DelegateToolName, "Run one or several tasks as sub-agents, in parallel, each in a fresh conversation of its own with a subset of your tools; "+
		"the result is each sub-agent's final answer, in the order of the tasks. Give each task everything it needs to know.",
		map[string]any{"tasks": map[string]any{"type": "array", "minItems": 1, "maxItems": MaxDelegateTasks, "items": task,
			"description": "the tasks, each run by a sub-agent of its own"}}, "tasks")
}

// NeedsApproval is false: the children's calls are approved as the
// parent's own are, one by one.
func (delegateTool) NeedsApproval(json.RawMessage) bool { return false }

// Resumes is true: a call a crash cut short is run again, and carries on
// (Resumer): each child is claimed, a finished one is read, not run, and
// an unfinished one continues its own session.
func (delegateTool) Resumes() bool { return true }

// delegateTask is one task of a call, as the model gives it.
type delegateTask struct {
	Prompt string   `json:"prompt"`
	Tools  []string `json:"tools"`
	Model  string   `json:"model"`
}

// child is a task made ready to run: its session's id and its tools.
type child struct {
	task  delegateTask
	id    string
	tools []Tool
}

func (delegateTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	e := env.engine
	if e == nil || env.callID == "" {
		return "", errors.New("delegate: not available here (no turn engine)")
	}
	var args struct {
		Tasks []delegateTask `json:"tasks"`
	}
	if err := decodeArgs(DelegateToolName, raw, &args); err != nil {
		return "", err
	}
	switch {
	case len(args.Tasks) == 0:
		return "", errors.New("delegate: tasks is required: a list of at least one {\"prompt\": …}")
	case len(args.Tasks) > MaxDelegateTasks:
		return "", fmt.Errorf("delegate: %d tasks: at most %d in one call", len(args.Tasks), MaxDelegateTasks)
	}
	parent, err := e.Sessions.Get(env.SessionID)
	if err != nil {
		return "", fmt.Errorf("delegate: %w", err)
	}
	depth := 1
	if parent.Delegation != nil {
		depth = parent.Delegation.Depth + 1
	}
	if maxDepth := e.maxDepth(); depth > maxDepth {
		// A sub-agent resumed where delegate is offered (a follow-up in
		// chat) is held to the limit too.
		return "", fmt.Errorf("delegate: this session is a sub-agent at depth %d, and agent.subagent_depth is %d", depth-1, maxDepth)
	}
	children := make([]child, len(args.Tasks))
	for i, task := range args.Tasks {
		if task.Model == "" {
			task.Model = env.model
		}
		if strings.TrimSpace(task.Prompt) == "" {
			return "", fmt.Errorf("delegate: task %d: prompt is required", i+1)
		}
		tools, err := e.childTools(task.Tools, depth)
		if err != nil {
			return "", fmt.Errorf("delegate: task %d: %w", i+1, err)
		}
		children[i] = child{task: task, id: childID(parent.ID, env.callID, i), tools: tools}
	}
	results := make([]string, len(children))
	errs := make([]error, len(children))
	limit := e.MaxSubagents
	if limit <= 0 {
		limit = DefaultMaxSubagents
	}
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				errs[i] = context.Cause(ctx)
				return
			}
			defer func() { <-slots }()
			results[i], errs[i] = e.runChild(ctx, env, parent, children[i], i, depth)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return "", fmt.Errorf("delegate: %w", context.Cause(ctx))
	}
	maxOut := env.MaxOutput
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}
	share := max(maxOut/len(children), 256)
	var b strings.Builder
	for i, c := range children {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if errs[i] != nil {
			fmt.Fprintf(&b, "task %d (session %s) failed: %v", i+1, c.id, errs[i])
			continue
		}
		answer := results[i]
		if strings.TrimSpace(answer) == "" {
			answer = "(the sub-agent ended without an answer)"
		}
		fmt.Fprintf(&b, "task %d (session %s):\n%s", i+1, c.id, cut(answer, share))
	}
	return b.String(), nil
}

// childTools are the tools a child at depth may use: those names picks
// among e's (all of them when names is nil), delegate only while depth is
// below MaxDepth.
func (e *Engine) childTools(names []string, depth int) ([]Tool, error) {
	maxDepth := e.maxDepth()
	mayDelegate := depth < maxDepth
	if names == nil {
		var out []Tool
		for _, t := range e.Tools {
			if t.Name() != DelegateToolName || mayDelegate {
				out = append(out, t)
			}
		}
		return out, nil
	}
	var out []Tool
	for _, name := range names {
		t := e.tool(name)
		switch {
		case t == nil:
			own := make([]string, len(e.Tools))
			for i, t := range e.Tools {
				own[i] = t.Name()
			}
			return nil, fmt.Errorf("tool %q is not one of yours (%s)", name, strings.Join(own, ", "))
		case name == DelegateToolName && !mayDelegate:
			return nil, fmt.Errorf("tool %s: a sub-agent at depth %d may not delegate (agent.subagent_depth is %d)", name, depth, maxDepth)
		case !slices.Contains(out, t):
			out = append(out, t)
		}
	}
	return out, nil
}

// maxDepth is SubagentDepth, or its default.
func (e *Engine) maxDepth() int {
	if e.SubagentDepth <= 0 {
		return DefaultSubagentDepth
	}
	return e.SubagentDepth
}

// childID is the session id of task i of call callID in session parent:
// the same on every run of the call, so that a resumed call finds the
// children its first run made.
func childID(parent, callID string, i int) string {
	sum := sha256.Sum256([]byte(callID))
	id := fmt.Sprintf("%s-task-%s-%d", parent, hex.EncodeToString(sum[:4]), i+1)
	if len(id) > fsstore.MaxIDLen {
		sum = sha256.Sum256([]byte(parent + "\x00" + callID))
		id = fmt.Sprintf("task-%s-%d", hex.EncodeToString(sum[:12]), i+1)
	}
	return id
}

// delegateStep runs after each durable step of a child's run ("claimed",
// "created", "answered": its turn stored, "finished": its claim says
// so), with the child's prompt; a test kills the process there.
var delegateStep = func(step, prompt string) {}

// runChild runs child c, task i of env's call, to its final answer, under
// its claim (env.Subagents, when set): a child another process runs is
// refused; one whose session ended its turn already (a finished child of
// a call run again after a crash) is read, not run; one cut short is
// carried on in its session. Its session is created with its opening and
// prompt at once, so that it exists whole or not at all, and ended once
// it has answered.
func (e *Engine) runChild(ctx context.Context, env *Env, parent sessions.Session, c child, i, depth int) (string, error) {
	if env.Subagents != nil {
		held, err := env.Subagents.Claim(subagents.Claim{SessionID: c.id, ParentSessionID: parent.ID, ToolCallID: env.callID, TaskIndex: i}, ctx.Done())
		if err != nil {
			return "", err
		}
		defer held.Release()
		delegateStep("claimed", c.task.Prompt)
		answer, err := e.runClaimed(ctx, env, parent, c, i, depth)
		if err != nil {
			return "", err
		}
		if err := held.Finish(); err != nil {
			return "", err
		}
		delegateStep("finished", c.task.Prompt)
		return answer, nil
	}
	return e.runClaimed(ctx, env, parent, c, i, depth)
}

// runClaimed is runChild once the child is claimed.
func (e *Engine) runClaimed(ctx context.Context, env *Env, parent sessions.Session, c child, i, depth int) (string, error) {
	cwd := firstNonEmpty(env.Cwd, parent.Cwd)
	reply := func(m sessions.Message) bool { return m.Role == "assistant" && !IsNote(m) }
	msgs := e.Opening(ctx, cwd, []sessions.Message{{Role: "user", Content: sessions.TextContent(c.task.Prompt)}})
	if tail, err := e.Sessions.Tail(c.id, reply); err == nil && len(tail) > 0 {
		// A create cut short (kill -9 before its document, the commit
		// point) left the transcript: the document is made for it, and
		// the prompt is not stored twice.
		msgs = nil
	}
	_, _, err := e.Sessions.CreateWith(sessions.Session{
		ID: c.id, Source: SourceDelegate, Model: c.task.Model, Cwd: cwd, ParentSessionID: parent.ID,
		Delegation: &sessions.Delegation{ToolCallID: env.callID, TaskIndex: i, Depth: depth},
	}, msgs)
	if err != nil {
		return "", err
	}
	delegateStep("created", c.task.Prompt)
	sub := *e
	// A child has no client to run a tool it was not given: such a call
	// is answered as unknown.
	sub.Tools, sub.ClientTools = c.tools, false
	tail, err := e.Sessions.Tail(c.id, reply)
	if err != nil {
		return "", err
	}
	if len(tail) > 0 && reply(tail[0]) && sub.ended(tail) {
		// It answered before the call was cut short: read, not run.
		return Result{Added: tail}.Text(), e.endChild(c.id)
	}
	cenv := &Env{Cwd: env.Cwd, Root: env.Root, Sessions: env.Sessions, Tasks: env.Tasks, MaxOutput: env.MaxOutput,
		TerminalTimeout: env.TerminalTimeout, StartTask: env.StartTask, Memory: env.Memory, Skills: env.Skills,
		Checkpoints: env.Checkpoints, ShellGit: env.ShellGit, Subagents: env.Subagents}
	sub.purpose, sub.parent = usage.PurposeDelegate, &parent
	res, err := sub.Run(ctx, Turn{SessionID: c.id, Env: cenv, Model: c.task.Model, Provider: env.provider})
	env.subagents.add(res.Usage)
	env.subagents.add(res.Subagents)
	if err != nil {
		return "", err
	}
	delegateStep("answered", c.task.Prompt)
	return res.Text(), e.endChild(c.id)
}

// EndSubagentDone is the end reason of a child session that has answered.
const EndSubagentDone = "subagent_done"

// endChild ends child id once it has answered; one ended already is left.
func (e *Engine) endChild(id string) error {
	sess, err := e.Sessions.Get(id)
	if err != nil || sess.State == sessions.StateEnded {
		return err
	}
	_, err = e.Sessions.End(id, EndSubagentDone)
	return err
}

// usageSum adds up the usage of children that run at once.
type usageSum struct {
	mu  sync.Mutex
	sum *provider.Usage
}

func (s *usageSum) add(u *provider.Usage) {
	if s == nil || u == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum = s.sum.Add(u)
}

func (s *usageSum) total() *provider.Usage {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sum
}

// markPurpose sets purpose on the usage each of msgs records.
func markPurpose(msgs []sessions.Message, purpose string) {
	for i := range msgs {
		if c, ok, err := usage.Of(msgs[i]); ok && err == nil {
			c.Purpose = purpose
			usage.Put(&msgs[i], c)
		}
	}
}
