package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hermes/hermes/fsstore/sessions"
)

// Outcome is what an event's hooks said, combined as Claude Code combines
// it; the front end acts on what its event allows (see the package doc).
type Outcome struct {
	// Block: a hook exited 2 (its stderr is the reason), answered
	// "decision": "block", or (PreToolUse) "permissionDecision": "deny".
	Block  bool
	Reason string
	// Ask and Allow are PreToolUse's "permissionDecision": ask and allow
	// ("decision": "approve" is allow, as Claude Code still reads it).
	// Block wins over Ask, Ask over Allow.
	Ask, Allow bool
	// UpdatedInput is PreToolUse's "updatedInput": the call's arguments
	// to run instead (the first hook's that gave any).
	UpdatedInput json.RawMessage
	// Context is what goes to the model: each additionalContext, and the
	// stdout of a hook that exits 0 at UserPromptSubmit or SessionStart.
	Context []string
	// Stop is "continue": false: the turn stops after this event, and
	// StopReason says why, to the user.
	Stop       bool
	StopReason string
	// Notices are for the user, never the model: systemMessage, and each
	// hook that failed (exit code other than 0 and 2, a timeout, a
	// command that would not start) with its stderr.
	Notices []string
	// By are the commands whose answers make up the rest, in order.
	By []string
}

// Changed reports whether o changes the turn: a block, a permission
// decision, updated input, context or a stop. Only such an outcome is
// stored (Record).
func (o Outcome) Changed() bool {
	return o.Block || o.Ask || o.Allow || o.UpdatedInput != nil || len(o.Context) > 0 || o.Stop
}

// output is the JSON a hook may print on stdout when it exits 0.
type output struct {
	Continue      *bool  `json:"continue"`
	StopReason    string `json:"stopReason"`
	SystemMessage string `json:"systemMessage"`
	Decision      string `json:"decision"`
	Reason        string `json:"reason"`
	Specific      *struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// combine makes one Outcome of an event's results, taken in the order the
// hooks are configured.
func combine(event string, results []result) Outcome {
	var o Outcome
	var reasons []string
	by := func(h Hook) {
		if !slices.Contains(o.By, h.Command) {
			o.By = append(o.By, h.Command)
		}
	}
	for _, r := range results {
		name := describe(r.hook)
		switch {
		case r.err != nil:
			o.Notices = append(o.Notices, fmt.Sprintf("%s: %v", name, r.err))
			continue
		case r.timedOut:
			o.Notices = append(o.Notices, fmt.Sprintf("%s: timed out after %s: killed with its process group", name, r.hook.Timeout))
			continue
		case r.code == 2 && canBlock(event):
			o.Block = true
			reasons = append(reasons, strings.TrimSpace(string(r.stderr)))
			by(r.hook)
			continue
		case r.code != 0:
			msg := fmt.Sprintf("%s: exited %d", name, r.code)
			if r.code < 0 {
				msg = name + ": killed by a signal"
			}
			if e := strings.TrimSpace(string(r.stderr)); e != "" {
				msg += ": " + e
			}
			o.Notices = append(o.Notices, msg)
			continue
		}
		out := bytes.TrimSpace(r.stdout)
		var j output
		if r.cut || len(out) == 0 || out[0] != '{' || json.Unmarshal(out, &j) != nil {
			if len(out) > 0 && (event == UserPromptSubmit || event == SessionStart) {
				o.Context = append(o.Context, string(out))
				by(r.hook)
			}
			continue
		}
		if j.SystemMessage != "" {
			o.Notices = append(o.Notices, j.SystemMessage)
		}
		if j.Continue != nil && !*j.Continue {
			o.Stop = true
			o.StopReason = firstNonEmpty(o.StopReason, j.StopReason)
			by(r.hook)
		}
		switch j.Decision {
		case "block":
			if !canBlock(event) {
				break
			}
			o.Block = true
			reasons = append(reasons, j.Reason)
			by(r.hook)
		case "approve":
			if event == PreToolUse {
				o.Allow = true
				by(r.hook)
			}
		}
		if s := j.Specific; s != nil {
			if event == PreToolUse {
				switch s.PermissionDecision {
				case "deny":
					o.Block = true
					reasons = append(reasons, s.PermissionDecisionReason)
					by(r.hook)
				case "ask":
					o.Ask = true
					by(r.hook)
				case "allow":
					o.Allow = true
					by(r.hook)
				}
				if len(s.UpdatedInput) > 0 && string(s.UpdatedInput) != "null" && o.UpdatedInput == nil {
					o.UpdatedInput = s.UpdatedInput
					by(r.hook)
				}
			}
			if s.AdditionalContext != "" {
				o.Context = append(o.Context, s.AdditionalContext)
				by(r.hook)
			}
		}
	}
	if o.Block {
		o.Ask, o.Allow = false, false
		o.Reason = joinNonEmpty(reasons)
		if o.Reason == "" {
			o.Reason = "no reason given"
		}
	} else if o.Ask {
		o.Allow = false
	}
	return o
}

// canBlock reports whether event's hooks may block (exit 2, "decision":
// "block"): at the others, as in Claude Code, exit 2 is told to the user
// as any failure is, and a decision is not read.
func canBlock(event string) bool {
	switch event {
	case SessionStart, SessionEnd, PreCompact, PostCompact:
		return false
	}
	return true
}

// describe names a hook in a notice.
func describe(h Hook) string {
	return fmt.Sprintf("%s hook %q", h.Event, cut(h.Command, 80))
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func joinNonEmpty(parts []string) string {
	var keep []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n")
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// RecordKey is the extra field of a transcript message that holds the
// Records of the hooks that changed it: a resumed session, an export and
// sessions show see what happened.
const RecordKey = "hooks"

// Record is an Outcome that changed the turn, as the transcript keeps it.
type Record struct {
	Event string `json:"event"`
	// Hooks are the commands that answered.
	Hooks []string `json:"hooks"`
	// Decision is block, ask or allow, when one was given.
	Decision     string          `json:"decision,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	Context      string          `json:"additional_context,omitempty"`
	Stop         bool            `json:"stop,omitempty"`
	StopReason   string          `json:"stop_reason,omitempty"`
}

// Record is o as the transcript keeps it, for event.
func (o Outcome) Record(event string) Record {
	r := Record{Event: event, Hooks: o.By, Reason: o.Reason, UpdatedInput: o.UpdatedInput,
		Context: strings.Join(o.Context, "\n"), Stop: o.Stop, StopReason: o.StopReason}
	switch {
	case o.Block:
		r.Decision = "block"
	case o.Ask:
		r.Decision = "ask"
	case o.Allow:
		r.Decision = "allow"
	}
	return r
}

// Attach adds recs to m's RecordKey field, after any it holds.
func Attach(m *sessions.Message, recs ...Record) {
	if len(recs) == 0 {
		return
	}
	all := append(Records(*m), recs...)
	b, err := json.Marshal(all)
	if err != nil {
		return // a Record always encodes
	}
	extra := make(map[string]json.RawMessage, len(m.Extra)+1)
	for k, v := range m.Extra {
		extra[k] = v
	}
	extra[RecordKey] = b
	m.Extra = extra
}

// Records are the Records m holds; none when its field is missing or does
// not decode.
func Records(m sessions.Message) []Record {
	var recs []Record
	if raw, ok := m.Extra[RecordKey]; ok {
		if json.Unmarshal(raw, &recs) != nil {
			return nil
		}
	}
	return recs
}
