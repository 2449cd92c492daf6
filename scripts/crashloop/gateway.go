package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The gateway phase: one `hermes gateway serve` on the profile, killed
// with SIGKILL at random moments and started again, under clients that
// retry each turn until it is answered, as the SDKs do. Each turn's
// message is a fresh token, and the model (the exec provider running
// gatewayModel) takes 20 to 200 ms, so that kills land before, during and
// after the store of a reply and its send. Three kinds of client:
//
//   - responses with a conversation (no key): a retry repeats the input,
//     and the gateway tells a retry of an undelivered reply from a new turn;
//   - responses with an Idempotency-Key: the token is the key;
//   - chat completions with X-Hermes-Session-Id and the whole history (the
//     first turn with an Idempotency-Key, since it names no session yet);
//   - an impatient stateless chat client (no key, no session named: found
//     by its history, its first turn by its opening) that gives up on a
//     request after 300 ms, less than the tool sleeps, and retries at once,
//     waiting twice as long each time: it leaves mid-tool, and its retry
//     must carry the turn on with the call answered once (fsck reports a
//     second result, a result after its turn's end and a reply stored
//     twice);
//   - responses chained by previous_response_id, each from the response
//     the client was last given. A response's document is a cache of its
//     reply's transcript lines, written without a sync: after each kill,
//     the newest such documents are removed, as a power cut may lose them,
//     and every response a client was given must still be found, by
//     previous_response_id and, at the end, by GET, with the reply the
//     client was given. So are (or emptied) the conversations' first
//     mappings the killed gateway wrote, also without a sync: the next
//     gateway writes them again from their sessions.
//
// Each run of the model answers "reply <token> <its pid>", so that two
// runs of one turn give two different replies, while a copy of a reply (a
// chat client's history, a fork) is the same text. Half of its runs first
// call the gateway's own terminal tool (gateway.tools), whose command
// records the token and sleeps 500 to 900 ms, longer than a gateway mostly
// lives between kills, so that most such turns are killed while the tool
// runs and answered after a restart. Then: the reply a client was given
// must be stored after its message (invariant 1); no turn may have two
// different replies stored (a stored turn run twice, invariant 12); no
// message may be stored twice in one session; no client may be answered
// with the gateway's own call (invariant 15), and every client's turn must
// be answered (none stuck); no tool may run twice for one turn (invariant
// 11); and fsck must get the profile clean.

// gatewayModel is the model: it answers "reply <the last user message>
// <pid>" after a short pause; when no tool result follows that message,
// every other run calls terminal first, with a command that appends the
// token to $GATEWAY_TOOL_RUNS.
const gatewayModel = `in=$(cat)
tok=${in##*\"role\":\"user\",\"content\":\"}
tok=${tok%%\"*}
sleep 0.$(( $$ % 18 + 2 ))
case "${in##*\"role\":\"user\"}" in
*'"role":"tool"'*) ;;
*) if [ $(( $$ % 2 )) -eq 0 ]; then
     printf '{"role":"assistant","content":null,"tool_calls":[{"id":"call_%s","type":"function","function":{"name":"terminal","arguments":"{\\"command\\":\\"echo %s >> %s; sleep 0.%s\\"}"}}]}\n' "$$" "$tok" "$GATEWAY_TOOL_RUNS" $(( $$ % 5 + 5 ))
     exit 0
   fi ;;
esac
printf '{"role":"assistant","content":"reply %s %s"}\n' "$tok" "$$"
`

// gatewayKey is the API key of the phase's gateway, which runs tools.
const gatewayKey = "crashloop-gateway-key"

type gatewayPhase struct {
	h     *harness
	addr  string
	env   []string
	mu    sync.Mutex
	cmd   *exec.Cmd
	up    chan struct{} // closed when the current gateway answers /health, or died
	kills atomic.Int64
	acked sync.Map // token -> the reply the client was given
	// internal counts the answers that were the gateway's own call.
	internal atomic.Int64
	tried    sync.Map // token -> true
	// responses: response id -> the token of a response a chained client
	// was given; lost counts the documents removed after kills.
	responses sync.Map
	lost      atomic.Int64
	// lostMappings counts the conversations' first mappings removed or
	// emptied after kills.
	lostMappings atomic.Int64
	client       *http.Client
}

