package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/profiles"
)

func TestMatcher(t *testing.T) {
	for _, tc := range []struct {
		matcher string
		match   []string
		miss    []string
	}{
		{"", []string{"Bash", "mcp__fs__read", "x"}, nil},
		{"*", []string{"Bash", "Write"}, nil},
		{"Bash", []string{"Bash"}, []string{"bash", "BashOutput", "xBash", ""}},
		{"Edit|Write", []string{"Edit", "Write"}, []string{"Edit|Write", "MultiEdit", "Read"}},
		{"Notebook.*", []string{"NotebookEdit", "NotebookRead"}, []string{"Note"}},
		{"mcp__memory__.*", []string{"mcp__memory__create_entities"}, []string{"mcp__fs__read"}},
		{"mcp__.*__write.*", []string{"mcp__fs__write_file", "mcp__db__write"}, []string{"mcp__fs__read_file"}},
		{"^Bash$", []string{"Bash"}, []string{"BashOutput"}},
		{"mcp__github__create_issue", []string{"mcp__github__create_issue"}, []string{"mcp__github__create_issue_comment"}},
	} {
		m, err := compile(tc.matcher)
		if err != nil {
			t.Fatalf("compile(%q): %v", tc.matcher, err)
		}
		for _, s := range tc.match {
			if !m(s) {
				t.Errorf("matcher %q does not match %q", tc.matcher, s)
			}
		}
		for _, s := range tc.miss {
			if m(s) {
				t.Errorf("matcher %q matches %q", tc.matcher, s)
			}
		}
	}
}

// A tool hook matches hermes's name or Claude Code's; SessionStart's
// source by either name; the events without matchers run every hook.
func TestMatching(t *testing.T) {
	s := mustNew(t, profiles.Hooks{
		PreToolUse: {
			{Matcher: "Bash", Command: "a"},
			{Matcher: "terminal", Command: "b"},
			{Matcher: "Write|Edit", Command: "c"},
			{Matcher: "Bash", Command: "a"}, // the same command runs once
		},
		SessionStart: {{Matcher: "startup", Command: "d"}, {Matcher: "resume", Command: "e"}},
		Stop:         {{Matcher: "Whatever", Command: "f"}},
	})
	got := func(in Input) []string {
		var out []string
		for _, h := range s.matching(&in) {
			out = append(out, h.Command)
		}
		return out
	}
	if g := got(ToolInput(Input{}, PreToolUse, "terminal", "c1", nil)); !slices.Equal(g, []string{"a", "b"}) {
		t.Errorf("terminal: %v, want [a b]", g)
	}
	if g := got(ToolInput(Input{}, PreToolUse, "write_file", "c1", nil)); !slices.Equal(g, []string{"c"}) {
		t.Errorf("write_file: %v, want [c]", g)
	}
	if g := got(Input{HookEventName: SessionStart, Source: "new"}); !slices.Equal(g, []string{"d"}) {
		t.Errorf("SessionStart new: %v, want [d]", g)
	}
	if g := got(Input{HookEventName: SessionStart, Source: "fork"}); g != nil {
		t.Errorf("SessionStart fork: %v, want none", g)
	}
	if g := got(Input{HookEventName: Stop}); !slices.Equal(g, []string{"f"}) {
		t.Errorf("Stop: %v, want [f]", g)
	}
	if g := got(Input{HookEventName: PostToolUse}); g != nil {
		t.Errorf("PostToolUse with none configured: %v", g)
	}
}

func mustNew(t *testing.T, cfg profiles.Hooks) *Set {
	t.Helper()
	s, err := New("hooks", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg  profiles.Hooks
		want string
	}{
		{profiles.Hooks{"PreToolUsed": {{Command: "x"}}}, "hooks.PreToolUsed: unknown event"},
		{profiles.Hooks{PreToolUse: {{Matcher: "Bash(", Command: "x"}}}, "hooks.PreToolUse[0].matcher: error parsing regexp"},
		{profiles.Hooks{Stop: {{}}}, "hooks.Stop[0].command: is empty"},
		{profiles.Hooks{Stop: {{Command: "x", Timeout: -1}}}, "hooks.Stop[0].timeout: must be a positive number of seconds"},
		{profiles.Hooks{Stop: {{Hooks: []profiles.HookCommand{{Type: "prompt", Command: "x"}}}}}, `hooks.Stop[0].hooks[0].type: "prompt" is not a kind hermes runs`},
		{profiles.Hooks{Stop: {{Command: "x", Hooks: []profiles.HookCommand{{Command: "y"}}}}}, "hooks.Stop[0]: has both command and hooks"},
	} {
		_, err := New("hooks", tc.cfg)
		if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%v) = %v, want ErrInvalid with %q", tc.cfg, err, tc.want)
		}
	}
}

