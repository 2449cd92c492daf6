package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/profiles"
)

// The events, named as Claude Code names them.
const (
	SessionStart       = "SessionStart"
	SessionEnd         = "SessionEnd"
	UserPromptSubmit   = "UserPromptSubmit"
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	PreCompact         = "PreCompact"
	PostCompact        = "PostCompact"
	Stop               = "Stop"
	SubagentStop       = "SubagentStop"
)

// Events are the events hermes fires, in the order a session meets them.
var Events = []string{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, PreCompact, PostCompact, Stop, SubagentStop, SessionEnd}

// DefaultTimeout bounds a hook that sets no timeout, as Claude Code's
// default does.
const DefaultTimeout = 60 * time.Second

// MaxOutput bounds what is kept of each of a hook's streams (stdout,
// stderr); the rest is read and dropped.
const MaxOutput = 64 << 10

// Hook is one command and when it runs.
type Hook struct {
	Event   string
	Matcher string
	Command string
	Timeout time.Duration
	match   func(string) bool
}

// Set is a profile's hooks, ready to run. The zero Set (and a nil *Set)
// has none.
type Set struct {
	byEvent map[string][]Hook
}

// New checks cfg and compiles its matchers: an unknown event, a matcher
// that is not a valid regular expression, a command left empty, a type
// other than command or a timeout below 0 is ErrInvalid naming the entry
// (setting is where cfg came from: hooks or gateway.hooks).
func New(setting string, cfg profiles.Hooks) (*Set, error) {
	s := &Set{byEvent: map[string][]Hook{}}
	events := make([]string, 0, len(cfg))
	for e := range cfg {
		events = append(events, e)
	}
	slices.Sort(events)
	for _, event := range events {
		if !slices.Contains(Events, event) {
			return nil, fsstore.Invalidf("%s.%s: unknown event (events: %s)", setting, event, strings.Join(Events, ", "))
		}
		for i, m := range cfg[event] {
			at := fmt.Sprintf("%s.%s[%d]", setting, event, i)
			match, err := compile(m.Matcher)
			if err != nil {
				return nil, fsstore.Invalidf("%s.matcher: %w", at, err)
			}
			cmds := m.Hooks
			if m.Command != "" || len(m.Hooks) == 0 {
				if len(m.Hooks) > 0 {
					return nil, fsstore.Invalidf("%s: has both command and hooks; write one or the other", at)
				}
				cmds = []profiles.HookCommand{{Command: m.Command, Timeout: m.Timeout}}
			} else if m.Timeout != 0 {
				return nil, fsstore.Invalidf("%s.timeout: goes with command; in Claude Code's form, each of hooks has its own", at)
			}
			for j, c := range cmds {
				where := at
				if len(m.Hooks) > 0 {
					where = fmt.Sprintf("%s.hooks[%d]", at, j)
				}
				if c.Type != "" && c.Type != "command" {
					return nil, fsstore.Invalidf("%s.type: %q is not a kind hermes runs (only command)", where, c.Type)
				}
				if strings.TrimSpace(c.Command) == "" {
					return nil, fsstore.Invalidf("%s.command: is empty", where)
				}
				if c.Timeout < 0 || math.IsNaN(c.Timeout) || math.IsInf(c.Timeout, 0) {
					return nil, fsstore.Invalidf("%s.timeout: must be a positive number of seconds", where)
				}
				timeout := DefaultTimeout
				if c.Timeout > 0 {
					timeout = time.Duration(min(c.Timeout, 1e6) * float64(time.Second))
				}
				s.byEvent[event] = append(s.byEvent[event], Hook{Event: event, Matcher: m.Matcher, Command: c.Command, Timeout: timeout, match: match})
			}
		}
	}
	return s, nil
}

// List is every hook, by event in the order of Events, then as
// configured.
func (s *Set) List() []Hook {
	if s == nil {
		return nil
	}
	var out []Hook
	for _, e := range Events {
		out = append(out, s.byEvent[e]...)
	}
	return out
}

// Has reports whether any hook is configured for event, whatever its
// matcher: a front end skips the work of an event's input without one.
func (s *Set) Has(event string) bool {
	return s != nil && len(s.byEvent[event]) > 0
}

// compile is a matcher as Claude Code reads one: empty or * matches
// everything; letters, digits, _ and | are a name or names separated by |,
// each matched exactly; anything else is a regular expression, matched
// anywhere in the name (Notebook.*, mcp__github__.*; anchor it with ^ and
// $ to match whole names).
func compile(m string) (func(string) bool, error) {
	if m == "" || m == "*" {
		return func(string) bool { return true }, nil
	}
	simple := strings.IndexFunc(m, func(r rune) bool {
		return !(r == '_' || r == '|' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0
	if simple {
		names := strings.Split(m, "|")
		return func(s string) bool { return slices.Contains(names, s) }, nil
	}
	re, err := regexp.Compile(m)
	if err != nil {
		return nil, err
	}
	return re.MatchString, nil
}

// matching returns the hooks of in's event whose matcher matches one of
// in's names for it (matchNames), each command once.
func (s *Set) matching(in *Input) []Hook {
	if s == nil {
		return nil
	}
	all := s.byEvent[in.HookEventName]
	if len(all) == 0 {
		return nil
	}
	names := matchNames(in)
	var out []Hook
	for _, h := range all {
		if names != nil && !slices.ContainsFunc(names, h.match) {
			continue
		}
		if slices.ContainsFunc(out, func(o Hook) bool { return o.Command == h.Command }) {
			continue // Claude Code runs an identical command once
		}
		out = append(out, h)
	}
	return out
}

// Run runs the hooks of in's event that match it, all at once, and
// combines what they said (Outcome). Nothing configured for the event
// costs a map lookup. ctx ending kills the hooks still running.
func (s *Set) Run(ctx context.Context, in Input) Outcome {
	hooks := s.matching(&in)
	if len(hooks) == 0 {
		return Outcome{}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return Outcome{Notices: []string{fmt.Sprintf("%s hooks: encoding their input: %v", in.HookEventName, err)}}
	}
	return combine(in.HookEventName, runAll(ctx, hooks, in.Cwd, stdin))
}

// Ran is one hook's run, as `hermes hooks test` shows it.
type Ran struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"` // -1: it did not exit by itself
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Trial is Run, returning each hook's run besides their Outcome.
func (s *Set) Trial(ctx context.Context, in Input) ([]Ran, Outcome) {
	hooks := s.matching(&in)
	if len(hooks) == 0 {
		return nil, Outcome{}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return nil, Outcome{Notices: []string{fmt.Sprintf("%s hooks: encoding their input: %v", in.HookEventName, err)}}
	}
	results := runAll(ctx, hooks, in.Cwd, stdin)
	ran := make([]Ran, len(results))
	for i, r := range results {
		ran[i] = Ran{Command: r.hook.Command, ExitCode: r.code, Stdout: string(r.stdout), Stderr: string(r.stderr), TimedOut: r.timedOut}
		if r.err != nil {
			ran[i].Error = r.err.Error()
		}
	}
	return ran, combine(in.HookEventName, results)
}

// runAll runs hooks at once and returns their results in their order.
func runAll(ctx context.Context, hooks []Hook, dir string, stdin []byte) []result {
	results := make([]result, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		wg.Go(func() { results[i] = run(ctx, h, dir, stdin) })
	}
	wg.Wait()
	return results
}