// gatewayPhaseRun runs the phase until kills gateway kills, with clients
// clients, and checks what they were told.
func (h *harness) gatewayPhaseRun(kills, clients int) {
	model := filepath.Join(h.o.home, "gateway-model.sh")
	if err := os.WriteFile(model, []byte(gatewayModel), 0o600); err != nil {
		h.problemf("gateway phase: %v", err)
		return
	}
	config := "tools:\n  approval: auto\ngateway:\n  tools: [terminal]\n  api_key_env: CRASHLOOP_GATEWAY_KEY\n"
	if err := os.WriteFile(filepath.Join(h.profileDir(), "config.yaml"), []byte(config), 0o600); err != nil {
		h.problemf("gateway phase: %v", err)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.problemf("gateway phase: %v", err)
		return
	}
	addr := ln.Addr().String()
	ln.Close()
	g := &gatewayPhase{
		h: h, addr: addr,
		env: []string{"HERMES_PROVIDER=exec", "HERMES_EXEC_COMMAND=sh " + model,
			"CRASHLOOP_GATEWAY_KEY=" + gatewayKey, "GATEWAY_TOOL_RUNS=" + filepath.Join(h.o.home, "gateway-tool-runs")},
		client: &http.Client{Timeout: 20 * time.Second},
	}
	ctx, cancel := context.WithCancel(context.Background())
	superDone := make(chan struct{})
	go func() { defer close(superDone); g.supervise(ctx) }()

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(time.Now().UnixNano() + int64(c)*104729))
			g.runClient(c, rng, stop)
		}(c)
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for g.kills.Load() < int64(kills) {
		g.waitUp()
		// A gateway lives 100 to 700 ms: long enough, on a busy machine,
		// for turns to reach the model and the tool before the kill.
		time.Sleep(time.Duration(100+rng.Intn(600)) * time.Millisecond)
		g.mu.Lock()
		if g.cmd != nil && g.cmd.Process.Signal(syscall.SIGKILL) == nil {
			g.kills.Add(1)
		}
		g.mu.Unlock()
	}
	// The last gateway stays up until every client's turn is answered.
	close(stop)
	wg.Wait()
	g.checkResponses()
	cancel()
	g.mu.Lock()
	if g.cmd != nil {
		g.cmd.Process.Signal(syscall.SIGTERM)
	}
	g.mu.Unlock()
	<-superDone
	g.check()
	h.fsck()
}

// supervise keeps a gateway running until ctx ends: it starts one, and
// another when it dies.
func (g *gatewayPhase) supervise(ctx context.Context) {
	for ctx.Err() == nil {
		cmd := exec.Command(g.h.o.bin, "--home", g.h.o.home, "gateway", "serve", "--addr", g.addr)
		cmd.Env = append(os.Environ(), g.env...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		up := make(chan struct{})
		g.mu.Lock()
		g.up = up
		if err := cmd.Start(); err != nil {
			g.mu.Unlock()
			g.h.problemf("gateway phase: start: %v", err)
			return
		}
		g.cmd = cmd
		g.mu.Unlock()
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		var served atomic.Int64 // when it first answered /health (unix ns)
		go func() {
			defer close(up)
			probe := &http.Client{Timeout: time.Second}
			for {
				select {
				case <-exited:
					return
				case <-time.After(5 * time.Millisecond):
				}
				if resp, err := probe.Get("http://" + g.addr + "/health"); err == nil {
					resp.Body.Close()
					served.Store(time.Now().UnixNano())
					return
				}
			}
		}()
		<-exited
		g.mu.Lock()
		g.cmd = nil
		g.mu.Unlock()
		g.loseDocuments()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && served.Load() != 0 {
			g.loseMappings(time.Unix(0, served.Load()))
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Exited() && ws.ExitStatus() != 0 && ctx.Err() == nil {
			// A start may lose the serve lock to its killed predecessor's
			// last breath; anything else is a failure.
			if !strings.Contains(errb.String(), "already runs") {
				g.h.problemf("gateway phase: the gateway exited %d: %s", ws.ExitStatus(), strings.TrimSpace(errb.String()))
			}
		}
	}
}

func (g *gatewayPhase) waitUp() {
	g.mu.Lock()
	up := g.up
	g.mu.Unlock()
	if up != nil {
		<-up
	}
}

// post sends one request and returns the status (0: no answer) and body.
func (g *gatewayPhase) post(path string, body any, header map[string]string) (int, http.Header, []byte) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", "http://"+g.addr+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil
	}
	return resp.StatusCode, resp.Header, out
}

