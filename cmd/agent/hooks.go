package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// The results and note of a turn a hook stopped ("continue": false).
const (
	hookStopResult = "not run: a hook stopped the turn: "
	hookStopNote   = "Note: a hook stopped the turn"
)

// callHooks is what the tool hooks of one call said, for its result.
type callHooks struct {
	base    hooks.Input
	args    json.RawMessage // the arguments it ran with (updatedInput's)
	ran     bool            // the tool was run
	failed  bool            // and returned an error (or did not return)
	records []hooks.Record
	stop    *string // a hook stopped the turn, for this reason
}

// record keeps o, for event, when it changed the call.
func (hk *callHooks) record(event string, o hooks.Outcome) {
	if o.Changed() {
		hk.records = append(hk.records, o.Record(event))
	}
}

// hookBase is the input every hook of sess's turn shares.
func (e *Engine) hookBase(sess sessions.Session, env *Env) hooks.Input {
	if e.Hooks == nil {
		return hooks.Input{}
	}
	cwd := firstNonEmpty(env.Cwd, sess.Cwd)
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	return hooks.Input{
		SessionID:      sess.ID,
		TranscriptPath: filepath.Join(e.Sessions.Dir, sess.ID+".jsonl"),
		Cwd:            cwd,
		PermissionMode: permissionMode(e.Approver),
	}
}

// permissionMode is Claude Code's name for the approval in force.
func permissionMode(a Approver) string {
	switch a {
	case Fixed(true):
		return "bypassPermissions"
	case Fixed(false):
		return "dontAsk"
	case nil: // no tools to approve (a compression)
		return ""
	}
	return "default"
}

// hookRun runs in's hooks and tells the user what they say to the user.
func (e *Engine) hookRun(ctx context.Context, in hooks.Input) hooks.Outcome {
	o := e.Hooks.Run(ctx, in)
	if e.Warn != nil {
		for _, n := range o.Notices {
			e.Warn(n)
		}
		if o.Stop {
			e.Warn("a " + in.HookEventName + " hook stopped the turn: " + o.StopReason)
		}
	}
	return o
}

// postToolUse runs the PostToolUse hooks of a call that ran (its
// PostToolUseFailure hooks when it failed) and returns the result the
// model reads: text, then what the hooks gave the model (a block's
// reason, additional context).
func (e *Engine) postToolUse(ctx context.Context, c provider.ToolCall, text string, hk *callHooks) string {
	event := hooks.PostToolUse
	if hk.failed {
		event = hooks.PostToolUseFailure
	}
	if !hk.ran || !e.Hooks.Has(event) {
		return text
	}
	in := hooks.ToolInput(hk.base, event, c.Function.Name, c.ID, hk.args)
	if hk.failed {
		in.Error = strings.TrimPrefix(text, "error: ")
		in.IsInterrupt = new(false)
	} else {
		in.ToolResponse, _ = json.Marshal(text) // a string always encodes
	}
	o := e.hookRun(ctx, in)
	hk.record(event, o)
	if o.Stop {
		hk.stop = &o.StopReason
	}
	var add []string
	if o.Block {
		add = append(add, event+" hook: "+o.Reason)
	}
	add = append(add, o.Context...)
	if len(add) == 0 {
		return text
	}
	return text + "\n\n" + strings.Join(add, "\n")
}

// stopByHook answers the calls left with the stop's reason and stores
// the note that ends the turn (a turn that ended: CutAt).
func (e *Engine) stopByHook(res *Result, calls []provider.ToolCall, reason string) error {
	msgs := make([]sessions.Message, 0, len(calls)+1)
	for _, c := range calls {
		msgs = append(msgs, toolResult(c, hookStopResult+reason, false))
	}
	text := hookStopNote + "."
	if reason != "" {
		text = hookStopNote + ": " + reason
	}
	msgs = append(msgs, note(sessions.Message{Role: "system", Content: sessions.TextContent(text)}))
	return e.store(res, msgs...)
}

// PromptRefusedError is a prompt a UserPromptSubmit hook refused: nothing
// of the turn is stored. It is fsstore.ErrRefused (exit 4).
type PromptRefusedError struct{ Reason string }

func (e *PromptRefusedError) Error() string {
	return "a UserPromptSubmit hook refused the prompt, which was not stored: " + e.Reason
}

func (e *PromptRefusedError) Unwrap() error { return fsstore.ErrRefused }

// sessionHooks runs event's hooks for sess, with in's event fields set.
func (e *Engine) sessionHooks(ctx context.Context, sess sessions.Session, in hooks.Input) hooks.Outcome {
	base := e.hookBase(sess, &Env{Cwd: sess.Cwd})
	base.HookEventName = in.HookEventName
	base.Source, base.Model, base.Reason, base.Prompt = in.Source, in.Model, in.Reason, in.Prompt
	base.Trigger, base.CustomInstructions, base.CompactSummary = in.Trigger, in.CustomInstructions, in.CompactSummary
	return e.hookRun(ctx, base)
}

// hookNote is the note that gives the model the context o's hooks added
// at event, with their record; none when they added none.
func hookNote(event string, o hooks.Outcome) []sessions.Message {
	if len(o.Context) == 0 {
		return nil
	}
	m := note(sessions.Message{Role: "system", Content: sessions.TextContent(strings.Join(o.Context, "\n"))})
	hooks.Attach(&m, o.Record(event))
	return []sessions.Message{m}
}

