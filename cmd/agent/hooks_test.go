package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/profiles"
)

func hookSet(t *testing.T, cfg profiles.Hooks) *hooks.Set {
	t.Helper()
	s, err := hooks.New("hooks", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hookRecords are the hook records of the tool message answering id.
func hookRecords(t *testing.T, msgs []sessions.Message, id string) []hooks.Record {
	t.Helper()
	for _, m := range msgs {
		if m.Role == "tool" && m.ToolCallID == id {
			return hooks.Records(m)
		}
	}
	t.Fatalf("no result for %s", id)
	return nil
}

// A PreToolUse hook that exits 2 answers the call with its stderr, the
// tool never runs, and the block is on record with the hook's command.
func TestPreToolUseBlocks(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	echo := &fakeTool{name: "terminal"}
	p := &scripted{t: t, replies: []sessions.Message{calls("terminal", `{"command":"rm -rf /"}`), text("done")}}
	guard := `jq -e '.tool_input.command | test("rm -rf")' >/dev/null && { echo "rm -rf is not allowed" >&2; exit 2; }; exit 0`
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{echo}, Approver: Fixed(true),
		Hooks: hookSet(t, profiles.Hooks{hooks.PreToolUse: {{Matcher: "Bash", Command: guard}}})}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{Cwd: t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	if len(echo.ran) != 0 {
		t.Fatalf("the tool ran: %v", echo.ran)
	}
	msgs := stored(t, st, id)
	if got := resultOf(t, msgs, "call_terminal_0"); got != "blocked by hook: rm -rf is not allowed" {
		t.Errorf("result %q", got)
	}
	recs := hookRecords(t, msgs, "call_terminal_0")
	if len(recs) != 1 || recs[0].Event != hooks.PreToolUse || recs[0].Decision != "block" || recs[0].Hooks[0] != guard {
		t.Errorf("records %+v", recs)
	}
}

// updatedInput changes the call that runs (and asks approval of what
// runs); the record keeps the input the hook gave.
func TestPreToolUseUpdatedInput(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	echo := &fakeTool{name: "terminal", approval: true}
	p := &scripted{t: t, replies: []sessions.Message{calls("terminal", `{"command":"ls"}`), text("done")}}
	var asked []string
	approver := approverFunc(func(c string) bool { asked = append(asked, c); return true })
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{echo}, Approver: approver,
		Hooks: hookSet(t, profiles.Hooks{hooks.PreToolUse: {{Command: `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"ls -la"}}}'`}}})}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{Cwd: t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	if len(echo.ran) != 1 || echo.ran[0] != `{"command":"ls -la"}` || len(asked) != 1 || asked[0] != `{"command":"ls -la"}` {
		t.Fatalf("ran %v, asked %v", echo.ran, asked)
	}
	recs := hookRecords(t, stored(t, st, id), "call_terminal_0")
	if len(recs) != 1 || string(recs[0].UpdatedInput) != `{"command":"ls -la"}` {
		t.Errorf("records %+v", recs)
	}
}

type approverFunc func(args string) bool

func (f approverFunc) Approve(_ context.Context, c provider.ToolCall) (bool, error) {
	return f(c.Function.Arguments), nil
}

// A PreToolUse hook's allow answers for a person, never for a policy:
// with tools.approval: deny (Deny), the call it allows is not run.
func TestPreToolUseAllowNeverOverridesDeny(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	tool := &fakeTool{name: "write_file", approval: true}
	e := &Engine{Sessions: st, Tools: []Tool{tool}, Approver: Deny{},
		Provider: &scripted{t: t, replies: []sessions.Message{calls("write_file", `{}`), text("done")}},
		Hooks:    hookSet(t, profiles.Hooks{hooks.PreToolUse: {{Command: `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`}}})}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{Cwd: t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	if len(tool.ran) != 0 || resultOf(t, stored(t, st, id), "call_write_file_0") != notApprovedResult {
		t.Errorf("ran %d times, result %q; want it refused", len(tool.ran), resultOf(t, stored(t, st, id), "call_write_file_0"))
	}
}

// permissionDecision allow runs a call that needs approval without
// asking; ask asks about one that does not need it; deny blocks.
func TestPreToolUsePermission(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		decision string
		approval bool
		asked    int
		ran      int
		result   string
	}{
		{"allow", true, 0, 1, `ran {}`},
		{"ask", false, 1, 0, notApprovedResult},
		{"deny", false, 0, 0, "blocked by hook: nope"},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			st := newStore(t)
			id := newSession(t, st)
			tool := &fakeTool{name: "write_file", approval: tc.approval}
			asked := 0
			e := &Engine{Sessions: st, Tools: []Tool{tool},
				Provider: &scripted{t: t, replies: []sessions.Message{calls("write_file", `{}`), text("done")}},
				Approver: approverFunc(func(string) bool { asked++; return false }),
				Hooks:    hookSet(t, profiles.Hooks{hooks.PreToolUse: {{Matcher: "Write", Command: `echo '{"hookSpecificOutput":{"permissionDecision":"` + tc.decision + `","permissionDecisionReason":"nope"}}'`}}})}
			if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{Cwd: t.TempDir()}}); err != nil {
				t.Fatal(err)
			}
			msgs := stored(t, st, id)
			if asked != tc.asked || len(tool.ran) != tc.ran || resultOf(t, msgs, "call_write_file_0") != tc.result {
				t.Errorf("asked %d, ran %d, result %q", asked, len(tool.ran), resultOf(t, msgs, "call_write_file_0"))
			}
			if recs := hookRecords(t, msgs, "call_write_file_0"); len(recs) != 1 || recs[0].Decision != map[string]string{"deny": "block"}[tc.decision]+map[string]string{"allow": "allow", "ask": "ask"}[tc.decision] {
				t.Errorf("records %+v", recs)
			}
		})
	}
}