// turn sends one turn until it is answered (a 200), retrying the same
// request after a failure to connect, a cut response or a 5xx. It returns
// the response, or ok false when the client gave up.
func (g *gatewayPhase) turn(path string, body any, header map[string]string) (http.Header, []byte, bool) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		code, hdr, out := g.post(path, body, header)
		switch {
		case code == 200:
			return hdr, out, true
		case code == 0 || code >= 500:
			time.Sleep(10 * time.Millisecond)
		default:
			g.h.problemf("gateway phase: %s answered %d: %s", path, code, out)
			return nil, nil, false
		}
	}
	g.h.problemf("gateway phase: %s not answered in 2 minutes", path)
	return nil, nil, false
}

// impatientTurn sends one turn as a client that gives up early: its first
// attempt waits 300 ms, and each retry, sent at once, twice as long as the
// one before (at most 20 s), until a 200.
func (g *gatewayPhase) impatientTurn(path string, body any) (http.Header, []byte, bool) {
	b, _ := json.Marshal(body)
	wait := 300 * time.Millisecond
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+g.addr+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+gatewayKey)
		resp, err := g.client.Do(req)
		var out []byte
		code := 0
		if err == nil {
			out, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				code = resp.StatusCode
			}
		}
		cancel()
		switch {
		case code == 200:
			return resp.Header, out, true
		case code == 0 || code >= 500:
			wait = min(2*wait, 20*time.Second)
		default:
			g.h.problemf("gateway phase: %s answered %d: %s", path, code, out)
			return nil, nil, false
		}
	}
	g.h.problemf("gateway phase: %s not answered in 2 minutes (impatient client)", path)
	return nil, nil, false
}

func (g *gatewayPhase) runClient(c int, rng *rand.Rand, stop <-chan struct{}) {
	kind := c % 5
	conv := fmt.Sprintf("gw-%d-%d", os.Getpid(), c)
	var sid, prev string
	var history []map[string]any
	for {
		select {
		case <-stop:
			return
		default:
		}
		tok := g.h.token(fmt.Sprintf("gw%d", c))
		g.tried.Store(tok, true)
		var ok bool
		var hdr http.Header
		var out []byte
		switch kind {
		case 0:
			_, out, ok = g.turn("/v1/responses", map[string]any{"conversation": conv, "input": tok}, nil)
		case 1:
			_, out, ok = g.turn("/v1/responses", map[string]any{"conversation": conv, "input": tok}, map[string]string{"Idempotency-Key": tok})
		case 4:
			body := map[string]any{"input": tok}
			if prev != "" {
				body["previous_response_id"] = prev
			}
			if _, out, ok = g.turn("/v1/responses", body, nil); ok {
				var r struct {
					ID string `json:"id"`
				}
				json.Unmarshal(out, &r)
				prev = r.ID
				g.responses.Store(r.ID, tok)
			}
		case 3:
			msgs := append(history, map[string]any{"role": "user", "content": tok})
			_, out, ok = g.impatientTurn("/v1/chat/completions", map[string]any{"messages": msgs})
			if ok {
				content, good := chatContent(out)
				if !good {
					g.h.problemf("gateway phase: chat reply %s", out)
					return
				}
				history = append(msgs, map[string]any{"role": "assistant", "content": content})
			}
		default:
			msgs := append(history, map[string]any{"role": "user", "content": tok})
			header := map[string]string{"Idempotency-Key": tok}
			if sid != "" {
				header = map[string]string{"X-Hermes-Session-Id": sid}
			}
			hdr, out, ok = g.turn("/v1/chat/completions", map[string]any{"messages": msgs}, header)
			if ok {
				content, good := chatContent(out)
				if !good {
					g.h.problemf("gateway phase: chat reply %s", out)
					return
				}
				sid = hdr.Get("X-Hermes-Session-Id")
				history = append(msgs, map[string]any{"role": "assistant", "content": content})
			}
		}
		if !ok {
			return
		}
		if internalCall.Match(out) {
			g.internal.Add(1)
			g.h.problemf("gateway phase: %s was answered with the gateway's own call: %.300s", tok, out)
			return
		}
		reply := replyRE.Find(out)
		if reply == nil || string(replyRE.FindSubmatch(out)[1]) != tok {
			g.h.problemf("gateway phase: the answer to %s is not its reply: %.300s", tok, out)
			return
		}
		g.acked.Store(tok, string(reply))
		g.h.ack(nil)
		time.Sleep(time.Duration(rng.Intn(30)) * time.Millisecond)
	}
}

