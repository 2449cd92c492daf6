package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Tool-running turns: `hermes chat --resume agent-N --yes` with the exec
// provider and agent.sh as the model, killed like every other child. The
// model calls terminal one to three times (commands of 0.1 to 0.3 s, so
// that most kills of a turn land while a call runs), sometimes for a
// second round, then answers "done <token>"; each of its replies says
// what it cost (a usage object, 10 tokens in and 1 out), and every call
// stored must be counted once by hermes usage. agent.sh forks nothing but
// cat, so that its own time is short. Each command appends its call id to ran.log
// first, so that a call run twice shows. Turns on one agent session are
// serialized, as a person's would be (the engine does not serialize two
// chats on one session).

const agentSessions = 3

// agentScript is the model: it reads the transcript on stdin and prints
// the reply. RANLOG is replaced by ran.log's path.
const agentScript = `in=$(cat)
last=${in##*
}
seq=${last#*\"seq\":}
seq=${seq%%,*}
calls() {
  n=$(( $$ % 3 + 1 ))
  out='{"role":"assistant","content":null,"tool_calls":['
  i=0
  while [ $i -lt $n ]; do
    id="c_${HERMES_SESSION_ID}_${seq}_$i"
    [ $i -gt 0 ] && out="$out,"
    out="$out{\"id\":\"$id\",\"type\":\"function\",\"function\":{\"name\":\"terminal\",\"arguments\":\"{\\\"command\\\":\\\"echo $id >> RANLOG; sleep 0.$(( ($$ + i) % 3 + 1 )); echo ran $id\\\"}\"}}"
    i=$((i+1))
  done
  printf '%s],"usage":{"input":10,"output":1}}\n' "$out"
}
case "$last" in
*'"role":"user"'*'"content":"repair'*)
  echo '{"role":"assistant","content":"repaired","usage":{"input":10,"output":1}}' ;;
*'"role":"user"'*)
  calls ;;
*)
  if [ $(( $$ % 4 )) -eq 0 ]; then calls; exit; fi
  tok=${in##*\"role\":\"user\",\"content\":\"}
  tok=${tok%%\"*}
  printf '{"role":"assistant","content":"done %s","usage":{"input":10,"output":1}}\n' "$tok" ;;
esac
`

// agentState is what the harness knows of the tool-running turns.
type agentState struct {
	script string
	ranLog string
	ids    []string
	mu     map[string]*sync.Mutex // one turn at a time per session
	// under ledger.mu: acknowledged turn token -> session
	acked map[string]string
	// counters, under ledger.mu
	turns, interrupted int
}

func (h *harness) setUpAgent() error {
	a := &h.agent
	a.ranLog = filepath.Join(h.o.home, "ran.log")
	a.script = filepath.Join(h.o.home, "agent.sh")
	if err := os.WriteFile(a.script, []byte(strings.ReplaceAll(agentScript, "RANLOG", a.ranLog)), 0o600); err != nil {
		return err
	}
	a.mu = map[string]*sync.Mutex{}
	a.acked = map[string]string{}
	for i := 1; i <= agentSessions; i++ {
		id := fmt.Sprintf("agent-%d", i)
		if r := h.hermes("sessions new", false, "", nil, "sessions", "new", "--id", id); !r.ok() {
			return fmt.Errorf("sessions new --id %s: exit %d: %s", id, r.code, r.stderr)
		}
		a.ids = append(a.ids, id)
		a.mu[id] = &sync.Mutex{}
	}
	return nil
}

func (h *harness) chatArgs(id, prompt string) []string {
	return []string{"chat", "--resume", id, "--yes", "--provider", "exec", "--exec-command", "sh " + h.agent.script, "-q", prompt}
}

// toolTurnOp runs one tool-running turn, killable.
func (h *harness) toolTurnOp(rng *rand.Rand) {
	id := h.agent.ids[rng.Intn(len(h.agent.ids))]
	tok := h.token("t")
	mu := h.agent.mu[id]
	mu.Lock()
	r := h.hermes("tool turn", true, "", nil, h.chatArgs(id, tok)...)
	mu.Unlock()
	if r.ok() {
		h.ack(func() { h.agent.acked[tok] = id; h.agent.turns++ })
	}
}

// callCheck is what checkToolCalls learned of one transcript.
type callCheck struct {
	calls       int // tool calls
	unanswered  int // calls without a result
	interrupted int // calls answered as interrupted
	texts       map[string]bool
}

