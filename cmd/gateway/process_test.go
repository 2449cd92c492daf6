package gateway

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/testtmp"
)

// These tests run the real binary as a user or a service manager would:
// start, signal, kill -9, start again. The binary is this test binary,
// which is hermes when runHermesEnv is in its environment (hermes_test.go),
// as the root package's scripts run it: no build of its own, and a race
// build under -race.

// runHermesEnv makes this test binary the hermes command (hermes_test.go).
const runHermesEnv = "GATEWAY_TEST_RUN_HERMES=1"

// TestMain puts the tests' temporary files in memory where it may
// (fsstore/testtmp).
func TestMain(m *testing.M) { os.Exit(testtmp.Main(m)) }

func hermesBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs the binary; go test ./cmd/gateway/ (without -short) runs it")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// gatewayProc is one running `hermes gateway serve`.
type gatewayProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	stderr strings.Builder
	exited chan struct{}
	code   int
}

var servingLine = regexp.MustCompile(`gateway serving on (http://\S+)`)

// startGateway starts the gateway on a free loopback port of home and
// waits until /health answers.
func startGateway(t *testing.T, home string, args ...string) *gatewayProc {
	t.Helper()
	argv := append([]string{"--home", home, "gateway", "serve", "--addr", "127.0.0.1:0"}, args...)
	cmd := exec.Command(hermesBinary(t), argv...)
	cmd.Env = cleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &gatewayProc{t: t, cmd: cmd, exited: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		err := cmd.Wait()
		p.code = 0
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			p.code = exitErr.ExitCode()
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case p.url = <-urls:
	case <-p.exited:
		t.Fatalf("gateway exited with %d before serving:\n%s", p.code, p.log())
	case <-time.After(30 * time.Second): // hang guard
		t.Fatalf("gateway did not start:\n%s", p.log())
	}
	resp, body := doRequest(t, p.url, "GET", "/health", nil, nil)
	mustStatus(t, resp, body, 200)
	return p
}

// cleanEnv is the environment of a hermes process: this binary as hermes,
// without the caller's HERMES_ and OPENAI_ settings, and, under the race
// detector, without its second's sleep at exit.
func cleanEnv() []string {
	env := []string{runHermesEnv, "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HERMES_") && !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	return env
}

func (p *gatewayProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// stop sends sig and returns the exit code.
func (p *gatewayProc) stop(sig syscall.Signal) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second): // hang guard
		p.t.Fatalf("gateway did not exit after %v:\n%s", sig, p.log())
	}
	return p.code
}

func (p *gatewayProc) post(path string, body any, header map[string]string) (*http.Response, []byte) {
	p.t.Helper()
	return doRequest(p.t, p.url, "POST", path, body, header)
}

func profileStores(home string) (*sessions.Store, *gatewaystate.Store) {
	dir := filepath.Join(home, "profiles", "default")
	warn := func(string) {}
	return sessions.NewStore(dir, "default", 10*time.Second, warn), gatewaystate.NewStore(dir, 10*time.Second, warn)
}