// PostToolUse sees the result; its block reason and context reach the
// model with the result, on record. PostToolUseFailure sees the error.
func TestPostToolUse(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	dir := t.TempDir()
	ok := &fakeTool{name: "terminal"}
	bad := &fakeTool{name: "read_file", run: func(context.Context, json.RawMessage) (string, error) { return "", errors.New("no such file") }}
	p := &scripted{t: t, replies: []sessions.Message{calls("terminal", `{"command":"ls"}`, "read_file", `{"path":"x"}`), text("done")}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{ok, bad}, Approver: Fixed(true),
		Hooks: hookSet(t, profiles.Hooks{
			hooks.PostToolUse:        {{Matcher: "Bash", Command: `cat > post.json; echo '{"decision":"block","reason":"the listing is stale","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"run it again"}}'`}},
			hooks.PostToolUseFailure: {{Command: `cat > failure.json`}},
		})}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{Cwd: dir}}); err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, st, id)
	if got := resultOf(t, msgs, "call_terminal_0"); got != "ran {\"command\":\"ls\"}\n\nPostToolUse hook: the listing is stale\nrun it again" {
		t.Errorf("result %q", got)
	}
	if recs := hookRecords(t, msgs, "call_terminal_0"); len(recs) != 1 || recs[0].Event != hooks.PostToolUse || recs[0].Context != "run it again" {
		t.Errorf("records %+v", recs)
	}
	var post, failure map[string]any
	readJSON(t, filepath.Join(dir, "post.json"), &post)
	readJSON(t, filepath.Join(dir, "failure.json"), &failure)
	if post["tool_response"] != `ran {"command":"ls"}` || post["tool_name"] != "Bash" || post["hook_event_name"] != "PostToolUse" {
		t.Errorf("PostToolUse input %v", post)
	}
	if failure["error"] != "no such file" || failure["tool_name"] != "Read" || failure["is_interrupt"] != false {
		t.Errorf("PostToolUseFailure input %v", failure)
	}
	if got := resultOf(t, msgs, "call_read_file_1"); got != "error: no such file" {
		t.Errorf("failed call's result %q", got)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v: %s", path, err, b)
	}
}

// A hook's "continue": false stops the turn: the call is not run, a note
// says why, and the turn has ended (a resume carries nothing on).
func TestHookStopsTheTurn(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	tool := &fakeTool{name: "terminal"}
	p := &scripted{t: t, replies: []sessions.Message{calls("terminal", `{}`, "terminal", `{"n":2}`), text("never")}}
	var warned []string
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{tool}, Approver: Fixed(true), Warn: func(s string) { warned = append(warned, s) },
		Hooks: hookSet(t, profiles.Hooks{hooks.PreToolUse: {{Command: `echo '{"continue":false,"stopReason":"out of budget"}'`}}})}
	res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{Cwd: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, st, id)
	if len(tool.ran) != 0 || res.Steps != 1 {
		t.Fatalf("ran %v, steps %d", tool.ran, res.Steps)
	}
	if got := resultOf(t, msgs, "call_terminal_0"); got != "not run: a hook stopped the turn: out of budget" {
		t.Errorf("result %q", got)
	}
	if got := resultOf(t, msgs, "call_terminal_1"); got != "not run: a hook stopped the turn: out of budget" {
		t.Errorf("second result %q", got)
	}
	if last := msgs[len(msgs)-1]; !IsNote(last) || !strings.HasPrefix(last.Text(), hookStopNote) {
		t.Errorf("last message %s", dumpMsgs(msgs[len(msgs)-1:]))
	}
	if e.CutAt(msgs) != len(msgs) {
		t.Errorf("the stopped turn reads as cut short")
	}
	if len(warned) != 1 || warned[0] != "a PreToolUse hook stopped the turn: out of budget" {
		t.Errorf("warned %q", warned)
	}
}

