package gateway

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
)

// toolModel is the model of the tool-crash tests, an exec provider: to a
// user message "hello …" it answers "hi …"; to any other it calls the
// gateway's terminal tool with a command that writes the message's token
// to the file $RUNS and then sleeps 3 s; once a tool result follows, it
// answers "done <token>".
const toolModel = `in=$(cat)
tok=${in##*\"role\":\"user\",\"content\":\"}
tok=${tok%%\"*}
case "$tok" in
hello*) printf '{"role":"assistant","content":"hi %s"}\n' "$tok"; exit 0 ;;
esac
case "$in" in
*'"role":"tool"'*) printf '{"role":"assistant","content":"done %s"}\n' "$tok" ;;
*) printf '{"role":"assistant","content":null,"tool_calls":[{"id":"call_%s","type":"function","function":{"name":"terminal","arguments":"{\\"command\\":\\"echo %s >> %s; sleep 3\\"}"}}]}\n' "$tok" "$tok" "$RUNS" ;;
esac
`

// toolGateway is a gateway profile whose model calls the gateway's own
// terminal tool (gateway.tools, approval auto), with an API key.
type toolGateway struct {
	t    *testing.T
	home string
	runs string
	args []string
	auth map[string]string
}

func newToolGateway(t *testing.T) *toolGateway {
	home := t.TempDir()
	g := &toolGateway{t: t, home: home, runs: filepath.Join(home, "runs")}
	model := filepath.Join(home, "model.sh")
	if err := os.WriteFile(model, []byte(toolModel), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLCRASH_GATEWAY_KEY", "k1")
	t.Setenv("RUNS", g.runs)
	writeConfig(t, home, "tools:\n  approval: auto\ngateway:\n  tools: [terminal]\n  api_key_env: TOOLCRASH_GATEWAY_KEY\n")
	g.args = []string{"--provider", "exec", "--exec-command", "sh " + model}
	g.auth = map[string]string{"Authorization": "Bearer k1"}
	return g
}

func (g *toolGateway) start() *gatewayProc { return startGateway(g.t, g.home, g.args...) }

func (g *toolGateway) header(kv ...string) map[string]string {
	h := map[string]string{}
	for k, v := range g.auth {
		h[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

// send posts body without waiting for the answer: the gateway is killed
// under it.
func send(p *gatewayProc, path, body string, header map[string]string) {
	go func() {
		req, _ := http.NewRequest("POST", p.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
}

// runsOf is how many times the tool ran for each token.
func (g *toolGateway) runsOf() map[string]int {
	b, _ := os.ReadFile(g.runs)
	n := map[string]int{}
	for _, line := range strings.Fields(string(b)) {
		n[line]++
	}
	return n
}

// waitRuns waits until the tool has started for each of tokens.
func (g *toolGateway) waitRuns(p *gatewayProc, tokens ...string) {
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for {
		n := g.runsOf()
		all := true
		for _, tok := range tokens {
			all = all && n[tok] > 0
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("the tool did not start for %v (runs %v):\n%s", tokens, n, p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A turn killed while the gateway's own tool ran: the client's retry, by
// each of the ways a client names its conversation, gets the model's
// reply after the call is answered as interrupted (nothing run again),
// never the internal call; and a retry after that gets the same reply.
func TestProcessRetryAfterAKillInsideAGatewayTool(t *testing.T) {
	g := newToolGateway(t)
	sessionStore, _ := profileStores(g.home)
	p := g.start()

	// The turns before the one that is cut: a chat client's first turn,
	// and a response to continue from.
	resp, body := p.post("/v1/chat/completions", map[string]any{"messages": []any{userMsg("hello c")}}, g.header())
	mustStatus(t, resp, body, 200)
	chatSID := resp.Header.Get(SessionHeader)
	resp, body = p.post("/v1/responses", map[string]any{"input": "hello p"}, g.header())
	mustStatus(t, resp, body, 200)
	prevSID, prev := resp.Header.Get(SessionHeader), decode[respObj](t, body).ID

	keyed := `{"messages":[{"role":"user","content":"tkey"}]}`
	conv := `{"input":"tconv","conversation":"c1"}`
	chat := `{"messages":[{"role":"user","content":"hello c"},{"role":"assistant","content":"hi hello c"},{"role":"user","content":"tchat"}]}`
	chained := `{"input":"tprev","previous_response_id":"` + prev + `"}`
	send(p, "/v1/chat/completions", keyed, g.header(IdempotencyHeader, "key-1"))
	send(p, "/v1/responses", conv, g.header())
	send(p, "/v1/chat/completions", chat, g.header())
	send(p, "/v1/responses", chained, g.header())
	g.waitRuns(p, "tkey", "tconv", "tchat", "tprev")
	p.stop(syscall.SIGKILL)

	p = g.start()
	var keySID string
	// A keyed turn is answered from the session once it has its reply:
	// the second retry gets the same, and runs nothing.
	for range 2 {
		resp, body = p.post("/v1/chat/completions", keyed, g.header(IdempotencyHeader, "key-1"))
		mustStatus(t, resp, body, 200)
		if c := decode[chatResp](t, body).Choices[0]; c.Message.Content != "done tkey" || c.FinishReason != "stop" {
			t.Errorf("the keyed retry got %s", body)
		}
		keySID = resp.Header.Get(SessionHeader)
	}
	resp, body = p.post("/v1/responses", conv, g.header())
	mustStatus(t, resp, body, 200)
	if r := decode[respObj](t, body); r.text() != "done tconv" || len(r.Output) != 1 || r.Output[0].Type != "message" {
		t.Errorf("the conversation's retry got %s", body)
	}

	resp, body = p.post("/v1/chat/completions", chat, g.header())
	mustStatus(t, resp, body, 200)
	if c := decode[chatResp](t, body).Choices[0]; c.Message.Content != "done tchat" || c.FinishReason != "stop" {
		t.Errorf("the chat client's retry got %s", body)
	}
	if got := resp.Header.Get(SessionHeader); got != chatSID {
		t.Errorf("the chat client's retry went to session %s, not %s", got, chatSID)
	}

	resp, body = p.post("/v1/responses", chained, g.header())
	mustStatus(t, resp, body, 200)
	if r := decode[respObj](t, body); r.text() != "done tprev" || len(r.Output) != 1 || r.Output[0].Type != "message" {
		t.Errorf("the chained retry got %s", body)
	}
	if got := resp.Header.Get(SessionHeader); got != prevSID {
		t.Errorf("the chained retry went to session %s, not %s", got, prevSID)
	}

	msgs := messages(t, sessionStore, keySID)
	if got := roles(msgs); got != "user assistant tool system assistant" || !strings.HasPrefix(msgs[2].Text(), "interrupted") {
		t.Fatalf("transcript of the keyed turn: %s", dump(msgs))
	}
	for _, tok := range []string{"tkey", "tconv", "tchat", "tprev"} {
		if n := g.runsOf()[tok]; n != 1 {
			t.Fatalf("the tool ran %d times for %s", n, tok)
		}
	}
	for _, sid := range []string{chatSID, prevSID} {
		msgs := messages(t, sessionStore, sid)
		if n := strings.Count(texts(msgs), "user:t"); n != 1 {
			t.Fatalf("session %s holds the cut turn's message %d times: %s", sid, n, dump(msgs))
		}
	}
}

// A turn killed inside the gateway's own tool in a session that is then
// suspended (the third interruption in a row): the retry goes on in a
// successor, which carries the cut call, answered as interrupted, after
// the retried message, so the model answers instead of calling the tool
// again (before: the successor began with the user message alone, and the
// tool ran a second time).
func TestProcessRetryOfACutTurnInASuspendedSession(t *testing.T) {
	g := newToolGateway(t)
	sessionStore, _ := profileStores(g.home)
	p := g.start()
	conv := `{"input":"tsusp","conversation":"c2"}`
	send(p, "/v1/responses", conv, g.header())
	g.waitRuns(p, "tsusp")
	p.stop(syscall.SIGKILL)

	ids := sessionsByKey(t, sessionStore, "conversation:c2")
	if len(ids) != 1 {
		t.Fatalf("sessions of the conversation: %v", ids)
	}
	if _, err := sessionStore.SetState(ids[0], sessions.StateSuspended, "restart_interrupted"); err != nil {
		t.Fatal(err)
	}

	p = g.start()
	resp, body := p.post("/v1/responses", conv, g.header())
	mustStatus(t, resp, body, 200)
	if r := decode[respObj](t, body); r.text() != "done tsusp" || len(r.Output) != 1 || r.Output[0].Type != "message" {
		t.Errorf("the retry got %s", body)
	}
	if n := g.runsOf()["tsusp"]; n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	sid := resp.Header.Get(SessionHeader)
	if sid == ids[0] {
		t.Fatalf("the retry went to the suspended session %s", sid)
	}
	msgs := messages(t, sessionStore, sid)
	if got := roles(msgs); !strings.HasPrefix(got, "user assistant tool") || !strings.HasSuffix(got, "assistant") || !strings.HasPrefix(msgs[2].Text(), "interrupted") {
		t.Fatalf("the successor's transcript: %s", dump(msgs))
	}
}

// The same with a successor left empty (its first turn cut before it
// stored anything), resume_pending or suspended in its turn: the retry
// does not run the tool again, wherever routing takes it. Routing here
// goes through the conversation's first session, so this holds with the
// carry worked out once at the successor's creation too; the crash loop
// (scripts/crashloop.sh with -gateway-kills) is what showed the case of
// a retry routed into the empty successor itself.
func TestProcessRetryInAnEmptySuccessor(t *testing.T) {
	g := newToolGateway(t)
	sessionStore, gatewayStore := profileStores(g.home)
	p := g.start()
	conv := `{"input":"tempty","conversation":"c3"}`
	send(p, "/v1/responses", conv, g.header())
	g.waitRuns(p, "tempty")
	p.stop(syscall.SIGKILL)

	ids := sessionsByKey(t, sessionStore, "conversation:c3")
	if len(ids) != 1 {
		t.Fatalf("sessions of the conversation: %v", ids)
	}
	parent := ids[0]
	// What the gateway leaves when it is killed right after making the
	// successor of the suspended session, before the retry stored a word.
	if _, err := sessionStore.End(parent, endSuspended); err != nil {
		t.Fatal(err)
	}
	next, _, err := sessionStore.Create(sessions.Session{Source: "gateway", ParentSessionID: parent, SessionKey: "conversation:c3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := gatewayStore.SetSuccessor(parent, next.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := sessionStore.MarkInterrupted(next.ID, "restart_interrupted", SuspendAfter); err != nil {
		t.Fatal(err)
	}

	p = g.start()
	resp, body := p.post("/v1/responses", conv, g.header())
	mustStatus(t, resp, body, 200)
	if r := decode[respObj](t, body); r.text() != "done tempty" {
		t.Errorf("the retry got %s", body)
	}
	if n := g.runsOf()["tempty"]; n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	if sid := resp.Header.Get(SessionHeader); sid == parent {
		t.Fatalf("the retry went to the suspended session %s", sid)
	}

	// And when the empty successor has itself been suspended since: the
	// retry goes on in a successor of it, which carries the call still.
	send(p, "/v1/responses", `{"input":"tchain","conversation":"c4"}`, g.header())
	g.waitRuns(p, "tchain")
	p.stop(syscall.SIGKILL)
	ids = sessionsByKey(t, sessionStore, "conversation:c4")
	if len(ids) != 1 {
		t.Fatalf("sessions of the conversation: %v", ids)
	}
	sessionStore.End(ids[0], endSuspended)
	empty, _, err := sessionStore.Create(sessions.Session{Source: "gateway", ParentSessionID: ids[0], SessionKey: "conversation:c4"})
	if err != nil {
		t.Fatal(err)
	}
	gatewayStore.SetSuccessor(ids[0], empty.ID)
	if _, err := sessionStore.SetState(empty.ID, sessions.StateSuspended, "restart_interrupted"); err != nil {
		t.Fatal(err)
	}
	p = g.start()
	resp, body = p.post("/v1/responses", `{"input":"tchain","conversation":"c4"}`, g.header())
	mustStatus(t, resp, body, 200)
	if r := decode[respObj](t, body); r.text() != "done tchain" {
		t.Errorf("the retry in a chain got %s", body)
	}
	if n := g.runsOf()["tchain"]; n != 1 {
		t.Fatalf("the tool ran %d times in a chain of successors", n)
	}
}