// Claude Code's form: each command of hooks with its own timeout.
func TestNewClaudeForm(t *testing.T) {
	s := mustNew(t, profiles.Hooks{PreToolUse: {{Matcher: "Bash", Hooks: []profiles.HookCommand{
		{Type: "command", Command: "a", Timeout: 5}, {Command: "b"},
	}}}})
	l := s.List()
	if len(l) != 2 || l[0].Command != "a" || l[0].Timeout != 5*time.Second || l[1].Command != "b" || l[1].Timeout != DefaultTimeout {
		t.Errorf("List: %+v", l)
	}
}

// runOne runs command as the one PreToolUse hook, on a terminal call.
func runOne(t *testing.T, command string, timeout float64) Outcome {
	t.Helper()
	s := mustNew(t, profiles.Hooks{PreToolUse: {{Command: command, Timeout: timeout}}})
	in := ToolInput(Input{SessionID: "s1", Cwd: t.TempDir()}, PreToolUse, "terminal", "call_1", json.RawMessage(`{"command":"ls"}`))
	return s.Run(context.Background(), in)
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name, command string
		want          Outcome
	}{
		{"exit 0, nothing said", "true", Outcome{}},
		{"exit 0 with text: not context at PreToolUse", "echo hello", Outcome{}},
		{"exit 2 blocks with stderr", "echo 'no rm -rf' >&2; exit 2", Outcome{Block: true, Reason: "no rm -rf", By: []string{"echo 'no rm -rf' >&2; exit 2"}}},
		{"exit 1 warns", "echo oops >&2; exit 1", Outcome{Notices: []string{`PreToolUse hook "echo oops >&2; exit 1": exited 1: oops`}}},
		{"JSON deny", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not here"}}'`,
			Outcome{Block: true, Reason: "not here"}},
		{"JSON ask", `echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}'`, Outcome{Ask: true}},
		{"JSON allow with updated input", `echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls -la"}}}'`,
			Outcome{Allow: true, UpdatedInput: json.RawMessage(`{"command":"ls -la"}`)}},
		{"decision approve (older form)", `echo '{"decision":"approve"}'`, Outcome{Allow: true}},
		{"decision block", `echo '{"decision":"block","reason":"why"}'`, Outcome{Block: true, Reason: "why"}},
		{"continue false", `echo '{"continue":false,"stopReason":"enough","systemMessage":"told"}'`, Outcome{Stop: true, StopReason: "enough", Notices: []string{"told"}}},
		{"JSON at exit 2 is not read", `echo '{"decision":"approve"}'; exit 2`, Outcome{Block: true, Reason: "no reason given"}},
		{"input on stdin", `jq -e '.tool_name == "Bash" and .hermes_tool_name == "terminal" and .tool_input.command == "ls" and .tool_use_id == "call_1" and .hook_event_name == "PreToolUse" and .session_id == "s1"' >/dev/null || exit 2`, Outcome{}},
		{"cwd and CLAUDE_PROJECT_DIR", `[ "$(pwd -P)" = "$(cd "$CLAUDE_PROJECT_DIR" && pwd -P)" ] && [ "$(pwd -P)" = "$(jq -r .cwd | xargs realpath)" ] || exit 2`, Outcome{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runOne(t, tc.command, 0)
			got.By = nil
			tc.want.By = nil
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Errorf("got %s\nwant %s", g, w)
			}
		})
	}
}