// loseDocuments does to the response documents what a power cut may do
// to files written without a sync, once the gateway is dead: it removes
// the newest ones (up to 3) whose reply's transcript lines carry them
// ("hermes_response":{"id":…}: a document written without a sync), and
// leaves the others (a reply answered from a stored one gets a synced
// document).
func (g *gatewayPhase) loseDocuments() {
	dir := filepath.Join(g.h.profileDir(), "gateway", "responses")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	removed := 0
	for i := len(entries) - 1; i >= 0 && removed < 3; i-- {
		id, ok := strings.CutSuffix(entries[i].Name(), ".json")
		if !ok || strings.HasPrefix(id, ".") || len(id) <= responseIDHead {
			continue
		}
		transcript, err := os.ReadFile(filepath.Join(g.h.profileDir(), "sessions", id[responseIDHead+1:]+".jsonl"))
		if err != nil || !bytes.Contains(transcript, []byte(`"hermes_response":{"id":"`+id+`"`)) {
			continue
		}
		if os.Remove(filepath.Join(dir, entries[i].Name())) == nil {
			removed++
			g.lost.Add(1)
		}
	}
}

// loseMappings does to the conversations' first mappings that the killed
// gateway wrote (after it served, since, so not one its start levelled
// and synced) what a power cut may do to files written without a sync:
// it removes or empties them. A mapping whose session has a parent was
// moved to it by a synced write, and is left.
func (g *gatewayPhase) loseMappings(since time.Time) {
	dir := filepath.Join(g.h.profileDir(), "gateway", "conversations")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		slug, ok := strings.CutSuffix(e.Name(), ".json")
		info, err := e.Info()
		if !ok || strings.HasPrefix(slug, ".") || err != nil || !info.ModTime().After(since) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		var m struct {
			SessionID string `json:"session_id"`
		}
		var sess struct {
			ParentSessionID string `json:"parent_session_id"`
			SessionKey      string `json:"session_key"`
		}
		b, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(b, &m) != nil || m.SessionID == "" {
			continue
		}
		if b, err = os.ReadFile(filepath.Join(g.h.profileDir(), "sessions", m.SessionID+".json")); err != nil ||
			json.Unmarshal(b, &sess) != nil || sess.ParentSessionID != "" || sess.SessionKey != "conversation:"+slug {
			continue
		}
		if g.lostMappings.Add(1)%2 == 0 {
			err = os.Remove(path)
		} else {
			err = os.WriteFile(path, nil, 0o600)
		}
		if err != nil {
			g.h.problemf("gateway phase: losing the mapping %s: %v", path, err)
		}
	}
}

// responseIDHead is the length of a response id before "_" and the
// session id: resp_, the time to the microsecond, 8 random bytes in hex.
const responseIDHead = len("resp_20261121_020734_123456_a1b2c3d4e5f60718")