// A kill -9 while a PreToolUse hook runs: the call's tool never runs,
// then or on resume; the next turn answers the call as interrupted,
// before its provider call, and does not ask the hook or run it again.
func TestKilledDuringPreToolUse(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("HERMES_TEST_HOOK_DIR"); dir != "" {
		st := sessions.NewStore(filepath.Join(dir, "profile"), "default", time.Second, func(string) {})
		tool := &fakeTool{name: "terminal", run: func(context.Context, json.RawMessage) (string, error) {
			os.WriteFile(filepath.Join(dir, "ran"), nil, 0o600)
			return "ran", nil
		}}
		p := &scripted{t: t, replies: []sessions.Message{calls("terminal", `{"command":"ls"}`), text("done")}}
		e := &Engine{Sessions: st, Provider: p, Tools: []Tool{tool}, Approver: Fixed(true),
			Hooks: hookSet(t, profiles.Hooks{hooks.PreToolUse: {{Command: "echo $$ > hook.pid; sleep 300"}}})}
		e.Run(context.Background(), Turn{SessionID: os.Getenv("HERMES_TEST_HOOK_SESSION"), Input: user("go"), Env: &Env{Cwd: dir}})
		return
	}
	dir := t.TempDir()
	st := sessions.NewStore(filepath.Join(dir, "profile"), "default", time.Second, func(string) {})
	id := newSession(t, st)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledDuringPreToolUse$")
	cmd.Env = append(os.Environ(), "HERMES_TEST_HOOK_DIR="+dir, "HERMES_TEST_HOOK_SESSION="+id)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "hook.pid")
	var hookPid int
	for {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			hookPid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		if cmd.ProcessState != nil {
			t.Fatal("the turn ended before its hook ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	syscall.Kill(-hookPid, syscall.SIGKILL) // a real crash leaves it to finish; the test does not wait

	tool := &fakeTool{name: "terminal"}
	asked := &fakeTool{name: "unused"}
	p := &scripted{t: t, replies: []sessions.Message{text("ok")}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{tool, asked}, Approver: Fixed(true),
		Hooks: hookSet(t, profiles.Hooks{hooks.PreToolUse: {{Command: "touch asked"}}})}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Env: &Env{Cwd: dir}}); err != nil {
		t.Fatal(err)
	}
	if len(tool.ran) != 0 {
		t.Fatalf("the call ran on resume: %v", tool.ran)
	}
	for _, f := range []string{"ran", "asked"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s exists: the call went on after the crash", f)
		}
	}
	if got := resultOf(t, stored(t, st, id), "call_terminal_0"); got != interruptedResult {
		t.Errorf("result %q", got)
	}
}

// A Stop hook that blocks keeps the turn going once with its reason as a
// note, on record; the second Stop sees stop_hook_active and lets it end.
func TestStopHookKeepsGoing(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	dir := t.TempDir()
	p := &scripted{t: t, replies: []sessions.Message{text("first"), text("second")}}
	stop := `in=$(cat); echo "$in" >> stops.jsonl; [ "$(echo "$in" | jq .stop_hook_active)" = true ] && exit 0; echo 'run the tests first' >&2; exit 2`
	e := &Engine{Sessions: st, Provider: p, Hooks: hookSet(t, profiles.Hooks{hooks.Stop: {{Command: stop}}})}
	res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: &Env{Cwd: dir}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, st, id)
	if res.Text() != "second" || res.Steps != 2 || len(msgs) != 4 {
		t.Fatalf("text %q, steps %d:\n%s", res.Text(), res.Steps, dumpMsgs(msgs))
	}
	n := msgs[2]
	if !IsNote(n) || n.Text() != stopHookNote+"run the tests first" || len(hooks.Records(n)) != 1 || hooks.Records(n)[0].Event != hooks.Stop {
		t.Errorf("the Stop hook's note: %s", dumpMsgs(msgs[2:3]))
	}
	if last := p.seen[1]; last[len(last)-1].Text() != stopHookNote+"run the tests first" {
		t.Errorf("the model did not read the reason: %s", dumpMsgs(last))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "stops.jsonl"))
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || !strings.Contains(lines[0], `"stop_hook_active":false,"last_assistant_message":"first"`) || !strings.Contains(lines[1], `"stop_hook_active":true`) {
		t.Errorf("Stop inputs:\n%s", b)
	}
}