// checkToolCalls reads an agent transcript: no call answered twice, no
// result for a call that no earlier assistant message made, and counts the
// calls with no result yet.
func checkToolCalls(data []byte) (callCheck, []string) {
	c := callCheck{texts: map[string]bool{}}
	var probs []string
	results := map[string]int{}
	var order []string
	for n, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			continue // checkTranscript reports it
		}
		var text string
		json.Unmarshal(m.Content, &text)
		switch m.Role {
		case "assistant":
			c.texts[text] = true
			for _, call := range m.ToolCalls {
				if _, dup := results[call.ID]; dup {
					probs = append(probs, fmt.Sprintf("line %d: call %s made twice", n+1, call.ID))
					continue
				}
				results[call.ID] = 0
				order = append(order, call.ID)
				c.calls++
			}
		case "tool":
			got, ok := results[m.ToolCallID]
			switch {
			case !ok:
				probs = append(probs, fmt.Sprintf("line %d: a result for call %q, which no earlier message made", n+1, m.ToolCallID))
			case got > 0:
				probs = append(probs, fmt.Sprintf("line %d: call %s answered twice", n+1, m.ToolCallID))
			}
			results[m.ToolCallID] = got + 1
			if strings.HasPrefix(text, "interrupted:") {
				c.interrupted++
			}
		}
	}
	for _, id := range order {
		if results[id] == 0 {
			c.unanswered++
		}
	}
	return c, probs
}

// checkRanTwice reports the call ids that ran.log holds more than once.
func checkRanTwice(data []byte) []string {
	seen := map[string]int{}
	for _, id := range strings.Fields(string(data)) {
		seen[id]++
	}
	var twice []string
	for id, n := range seen {
		if n > 1 {
			twice = append(twice, id)
		}
	}
	return twice
}

// checkAgent runs at a checkpoint, the workload stopped: each agent
// session's transcript is checked, then a repair turn (not killed) must
// leave every call answered exactly once; every acknowledged turn's reply
// must be there; no call ran twice.
func (h *harness) checkAgent() {
	sdir := filepath.Join(h.profileDir(), "sessions")
	h.led.mu.Lock()
	acked := map[string]string{}
	for tok, id := range h.agent.acked {
		acked[tok] = id
	}
	h.led.mu.Unlock()
	interrupted := 0
	for _, id := range h.agent.ids {
		path := filepath.Join(sdir, id+".jsonl")
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			h.problemf("session %s: %v", id, err)
			continue
		}
		_, probs := checkTranscript(data)
		_, more := checkToolCalls(data)
		for _, p := range append(probs, more...) {
			h.problemf("session %s: transcript: %s", id, p)
		}
		if r := h.hermes("repair turn", false, "", nil, h.chatArgs(id, "repair")...); !r.ok() {
			h.problemf("session %s: the repair turn exited %d: %s", id, r.code, r.stderr)
			continue
		}
		data, err = os.ReadFile(path)
		if err != nil {
			h.problemf("session %s: %v", id, err)
			continue
		}
		c, probs := checkToolCalls(data)
		for _, p := range probs {
			h.problemf("session %s: after the repair turn: %s", id, p)
		}
		if c.unanswered > 0 {
			h.problemf("session %s: %d of %d calls still have no result after a turn (invariant 11)", id, c.unanswered, c.calls)
		}
		interrupted += c.interrupted
		calls, costed := usageOf(data)
		for tok, sid := range acked {
			if sid != id {
				continue
			}
			if !c.texts["done "+tok] {
				h.lostf("session %s: the reply of acknowledged turn %s is not in its transcript", id, tok)
			} else if !costed["done "+tok] {
				h.lostf("session %s: the reply of acknowledged turn %s holds no usage", id, tok)
			}
		}
		h.checkUsage(id, calls)
	}
	h.led.mu.Lock()
	h.agent.interrupted = interrupted
	h.led.mu.Unlock()
	ran, err := os.ReadFile(h.agent.ranLog)
	if err != nil && !os.IsNotExist(err) {
		h.problemf("%s: %v", h.agent.ranLog, err)
	}
	for _, id := range checkRanTwice(ran) {
		h.problemf("call %s ran more than once (nothing is re-run by itself)", id)
	}
}

// usageOf reads an agent transcript's usage: the distinct ids of the
// calls its lines hold, and the texts of the replies that hold one.
func usageOf(data []byte) (map[string]bool, map[string]bool) {
	ids, costed := map[string]bool{}, map[string]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var m struct {
			Content json.RawMessage `json:"content"`
			Usage   *struct {
				ID string `json:"id"`
			} `json:"usage"`
		}
		if json.Unmarshal(line, &m) != nil || m.Usage == nil {
			continue
		}
		ids[m.Usage.ID] = true
		var text string
		json.Unmarshal(m.Content, &text)
		costed[text] = true
	}
	return ids, costed
}

// checkUsage: hermes usage counts each call session id's transcript
// holds once, no more and no fewer.
func (h *harness) checkUsage(id string, calls map[string]bool) {
	r := h.hermes("usage", false, "", nil, "--json", "usage", "session", "--session", id)
	if !r.ok() {
		h.problemf("session %s: hermes usage session exited %d: %s", id, r.code, r.stderr)
		return
	}
	var row struct {
		Calls int `json:"calls"`
	}
	if out := bytes.TrimSpace([]byte(r.stdout)); len(out) > 0 {
		if err := json.Unmarshal(out, &row); err != nil {
			h.problemf("session %s: hermes usage session: %v: %s", id, err, out)
			return
		}
	}
	if row.Calls != len(calls) {
		h.problemf("session %s: hermes usage counts %d calls, its transcript holds %d", id, row.Calls, len(calls))
	}
}
