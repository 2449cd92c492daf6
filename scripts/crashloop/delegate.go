package main

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The delegation phase: on a profile of its own (delegate), a chat turn
// whose model delegates three tasks, each child calling terminal once
// (its command appends the child's token to a file, so that a command
// run twice shows) and then answering, is killed with SIGKILL 0–600 ms
// after it starts, at any point of the delegation; then the same session
// gets one more turn, not killed. That turn must succeed and carry the
// delegation on: the delegate call has exactly one result, holding the
// three children's answers in order; every child's prompt is stored once
// and every call of its has exactly one result; no child's command ran
// twice; every claim says done.

type delegateCounts struct {
	kills, resumed, turns int
}

// delegateScript is the model of the phase. RANLOG is replaced by the
// file the children's commands append to.
const delegateScript = `in=$(cat)
last=${in##*
}
case "$in" in
*'"role":"user","content":"child '*)
  tok=${in#*\"role\":\"user\",\"content\":\"child }
  tok=${tok%%\"*}
  case "$last" in
  *'"role":"tool"'*) printf '{"role":"assistant","content":"answer %s"}\n' "$tok" ;;
  *) printf '{"role":"assistant","content":null,"tool_calls":[{"id":"c_%s","type":"function","function":{"name":"terminal","arguments":"{\\"command\\":\\"echo %s >> RANLOG; sleep 0.05\\"}"}}]}\n' "$tok" "$tok" ;;
  esac ;;
*)
  case "$last" in
  *'"role":"user","content":"delegate '*)
    tok=${last#*\"role\":\"user\",\"content\":\"delegate }
    tok=${tok%%\"*}
    printf '{"role":"assistant","content":null,"tool_calls":[{"id":"d_%s","type":"function","function":{"name":"delegate","arguments":"{\\"tasks\\":[{\\"prompt\\":\\"child %s-1\\"},{\\"prompt\\":\\"child %s-2\\"},{\\"prompt\\":\\"child %s-3\\"}]}"}}]}\n' "$tok" "$tok" "$tok" "$tok" ;;
  *) echo '{"role":"assistant","content":"done"}' ;;
  esac ;;
esac
`

func (h *harness) delegateArgs(args ...string) []string {
	return append([]string{"-p", "delegate"}, args...)
}

func (h *harness) delegatePhaseRun(kills int) {
	ranLog := filepath.Join(h.o.home, "delegate-ran.log")
	script := filepath.Join(h.o.home, "delegate.sh")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(delegateScript, "RANLOG", ranLog)), 0o600); err != nil {
		h.problemf("delegate: %v", err)
		return
	}
	chat := func(id, prompt string) []string {
		return h.delegateArgs("chat", "--resume", id, "--yes", "--no-instructions", "--provider", "exec", "--exec-command", "sh "+script, "-q", prompt)
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	c := &h.delegate
	for i := 0; c.kills < kills; i++ {
		id := fmt.Sprintf("dg-%d", i)
		tok := h.token("d")
		if r := h.hermes("sessions new", false, "", nil, h.delegateArgs("sessions", "new", "--id", id)...); !r.ok() {
			h.problemf("delegate: sessions new --id %s: exit %d: %s", id, r.code, r.stderr)
			return
		}
		cmd := exec.Command(h.o.bin, append([]string{"--home", h.o.home}, chat(id, "delegate "+tok)...)...)
		cmd.Stdin = strings.NewReader("")
		if err := cmd.Start(); err != nil {
			h.problemf("delegate: %v", err)
			return
		}
		time.Sleep(time.Duration(rng.Intn(600)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			c.kills++
		}
		sdir := filepath.Join(h.o.home, "profiles", "delegate", "sessions")
		before, _ := os.ReadFile(filepath.Join(sdir, id+".jsonl"))
		if bytes.Contains(before, []byte(`"id":"d_`)) && !bytes.Contains(before, []byte(`"tool_call_id":"d_`)) {
			c.resumed++
		}
		r := h.hermes("delegate settle", false, "", nil, chat(id, "settle")...)
		if !r.ok() {
			h.problemf("delegate: the turn after the kill in %s: exit %d: %s", id, r.code, r.stderr)
			continue
		}
		c.turns++
		h.delegateCheck(sdir, id, tok)
	}
	ran, err := os.ReadFile(ranLog)
	if err != nil && !os.IsNotExist(err) {
		h.problemf("delegate: %v", err)
	}
	for _, t := range checkRanTwice(ran) {
		h.problemf("delegate: the command of child %s ran twice (invariant 11)", t)
	}
}

// delegateCheck checks session id and its children once its last turn
// succeeded.
func (h *harness) delegateCheck(sdir, id, tok string) {
	data, err := os.ReadFile(filepath.Join(sdir, id+".jsonl"))
	if err != nil {
		h.problemf("delegate: %s: %v", id, err)
		return
	}
	h.delegateCalls(id, data)
	if !bytes.Contains(data, []byte(`"id":"d_`+tok+`"`)) {
		return // killed before the model asked for the delegation
	}
	var result string
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"tool_call_id":"d_`+tok+`"`) {
			result, n = line, n+1
		}
	}
	if n != 1 {
		h.problemf("delegate: %s: the delegate call has %d results", id, n)
		return
	}
	at := 0
	for k := 1; k <= 3; k++ {
		want := fmt.Sprintf("answer %s-%d", tok, k)
		i := strings.Index(result[at:], want)
		if i < 0 {
			h.problemf("delegate: %s: the delegate call's result lacks %q in its place: %s", id, want, result)
			return
		}
		at += i + len(want)
	}
	children, _ := filepath.Glob(filepath.Join(sdir, id+"-task-*.jsonl"))
	if len(children) != 3 {
		h.problemf("delegate: %s: %d child sessions, want 3", id, len(children))
	}
	for _, path := range children {
		cdata, err := os.ReadFile(path)
		if err != nil {
			h.problemf("delegate: %v", err)
			continue
		}
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		if n := bytes.Count(cdata, []byte(`"role":"user"`)); n != 1 {
			h.problemf("delegate: child %s holds its prompt %d times", name, n)
		}
		h.delegateCalls("child "+name, cdata)
		claim, err := os.ReadFile(filepath.Join(h.o.home, "profiles", "delegate", "subagents", name+".json"))
		if err != nil || !bytes.Contains(claim, []byte(`"state": "done"`)) {
			h.problemf("delegate: child %s: its claim is not done: %s %v", name, claim, err)
		}
	}
}

// delegateCalls checks the calls of a transcript after its last turn:
// each answered exactly once.
func (h *harness) delegateCalls(name string, data []byte) {
	got, probs := checkToolCalls(data)
	for _, p := range probs {
		h.problemf("delegate: %s: %s", name, p)
	}
	if got.unanswered > 0 {
		h.problemf("delegate: %s: %d calls without a result after its turn", name, got.unanswered)
	}
}