// SessionStart runs the SessionStart hooks of sess, which starts from
// source (new, resume, fork, compress), and returns the note holding the
// context they add, for the caller to store before the session's next
// input (none when they add none). sess need not be stored yet: a front
// end that creates a session with its first messages (chat) gives the id
// it will create it with.
func (e *Engine) SessionStart(ctx context.Context, sess sessions.Session, source string) []sessions.Message {
	if !e.Hooks.Has(hooks.SessionStart) {
		return nil
	}
	return hookNote(hooks.SessionStart, e.sessionHooks(ctx, sess, hooks.Input{HookEventName: hooks.SessionStart, Source: source, Model: sess.Model}))
}

// SubmitPrompt runs the UserPromptSubmit hooks of input's prompt (its
// last user message) in sess, and returns input with the note holding
// the context they add before that message. A block (exit 2, "decision":
// "block") or "continue": false refuses the prompt: a
// *PromptRefusedError, and the caller stores nothing.
func (e *Engine) SubmitPrompt(ctx context.Context, sess sessions.Session, input []sessions.Message) ([]sessions.Message, error) {
	if !e.Hooks.Has(hooks.UserPromptSubmit) {
		return input, nil
	}
	i := len(input) - 1
	for i >= 0 && input[i].Role != "user" {
		i--
	}
	if i < 0 {
		return input, nil
	}
	o := e.sessionHooks(ctx, sess, hooks.Input{HookEventName: hooks.UserPromptSubmit, Prompt: input[i].Text()})
	switch {
	case o.Block:
		return nil, &PromptRefusedError{Reason: o.Reason}
	case o.Stop:
		return nil, &PromptRefusedError{Reason: firstNonEmpty(o.StopReason, "continue: false")}
	}
	notes := hookNote(hooks.UserPromptSubmit, o)
	if notes == nil {
		return input, nil
	}
	out := append(append(append(make([]sessions.Message, 0, len(input)+1), input[:i]...), notes...), input[i:]...)
	return out, nil
}

// SessionEnd runs the SessionEnd hooks of sess, ended for reason (its
// end_reason). They cannot change anything: what they say is told.
func (e *Engine) SessionEnd(ctx context.Context, sess sessions.Session, reason string) {
	if e.Hooks.Has(hooks.SessionEnd) {
		e.sessionHooks(ctx, sess, hooks.Input{HookEventName: hooks.SessionEnd, Reason: reason})
	}
}

// stopHooks runs the Stop hooks of a turn whose last reply, last, calls
// no tool. A block keeps the turn going: the note holding the reason is
// stored, and true returned, for the engine to call the provider again.
// active is true when a Stop hook kept this turn going already.
func (e *Engine) stopHooks(ctx context.Context, res *Result, base hooks.Input, last string, active bool) (bool, error) {
	event := hooks.Stop
	if e.parent != nil {
		event = hooks.SubagentStop // a delegated child's turn
	}
	if !e.Hooks.Has(event) {
		return false, nil
	}
	var o hooks.Outcome
	if e.parent != nil {
		child, err := e.Sessions.Get(base.SessionID)
		if err != nil {
			return false, err
		}
		o = e.SubagentStop(ctx, *e.parent, child, SourceDelegate, last, active)
	} else {
		in := base
		in.HookEventName = hooks.Stop
		in.StopHookActive = &active
		in.LastAssistantMessage = &last
		o = e.hookRun(ctx, in)
	}
	if !o.Block || o.Stop || ctx.Err() != nil {
		return false, nil
	}
	m := note(sessions.Message{Role: "system", Content: sessions.TextContent(stopHookNote + o.Reason)})
	hooks.Attach(&m, o.Record(event))
	return true, e.store(res, m)
}

// stopHookNote begins the note of a Stop (or SubagentStop) hook that kept
// a turn going.
const stopHookNote = "A Stop hook kept the turn going: "

// SubagentStop runs the SubagentStop hooks of child, a session a
// delegation of parent's ran (agentType names its kind, "" for the
// default), once child's turn is done with last as its reply. Its
// Outcome's Block and Reason say whether child should go on, and with
// what; the caller stores what it acts on (hooks.Record).
func (e *Engine) SubagentStop(ctx context.Context, parent, child sessions.Session, agentType, last string, active bool) hooks.Outcome {
	if !e.Hooks.Has(hooks.SubagentStop) {
		return hooks.Outcome{}
	}
	in := e.hookBase(parent, &Env{Cwd: firstNonEmpty(child.Cwd, parent.Cwd)})
	in.HookEventName = hooks.SubagentStop
	in.StopHookActive = &active
	in.LastAssistantMessage = &last
	in.AgentID = child.ID
	in.AgentType = agentType
	in.AgentTranscriptPath = filepath.Join(e.Sessions.Dir, child.ID+".jsonl")
	return e.hookRun(ctx, in)
}

// compressed runs the hooks of a compression of parent into child, done:
// PostCompact, the parent's SessionEnd, the child's SessionStart (its
// context appended to the child; a failure to store it is told, the
// compression stands).
func (e *Engine) compressed(ctx context.Context, parent, child sessions.Session, trigger, summary string) {
	if e.Hooks.Has(hooks.PostCompact) {
		e.sessionHooks(ctx, parent, hooks.Input{HookEventName: hooks.PostCompact, Trigger: trigger, CompactSummary: summary})
	}
	if e.Hooks.Has(hooks.SessionEnd) {
		if ended, err := e.Sessions.Get(parent.ID); err == nil {
			e.SessionEnd(ctx, ended, ended.EndReason)
		}
	}
	if notes := e.SessionStart(ctx, child, "compress"); notes != nil {
		if _, err := e.Sessions.Append(child.ID, notes); err != nil && e.Warn != nil {
			e.Warn(fmt.Sprintf("session %s: the SessionStart hooks' context was not stored: %v", child.ID, err))
		}
	}
}