// Hooks run at once; their answers combine: a block wins, and names
// each hook that gave it.
func TestCombined(t *testing.T) {
	s := mustNew(t, profiles.Hooks{PreToolUse: {
		{Command: `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`},
		{Command: "echo first >&2; exit 2"},
		{Command: "echo second >&2; exit 2"},
	}})
	o := s.Run(context.Background(), ToolInput(Input{Cwd: t.TempDir()}, PreToolUse, "terminal", "c", json.RawMessage(`{}`)))
	if !o.Block || o.Allow || o.Reason != "first\nsecond" || len(o.By) != 3 {
		t.Errorf("%+v", o)
	}
	r := o.Record(PreToolUse)
	if r.Decision != "block" || r.Reason != "first\nsecond" || len(r.Hooks) != 3 {
		t.Errorf("record %+v", r)
	}
	var m sessions.Message
	Attach(&m, r)
	Attach(&m, Record{Event: PostToolUse, Hooks: []string{"x"}, Context: "more"})
	if got := Records(m); len(got) != 2 || got[0].Decision != "block" || got[1].Context != "more" {
		t.Errorf("Records: %+v", got)
	}
}

// UserPromptSubmit and SessionStart take a plain stdout as context.
func TestPlainStdoutIsContext(t *testing.T) {
	s := mustNew(t, profiles.Hooks{UserPromptSubmit: {{Command: "echo 'the time is noon'"}}, SessionStart: {{Command: `echo '{"hookSpecificOutput":{"additionalContext":"be brief"}}'`}}})
	if o := s.Run(context.Background(), Input{HookEventName: UserPromptSubmit, Cwd: t.TempDir()}); !slices.Equal(o.Context, []string{"the time is noon"}) {
		t.Errorf("UserPromptSubmit: %+v", o)
	}
	if o := s.Run(context.Background(), Input{HookEventName: SessionStart, Source: "new", Cwd: t.TempDir()}); !slices.Equal(o.Context, []string{"be brief"}) {
		t.Errorf("SessionStart: %+v", o)
	}
}

// A hook past its timeout is killed with what it started: a child that
// would outlive it is gone once Run returns, and Run says so.
func TestTimeoutKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	o := runOne(t, "sleep 300 & echo $! > "+pidFile+"; wait", 0.3)
	if len(o.Notices) != 1 || !strings.Contains(o.Notices[0], "timed out after 300ms: killed with its process group") || o.Block {
		t.Fatalf("%+v", o)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Killed, it may stay a zombie until its new parent reaps it.
	for deadline := time.Now().Add(10 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("the hook's child %d still runs after the hook timed out", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}

// A hook that writes without end keeps MaxOutput of it, and is not held
// up by a full pipe; a cut JSON answer is not read as one.
func TestOutputBounded(t *testing.T) {
	r := run(context.Background(), Hook{Event: PreToolUse, Command: `head -c 10000000 /dev/zero; printf '{"decision":"block"}'; head -c 10000000 /dev/zero >&2`, Timeout: time.Minute}, t.TempDir(), nil)
	if r.code != 0 || len(r.stdout) != MaxOutput || len(r.stderr) != MaxOutput || !r.cut {
		t.Fatalf("code %d, stdout %d bytes, stderr %d, cut %v", r.code, len(r.stdout), len(r.stderr), r.cut)
	}
	if o := combine(UserPromptSubmit, []result{r}); o.Block {
		t.Errorf("a cut answer was read: %+v", o)
	}
}

// A cancelled context kills the hook, and the outcome blocks nothing.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := mustNew(t, profiles.Hooks{PreToolUse: {{Command: "sleep 300; exit 2"}}})
	o := s.Run(ctx, ToolInput(Input{Cwd: t.TempDir()}, PreToolUse, "terminal", "c", nil))
	if o.Block || len(o.Notices) != 1 || !strings.Contains(o.Notices[0], "context canceled") {
		t.Errorf("%+v", o)
	}
}

// The events that cannot block tell a hook's exit 2 to the user, as any
// other failure, and never report a block.
func TestExitTwoWhereNothingBlocks(t *testing.T) {
	for _, event := range []string{SessionStart, SessionEnd, PreCompact, PostCompact} {
		s := mustNew(t, profiles.Hooks{event: {{Command: "echo nope >&2; exit 2"}, {Command: `echo '{"decision":"block","reason":"no"}'`}}})
		o := s.Run(context.Background(), Input{HookEventName: event, Cwd: t.TempDir()})
		if o.Block || len(o.Notices) != 1 || o.Notices[0] != event+` hook "echo nope >&2; exit 2": exited 2: nope` {
			t.Errorf("%s: %+v", event, o)
		}
	}
}
