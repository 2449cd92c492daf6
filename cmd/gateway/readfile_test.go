package gateway

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// reads calls read_file on the path the user names, and answers with the
// result's text once it comes.
func reads() *funcProvider {
	return &funcProvider{name: "reads", fn: func(_ context.Context, req provider.Request) (provider.Reply, error) {
		h := historyOf(req.History)
		last := h[len(h)-1]
		if last.Role == "tool" {
			return assistant("the file said: " + last.Text()), nil
		}
		args, _ := json.Marshal(map[string]string{"path": last.Text()})
		calls, _ := json.Marshal([]provider.ToolCall{{ID: "call_1", Type: "function", Function: provider.ToolFunction{Name: "read_file", Arguments: string(args)}}})
		return provider.Reply{Messages: []sessions.Message{{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: calls}}}, nil
	}}
}

// With gateway.tools: [read_file], a FIFO, a socket or a device is an
// error to the model at once, and the reply comes (issue 27 item 4: the
// conversation stayed wedged in the FIFO's open, even after the client
// left).
func TestGatewayReadFileSpecialFiles(t *testing.T) {
	t.Parallel()
	tools, err := agent.Select([]string{"read_file"}, false)
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(o *Options) {
		o.Provider = reads()
		o.Tools = tools
	})
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for path, kind := range map[string]string{
		fifo:        "a named pipe (FIFO)",
		sock:        "a socket",
		"/dev/zero": "a character device",
		"/dev/null": "a character device",
	} {
		resp, body := e.do("POST", "/v1/chat/completions", map[string]any{
			"messages": []any{map[string]any{"role": "user", "content": path}},
		}, nil)
		mustStatus(t, resp, body, 200)
		c := decode[chatResp](t, body)
		want := "the file said: error: read_file: " + path + " is " + kind + ", not a regular file"
		if got := c.Choices[0].Message.Content; got != want || c.Choices[0].FinishReason != "stop" {
			t.Errorf("reply %q (%s), want %q", got, c.Choices[0].FinishReason, want)
		}
		if got := roles(messages(t, e.sessions, resp.Header.Get(SessionHeader))); got != "user assistant tool assistant" {
			t.Errorf("%s: transcript %s", path, got)
		}
	}
}
