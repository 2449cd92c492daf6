package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/subagents"
)

// killedDelegation is the turn the killed process runs: a call of three
// tasks; "slow b" answers once a and c have finished (their claims say
// so), and a's second step is a call of a tool, so that a kill can fall
// between a child's steps.
func killedDelegation(t *testing.T, dir, id string, block func(string)) {
	st := sessions.NewStore(filepath.Join(dir, "profile"), "default", time.Second, func(string) {})
	p := newByPrompt(t, map[string][]sessions.Message{
		"go":     {delegateCall(`{"prompt":"a"}`, `{"prompt":"slow b"}`, `{"prompt":"c"}`), text("all done")},
		"a":      {calls("other", "{}"), text("answer a")},
		"slow b": {text("answer b")},
		"c":      {text("answer c")},
	})
	var mu sync.Mutex
	finished := 0
	both := make(chan struct{})
	delegateStep = func(step, prompt string) {
		block(step + " " + prompt)
		if step == "finished" && prompt != "slow b" {
			mu.Lock()
			if finished++; finished == 2 {
				close(both)
			}
			mu.Unlock()
		}
	}
	p.before = func(ctx context.Context, prompt string) error {
		if prompt == "slow b" {
			<-both
			block("b asks")
		}
		return nil
	}
	other := &fakeTool{name: "other", run: func(context.Context, json.RawMessage) (string, error) {
		block("other runs")
		return "other done", nil
	}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{other, delegateTool{}},
		Progress: func(p Progress) {
			if p.Call.Function.Name != DelegateToolName {
				return
			}
			if p.Done {
				block("delegate ran")
			} else {
				block("delegate starts")
			}
		}}
	env := &Env{Subagents: subagents.Open(filepath.Join(dir, "profile"))}
	e.Run(context.Background(), Turn{SessionID: id, Input: user("go"), Env: env})
	block("end")
}

// A kill -9 of the parent at each point of a delegation (before it
// starts; once a child is claimed, created, has answered, is finished;
// between a child's steps; while the slow child asks its model, the two
// others finished; once the call has its three answers), then a turn on
// the parent with no input: the delegate call is carried on, each
// finished child's answer is read and its model not asked again, an
// unfinished child goes on in its own session (its prompt stored once),
// the call has one result with the three answers in order, and the
// parent's turn ends with its reply.
func TestKilledDelegation(t *testing.T) {
	if step := os.Getenv("HERMES_TEST_DG_KILL"); step != "" {
		block := func(s string) {
			if s == step {
				fmt.Println("at " + s)
				select {}
			}
		}
		killedDelegation(t, os.Getenv("HERMES_TEST_DG_DIR"), os.Getenv("HERMES_TEST_DG_SESSION"), block)
		return
	}
	for _, step := range []string{"delegate starts", "claimed a", "created c", "other runs", "answered a", "finished c", "b asks", "delegate ran", "end"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			st := sessions.NewStore(filepath.Join(dir, "profile"), "default", time.Second, func(string) {})
			id := newSession(t, st)
			killAt(t, "TestKilledDelegation", step, "HERMES_TEST_DG_KILL="+step, "HERMES_TEST_DG_DIR="+dir, "HERMES_TEST_DG_SESSION="+id)

			prompts := []string{"a", "slow b", "c"}
			before := map[string][]sessions.Message{}
			done := map[string]bool{}
			for i, prompt := range prompts {
				cid := childID(id, "call_delegate_0", i)
				if msgs, err := st.Messages(cid); err == nil {
					before[prompt] = msgs
					done[prompt] = len(msgs) > 0 && msgs[len(msgs)-1].Role == "assistant" && len(ToolCalls(msgs[len(msgs)-1])) == 0
				}
			}
			p := newByPrompt(t, map[string][]sessions.Message{
				"go":     {text("all done")},
				"a":      {calls("other", "{}"), text("answer a")},
				"slow b": {text("answer b")},
				"c":      {text("answer c")},
			})
			if m := before["a"]; len(m) > 0 && len(ToolCalls(m[len(m)-1])) > 0 {
				p.replies["a"] = p.replies["a"][1:] // a's call is stored: its model answers next
			}
			if step == "end" {
				p.replies["go"] = nil
			}
			e := &Engine{Sessions: st, Provider: p, Tools: []Tool{&fakeTool{name: "other"}, delegateTool{}}}
			sa := subagents.Open(filepath.Join(dir, "profile"))
			res, err := e.Run(context.Background(), Turn{SessionID: id, Env: &Env{Subagents: sa}})
			if step == "end" {
				// The turn had ended: a turn without input asks the
				// model again, and nothing of the delegation runs.
				if p.calls["a"]+p.calls["slow b"]+p.calls["c"] != 0 {
					t.Fatalf("children asked again: %v", p.calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Text() != "all done" {
				t.Fatalf("the parent's turn did not end: %q", res.Text())
			}
			msgs := stored(t, st, id)
			var want []string
			for i, a := range []string{"a", "b", "c"} {
				want = append(want, fmt.Sprintf("task %d (session %s):\nanswer %s", i+1, childID(id, "call_delegate_0", i), a))
			}
			if got := resultOf(t, msgs, "call_delegate_0"); got != strings.Join(want, "\n\n") {
				t.Fatalf("result:\n%s\nwant:\n%s", got, strings.Join(want, "\n\n"))
			}
			for i, prompt := range prompts {
				cid := childID(id, "call_delegate_0", i)
				cm := stored(t, st, cid)
				users := 0
				for _, m := range cm {
					if m.Role == "user" {
						users++
					}
				}
				if users != 1 || cm[0].Text() != prompt {
					t.Fatalf("child %s started over or was doubled:\n%s", prompt, dumpMsgs(cm))
				}
				if done[prompt] {
					if p.calls[prompt] != 0 || len(cm) != len(before[prompt]) {
						t.Fatalf("child %s had finished, and ran again (%d calls):\n%s", prompt, p.calls[prompt], dumpMsgs(cm))
					}
				} else if n := len(before[prompt]); n > 0 && !sameMessages(cm[:n], before[prompt]) {
					t.Fatalf("child %s did not go on from its session:\n%s", prompt, dumpMsgs(cm))
				}
				c, err := sa.Get(cid)
				if err != nil || c.State != subagents.Done {
					t.Fatalf("claim of %s: %+v, %v", prompt, c, err)
				}
				sess, _ := st.Get(cid)
				if sess.State != sessions.StateEnded || sess.EndReason != EndSubagentDone {
					t.Fatalf("child %s is %s (%s) after it answered", prompt, sess.State, sess.EndReason)
				}
			}
		})
	}
}

func sameMessages(a, b []sessions.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, _ := a[i].MarshalJSON()
		y, _ := b[i].MarshalJSON()
		if string(x) != string(y) {
			return false
		}
	}
	return true
}