// UserPromptSubmit: exit 2 refuses the prompt (ErrRefused, nothing
// returned to store); stdout is context, in a note before the prompt.
func TestSubmitPrompt(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	sess := sessions.Session{ID: "s1", Cwd: t.TempDir()}
	e := &Engine{Sessions: st, Hooks: hookSet(t, profiles.Hooks{hooks.UserPromptSubmit: {{Command: `jq -e '.prompt | test("secret")' >/dev/null && { echo 'no secrets' >&2; exit 2; }; echo 'it is noon'`}}})}
	input := append([]sessions.Message{{Role: "system", Content: sessions.TextContent("be brief")}}, user("what time is it")...)
	out, err := e.SubmitPrompt(context.Background(), sess, input)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || out[0].Role != "system" || !IsNote(out[1]) || out[1].Text() != "it is noon" || out[2].Text() != "what time is it" {
		t.Fatalf("input: %s", dumpMsgs(out))
	}
	if r := hooks.Records(out[1]); len(r) != 1 || r[0].Event != hooks.UserPromptSubmit || r[0].Context != "it is noon" {
		t.Errorf("record %+v", r)
	}
	out, err = e.SubmitPrompt(context.Background(), sess, user("my secret is 42"))
	var refused *PromptRefusedError
	if !errors.As(err, &refused) || !errors.Is(err, fsstore.ErrRefused) || refused.Reason != "no secrets" || out != nil {
		t.Errorf("%v, %v", out, err)
	}
}

// A compression runs PreCompact, PostCompact, the parent's SessionEnd and
// the child's SessionStart, in that order; the child ends with the note
// holding the SessionStart hooks' context.
func TestCompressHooks(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := compressible(t, st)
	dir := t.TempDir()
	log := `jq -c '[.hook_event_name, .session_id, (.trigger // .reason // .source // "")]' >> events.jsonl`
	e := &Engine{Sessions: st, Provider: &scripted{t: t, replies: []sessions.Message{text("the gist")}},
		Hooks: hookSet(t, profiles.Hooks{
			hooks.PreCompact:   {{Command: log}},
			hooks.PostCompact:  {{Command: log}},
			hooks.SessionEnd:   {{Command: log}},
			hooks.SessionStart: {{Command: log + "; echo 'read NOTES.md first'"}},
		})}
	if _, err := st.SetCwd(id, dir); err != nil {
		t.Fatal(err)
	}
	c, err := e.CompressBy(context.Background(), id, 1, TriggerAuto)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	want := `["PreCompact","` + id + `","auto"]
["PostCompact","` + id + `","auto"]
["SessionEnd","` + id + `","compression"]
["SessionStart","` + c.Child.ID + `","compress"]
`
	if string(b) != want {
		t.Errorf("events:\n%s\nwant:\n%s", b, want)
	}
	child := stored(t, st, c.Child.ID)
	if last := child[len(child)-1]; !IsNote(last) || last.Text() != "read NOTES.md first" || hooks.Records(last)[0].Event != hooks.SessionStart {
		t.Errorf("the child ends with:\n%s", dumpMsgs(child[len(child)-1:]))
	}
}

// SubagentStop gives a child's hooks the parent's session and the
// child's id and transcript; its outcome is the caller's to act on.
func TestSubagentStop(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	dir := t.TempDir()
	parent := sessions.Session{ID: "parent1", Cwd: dir}
	child := sessions.Session{ID: "child1"}
	e := &Engine{Sessions: st, Hooks: hookSet(t, profiles.Hooks{hooks.SubagentStop: {{Command: `cat > in.json; echo 'cite your sources' >&2; exit 2`}}})}
	o := e.SubagentStop(context.Background(), parent, child, "", "the answer", false)
	if !o.Block || o.Reason != "cite your sources" {
		t.Errorf("%+v", o)
	}
	var in map[string]any
	readJSON(t, filepath.Join(dir, "in.json"), &in)
	if in["session_id"] != "parent1" || in["agent_id"] != "child1" || in["agent_transcript_path"] != filepath.Join(st.Dir, "child1.jsonl") ||
		in["stop_hook_active"] != false || in["last_assistant_message"] != "the answer" || in["hook_event_name"] != "SubagentStop" {
		t.Errorf("input %v", in)
	}
}