func writeConfig(t *testing.T, home, yaml string) {
	t.Helper()
	dir := filepath.Join(home, "profiles", "default")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// One conversation, one session: across a restart and the eviction of the
// response it was keyed by.
func TestProcessConversationSurvivesRestartAndEviction(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeConfig(t, home, "gateway:\n  max_stored_responses: 2\n")
	sessionStore, store := profileStores(home)

	g := startGateway(t, home)
	resp, body := g.post("/v1/responses", map[string]any{"model": "m", "input": "turn 1", "conversation": "c1"}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	first := decode[respObj](t, body)

	// Single instance: a second serve on the profile is refused (exit 4).
	second := exec.Command(hermesBinary(t), "--home", home, "gateway", "serve", "--addr", "127.0.0.1:0")
	second.Env = cleanEnv()
	out, err := second.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 4 || !strings.Contains(string(out), "already runs") {
		t.Fatalf("second serve: %v\n%s", err, out)
	}

	if code := g.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, g.log())
	}
	if !fileExists(store.CleanShutdownPath()) {
		t.Fatal("no clean-shutdown marker after a clean drain")
	}

	g = startGateway(t, home)
	if fileExists(store.CleanShutdownPath()) {
		t.Fatal("the marker of the last run outlived the start")
	}
	var noise []string
	for i := range 3 {
		resp, body := g.post("/v1/responses", map[string]any{"input": "noise", "conversation": fmt.Sprintf("other-%d", i)}, nil)
		mustStatus(t, resp, body, 200)
		noise = append(noise, decode[respObj](t, body).ID)
		resp, body = doRequest(t, g.url, "GET", "/v1/responses/"+noise[i], nil, nil)
		mustStatus(t, resp, body, 200)
	}
	// The limit holds across the restart, and the newest are the ones kept.
	if n, err := store.StoredResponseCount(); err != nil || n != 2 {
		t.Fatalf("%d responses stored (%v), want 2", n, err)
	}
	for _, id := range noise[1:] {
		resp, body := doRequest(t, g.url, "GET", "/v1/responses/"+id, nil, nil)
		mustStatus(t, resp, body, 200)
	}
	resp, body = doRequest(t, g.url, "GET", "/v1/responses/"+first.ID, nil, nil)
	mustError(t, resp, body, 404, "invalid_request_error")
	resp, body = g.post("/v1/responses", map[string]any{"input": "x", "previous_response_id": first.ID}, nil)
	mustError(t, resp, body, 404, "invalid_request_error")

	resp, body = g.post("/v1/responses", map[string]any{"input": "turn 2", "conversation": "c1"}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("turn 2 of c1 landed in session %s, want %s", got, sid)
	}
	if got := decode[respObj](t, body).text(); got != echoText(3, "turn 2") {
		t.Fatalf("turn 2 reply %q: the history was not continued", got)
	}
	msgs := messages(t, sessionStore, sid)
	if len(msgs) != 4 || msgs[0].Text() != "turn 1" || msgs[2].Text() != "turn 2" {
		t.Fatalf("transcript of %s: %s", sid, dump(msgs))
	}
	checkTranscript(t, msgs)
	if ids := sessionsByKey(t, sessionStore, "conversation:c1"); len(ids) != 1 || ids[0] != sid {
		t.Fatalf("sessions of c1: %v", ids)
	}
	if code := g.stop(syscall.SIGINT); code != 0 {
		t.Fatalf("exit %d after SIGINT:\n%s", code, g.log())
	}
}