// checkResponses asks the last gateway for every response a chained
// client was given: each must be found, with the reply the client got.
func (g *gatewayPhase) checkResponses() {
	g.responses.Range(func(k, v any) bool {
		id, tok := k.(string), v.(string)
		req, _ := http.NewRequest("GET", "http://"+g.addr+"/v1/responses/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+gatewayKey)
		resp, err := g.client.Do(req)
		if err != nil {
			g.h.problemf("gateway phase: GET %s: %v", id, err)
			return true
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		given, _ := g.acked.Load(tok)
		if resp.StatusCode != 200 || given == nil || replyRE.FindString(string(out)) != given.(string) {
			g.h.lostf("gateway phase: response %s of %s, given %q: GET answered %d: %.300s", id, tok, given, resp.StatusCode, out)
		}
		return true
	})
}

// chatContent is the reply text of a chat completion.
func chatContent(out []byte) (string, bool) {
	var cc struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(out, &cc) != nil || len(cc.Choices) == 0 {
		return "", false
	}
	return cc.Choices[0].Message.Content, true
}

// internalCall finds a call of the gateway's own tool in a response.
var internalCall = regexp.MustCompile(`"name":\s*"terminal"`)

// replyRE finds a model's reply in a response: its token and the pid of
// the run that made it.
var replyRE = regexp.MustCompile(`reply (tok-[a-z0-9-]+) ([0-9]+)`)

// check reads every session: a token is stored at most once in a session;
// the replies stored after it (notes skipped) come from one run of the
// model; an acknowledged token's reply, the one its client was given, is
// stored after it.
func (g *gatewayPhase) check() {
	dir := filepath.Join(g.h.profileDir(), "sessions")
	entries, err := os.ReadDir(dir)
	if err != nil {
		g.h.problemf("gateway phase: %v", err)
		return
	}
	replies := map[string]map[string]bool{} // token -> the replies stored after it
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".jsonl") || strings.HasPrefix(name, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			g.h.problemf("gateway phase: %v", err)
			continue
		}
		type message struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
			Note    bool   `json:"hermes_note"`
		}
		var msgs []message
		for _, line := range bytes.Split(b, []byte("\n")) {
			var m message
			if len(line) > 0 && json.Unmarshal(line, &m) == nil && !m.Note {
				msgs = append(msgs, m)
			}
		}
		seen := map[string]int{}
		for i, m := range msgs {
			text, _ := m.Content.(string)
			if m.Role != "user" {
				continue
			}
			if _, ok := g.tried.Load(text); !ok {
				continue
			}
			if seen[text]++; seen[text] == 2 {
				g.h.problemf("gateway phase: %s stored twice in session %s", text, strings.TrimSuffix(name, ".jsonl"))
			}
			// The reply is the first text after the message: the calls
			// of the gateway's tool and their results come before it.
			for _, r := range msgs[i+1:] {
				if r.Role == "user" {
					break
				}
				if reply, _ := r.Content.(string); r.Role == "assistant" && reply != "" {
					if replies[text] == nil {
						replies[text] = map[string]bool{}
					}
					replies[text][reply] = true
					break
				}
			}
		}
	}
	runs := map[string]int{}
	if b, err := os.ReadFile(filepath.Join(g.h.o.home, "gateway-tool-runs")); err == nil {
		for _, tok := range strings.Fields(string(b)) {
			if runs[tok]++; runs[tok] == 2 {
				g.h.problemf("gateway phase: the tool of %s ran twice (a call run again after a kill)", tok)
			}
		}
	}
	acked, twice := 0, 0
	g.tried.Range(func(k, _ any) bool {
		tok := k.(string)
		if len(replies[tok]) > 1 {
			twice++
			g.h.problemf("gateway phase: %s has %d different replies stored (a stored turn ran again): %v", tok, len(replies[tok]), replies[tok])
		}
		if given, ack := g.acked.Load(tok); ack {
			acked++
			if !replies[tok][given.(string)] {
				g.h.lostf("gateway phase: %s was answered %q, which is not stored after it (stored: %v)", tok, given, replies[tok])
			}
		}
		return true
	})
	g.h.led.mu.Lock()
	chained := 0
	g.responses.Range(func(any, any) bool { chained++; return true })
	g.h.gateway = gatewayCounts{kills: int(g.kills.Load()), acked: acked, twice: twice, toolTurns: len(runs), internal: int(g.internal.Load()),
		chained: chained, lostDocs: int(g.lost.Load()), lostMappings: int(g.lostMappings.Load())}
	g.h.led.mu.Unlock()
}

// gatewayCounts is what the gateway phase reports.
type gatewayCounts struct {
	kills, acked, twice int
	// toolTurns: turns whose model called the gateway's tool;
	// internal: answers that were the gateway's own call.
	toolTurns, internal int
	// chained: responses a chained client was given (each found again by
	// GET at the end); lostDocs: response documents removed after kills;
	// lostMappings: conversations' first mappings removed or emptied.
	chained, lostDocs, lostMappings int
}
