package provider

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/supervisor"
	"github.com/hermes/hermes/fsstore/sessions"
)

// newExecTest returns an exec provider running script, and where its
// stderr goes.
func newExecTest(t *testing.T, script string, timeout time.Duration) (Provider, *bytes.Buffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Name: "exec", ExecCommand: "sh '" + path + "'", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	p.(*execProvider).stderr = &stderr
	return p, &stderr
}

func TestExecReply(t *testing.T) {
	dir := t.TempDir()
	p, stderr := newExecTest(t, `
n=$(tee '`+dir+`/stdin' | wc -l | tr -d ' ')
echo "agent: got $n lines" >&2
printf '%s\n' '{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"count","arguments":"{}"}}]}'
echo
printf '{"role":"tool","tool_call_id":"call_1","content":"%s lines, session %s"}' "$n" "$HERMES_SESSION_ID"
`, 0)
	req := toolTranscript(t)
	req.SessionID = "20260102_030405_abcdef"
	reply, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"count","arguments":"{}"}}]}` + "\n" +
		`{"role":"tool","content":"5 lines, session 20260102_030405_abcdef","tool_call_id":"call_1"}` + "\n"
	if got := chatLines(reply.Messages); got != want {
		t.Errorf("reply:\n got %s\nwant %s", got, want)
	}
	if reply.Usage != nil {
		t.Errorf("usage = %+v, want nil", reply.Usage)
	}
	var wantStdin bytes.Buffer
	for _, m := range req.History.(Messages) {
		b, _ := m.MarshalJSON()
		wantStdin.Write(b)
		wantStdin.WriteByte('\n')
	}
	gotStdin, err := os.ReadFile(filepath.Join(dir, "stdin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotStdin, wantStdin.Bytes()) {
		t.Errorf("stdin:\n got %s\nwant %s", gotStdin, wantStdin.Bytes())
	}
	if !strings.HasPrefix(string(gotStdin), `{"seq":1,"ts":"2026-01-02T03:04:05.000000Z","role":"system"`) {
		t.Errorf("stdin lines lack seq and ts: %.80s", gotStdin)
	}
	if stderr.String() != "agent: got 5 lines\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestExecStream(t *testing.T) {
	p, _ := newExecTest(t, `
cat >/dev/null
echo '{"role":"assistant","content":"let me look","tool_calls":[{"id":"c","type":"function","function":{"name":"ls","arguments":"{}"}}]}'
echo '{"role":"tool","tool_call_id":"c","content":"a.txt"}'
echo '{"role":"assistant","content":[{"type":"text","text":"found a.txt"}]}'
`, 0)
	var stream strings.Builder
	req := toolTranscript(t)
	req.Stream = &stream
	reply, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Messages) != 3 {
		t.Errorf("%d messages, want 3", len(reply.Messages))
	}
	if want := "let me look\nfound a.txt"; stream.String() != want {
		t.Errorf("streamed %q, want %q", stream.String(), want)
	}
}

func TestExecExitStatus(t *testing.T) {
	p, _ := newExecTest(t, `echo '{"role":"assistant","content":"half done"}'; exit 3`, 0)
	_, err := p.Complete(context.Background(), toolTranscript(t))
	var pe *Error
	if !errors.As(err, &pe) || pe.ExitCode != 3 {
		t.Fatalf("error %v, want an *Error with exit code 3", err)
	}
	if want := "exec provider: command exited with status 3"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestExecBadOutput(t *testing.T) {
	for _, tc := range []struct{ name, script, want string }{
		{"invalid JSON", `echo '{"role":"assistant","content":"ok"}'; echo 'not json'`,
			"exec provider: output line 2: malformed message: "},
		{"user role", `echo '{"role":"user","content":"hi"}'`,
			`exec provider: output line 1: role "user" is not allowed (want assistant or tool)`},
		{"system role", `echo; echo '{"role":"system","content":"hi"}'`,
			`exec provider: output line 2: role "system" is not allowed (want assistant or tool)`},
		{"bad content", `echo '{"role":"assistant","content":5}'`,
			"exec provider: output line 1: message content must be"},
		{"lone surrogate", `echo '{"role":"assistant","content":"cut \\ud83d"}'`,
			`exec provider: output line 1: content holds \ud83d, a lone surrogate escape`},
		{"no output", `true`,
			"exec provider: command printed no messages"},
		{"blank lines only", `printf '\n  \n\n'`,
			"exec provider: command printed no messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newExecTest(t, tc.script, 0)
			reply, err := p.Complete(context.Background(), toolTranscript(t))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("reply %s, error %v; want an *Error", chatLines(reply.Messages), err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to start with %q", err, tc.want)
			}
			if pe.ExitCode != 0 {
				t.Errorf("exit code %d, want 0", pe.ExitCode)
			}
		})
	}
}

func TestExecTimeout(t *testing.T) {
	p, _ := newExecTest(t, `sleep 30`, 100*time.Millisecond)
	_, err := p.Complete(context.Background(), toolTranscript(t))
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want an *Error wrapping context.DeadlineExceeded", err)
	}
	if want := "exec provider: timed out after 100ms"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestExecCancelKillsGroup checks that a cancel kills what the command
// started in the background too, not only sh.
func TestExecCancelKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	p, _ := newExecTest(t, `sleep 60 & echo $! > '`+pidFile+`.tmp'; mv '`+pidFile+`.tmp' '`+pidFile+`'; wait`, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Complete(ctx, toolTranscript(t))
		done <- err
	}()
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		} else if time.Now().After(deadline) {
			t.Fatal("the command did not start its background child")
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
	for deadline := time.Now().Add(10 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("background child %d survived the cancel", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	return supervisor.ProcStart(pid) != ""
}

// The history streams to the command's stdin: a command that answers
// without reading it all (far more than a pipe holds) still returns, and
// one that reads it all sees every line.
func TestExecStreamsLongHistory(t *testing.T) {
	var history Messages
	for i := range 5000 {
		history = append(history, sessions.Message{Seq: int64(i + 1), TS: "2026-11-21T00:00:00Z", Role: "user",
			Content: sessions.TextContent(strings.Repeat("x", 100))})
	}
	p, _ := newExecTest(t, `echo '{"role":"assistant","content":"no need to read"}'`, 10*time.Second)
	reply, err := p.Complete(context.Background(), Request{History: history})
	if err != nil || len(reply.Messages) != 1 {
		t.Fatalf("a command that ignores stdin: %v %v", reply, err)
	}
	p, _ = newExecTest(t, `n=$(wc -l); echo "{\"role\":\"assistant\",\"content\":\"$n\"}"`, 10*time.Second)
	reply, err = p.Complete(context.Background(), Request{History: history})
	if err != nil || strings.TrimSpace(reply.Messages[0].Text()) != "5000" {
		t.Fatalf("a command that reads stdin: %v %v", reply, err)
	}
}