// A drain that times out leaves the turn's session resume_pending
// (restart_timeout); the next start does not count it twice, and the next
// turn continues it with the note.
func TestProcessDrainTimeoutResumes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	sessionStore, store := profileStores(home)
	slow := `sleep 3; printf '%s\n' '{"role":"assistant","content":"slow reply"}'`
	g := startGateway(t, home, "--provider", "exec", "--exec-command", slow, "--drain-timeout", "1s")

	go func() {
		// Cut off by the stop; its outcome is not the point.
		req, _ := http.NewRequest("POST", g.url+"/v1/responses", strings.NewReader(`{"input":"long turn","conversation":"slow"}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	var sid string
	deadline := time.Now().Add(20 * time.Second) // hang guard
	for sid == "" {
		if c, err := store.GetConversation("slow"); err == nil {
			if msgs, err := sessionStore.Messages(c.SessionID); err == nil && len(msgs) == 1 {
				sid = c.SessionID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn never started:\n%s", g.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code := g.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d:\n%s", code, g.log())
	}
	s := getSession(t, sessionStore, sid)
	if s.State != sessions.StateResumePending || s.ResumeReason != "restart_timeout" || s.InterruptCount != 1 {
		t.Fatalf("after the drain timed out: %+v\n%s", s, g.log())
	}
	if fileExists(store.CleanShutdownPath()) {
		t.Fatal("a clean-shutdown marker after a drain that timed out")
	}
	if st, _, _ := store.ReadState(); !st.DrainTimedOut || len(st.InterruptedSessions) != 1 || st.InterruptedSessions[0] != sid {
		t.Fatalf("state.json: %+v", st)
	}

	g = startGateway(t, home)
	s = getSession(t, sessionStore, sid)
	if s.State != sessions.StateResumePending || s.ResumeReason != "restart_timeout" || s.InterruptCount != 1 {
		t.Fatalf("after the restart: %+v (one interruption, counted once)", s)
	}
	resp, body := g.post("/v1/responses", map[string]any{"input": "are you there?", "conversation": "slow"}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("the interrupted conversation went to %s, not %s", got, sid)
	}
	msgs := messages(t, sessionStore, sid)
	if len(msgs) != 4 || msgs[0].Text() != "long turn" || msgs[1].Text() != agent.ResumeNote("restart_timeout") ||
		msgs[2].Text() != "are you there?" || msgs[3].Role != "assistant" {
		t.Fatalf("transcript: %s", dump(msgs))
	}
	if s := getSession(t, sessionStore, sid); s.State != sessions.StateActive || s.InterruptCount != 0 {
		t.Fatalf("after a successful turn: %+v", s)
	}
	g.stop(syscall.SIGTERM)
}

// Three starts in a row after a kill -9, with a turn of the session in
// flight (its message stored, its reply not): suspended; the next request
// gets a new session whose parent is the old.
func TestProcessThreeInterruptedRestartsSuspend(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	sessionStore, _ := profileStores(home)
	g := startGateway(t, home)
	resp, body := g.post("/v1/chat/completions", map[string]any{"messages": []any{userMsg("loop")}}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	reply := decode[chatResp](t, body).Choices[0].Message.Content
	if _, err := sessionStore.Append(sid, []sessions.Message{{Role: "user", Content: sessions.TextContent("in flight")}}); err != nil {
		t.Fatal(err)
	}

	for i := 1; i <= SuspendAfter; i++ {
		g.stop(syscall.SIGKILL)
		g = startGateway(t, home)
		s := getSession(t, sessionStore, sid)
		want := sessions.StateResumePending
		if i == SuspendAfter {
			want = sessions.StateSuspended
		}
		if s.State != want || s.InterruptCount != i || s.ResumeReason != "restart_interrupted" {
			t.Fatalf("after unclean restart %d: %+v", i, s)
		}
	}

	st := gatewayStatusJSON(t, home)
	if !st.Running || st.PID != g.cmd.Process.Pid || "http://"+st.Addr != g.url ||
		len(st.Sessions) != 1 || st.Sessions[0].ID != sid || st.Sessions[0].State != "suspended" {
		t.Fatalf("status while running: %+v", st)
	}

	history := []any{userMsg("loop"), asstMsg(reply), userMsg("in flight"), userMsg("once more")}
	resp, body = g.post("/v1/chat/completions", map[string]any{"messages": history}, map[string]string{SessionHeader: sid})
	mustStatus(t, resp, body, 200)
	next := resp.Header.Get(SessionHeader)
	if next == sid {
		t.Fatal("a suspended session was continued")
	}
	if p := getSession(t, sessionStore, next).ParentSessionID; p != sid {
		t.Fatalf("new session's parent %q, want %s", p, sid)
	}
	if s := getSession(t, sessionStore, sid); s.State != sessions.StateEnded || s.EndReason != "suspended" {
		t.Fatalf("old session: %+v", s)
	}
	g.stop(syscall.SIGTERM)
	if st := gatewayStatusJSON(t, home); st.Running || len(st.Sessions) != 0 {
		t.Fatalf("status after the stop: %+v", st)
	}
}

type statusJSON struct {
	Running  bool   `json:"running"`
	PID      int    `json:"pid"`
	Addr     string `json:"addr"`
	Sessions []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"sessions"`
}

func gatewayStatusJSON(t *testing.T, home string) statusJSON {
	t.Helper()
	cmd := exec.Command(hermesBinary(t), "--home", home, "--json", "gateway", "status")
	cmd.Env = cleanEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gateway status: %v", err)
	}
	return decode[statusJSON](t, out)
}
