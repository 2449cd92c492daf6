package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/provider"
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
	case nil, Fixed(false):
		return "dontAsk"
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
