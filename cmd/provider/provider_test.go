package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// transcript parses JSONL lines into messages, numbering them as the store would.
func transcript(t *testing.T, lines ...string) Messages {
	t.Helper()
	var msgs []sessions.Message
	for i, line := range lines {
		m, err := sessions.ParseMessage([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		m.Seq = int64(i + 1)
		m.TS = "2026-01-02T03:04:05.000000006Z"
		msgs = append(msgs, m)
	}
	return msgs
}

// chatLines is each message's ChatJSON, one a line, for comparing replies.
func chatLines(msgs []sessions.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.Write(m.ChatJSON())
		b.WriteByte('\n')
	}
	return b.String()
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		name    string // want this provider
		unknown bool   // want an error matching ErrUnknownProvider
	}{
		{cfg: Config{}, name: "echo"},
		{cfg: Config{Name: "echo"}, name: "echo"},
		{cfg: Config{Name: "openai", Model: "m"}, name: "openai"},
		{cfg: Config{Name: "anthropic", Model: "m"}, name: "anthropic"},
		{cfg: Config{Name: "exec", ExecCommand: "true"}, name: "exec"},
		{cfg: Config{Name: "gemini"}, unknown: true},
		{cfg: Config{Name: "Echo"}, unknown: true},
		{cfg: Config{Name: "openai"}},                                        // no model
		{cfg: Config{Name: "openai", Model: "m", BaseURL: "localhost:8080"}}, // no scheme
		{cfg: Config{Name: "exec", ExecCommand: "  "}},
	} {
		p, err := New(tc.cfg)
		if tc.name != "" {
			if err != nil || p.Name() != tc.name {
				t.Errorf("New(%+v) = %v, %v; want provider %s", tc.cfg, p, err, tc.name)
			}
			continue
		}
		if err == nil {
			t.Errorf("New(%+v) = %v, want an error", tc.cfg, p.Name())
			continue
		}
		if !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("New(%+v) error %q does not match fsstore.ErrInvalid", tc.cfg, err)
		}
		if got := errors.Is(err, ErrUnknownProvider); got != tc.unknown {
			t.Errorf("New(%+v) error %q: errors.Is(ErrUnknownProvider) = %v, want %v", tc.cfg, err, got, tc.unknown)
		}
	}
}

func TestEchoReply(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := transcript(t,
		`{"role":"system","content":"be brief"}`,
		`{"role":"user","content":"first"}`,
		`{"role":"assistant","content":"ok"}`,
		`{"role":"user","content":[{"type":"text","text":"hello"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"world"}]}`,
	)
	var stream strings.Builder
	reply, err := p.Complete(context.Background(), Request{SessionID: "s", History: msgs, Stream: &stream})
	if err != nil {
		t.Fatal(err)
	}
	const want = "echo: 4 messages received; you said: hello\nworld"
	if got := chatLines(reply.Messages); got != `{"role":"assistant","content":"echo: 4 messages received; you said: hello\nworld"}`+"\n" {
		t.Errorf("reply = %s", got)
	}
	if reply.Messages[0].Text() != want {
		t.Errorf("reply text = %q, want %q", reply.Messages[0].Text(), want)
	}
	if stream.String() != want {
		t.Errorf("streamed %q, want %q", stream.String(), want)
	}
	if reply.Usage != nil {
		t.Errorf("usage = %+v, want nil", reply.Usage)
	}

	reply, err = p.Complete(context.Background(), Request{History: msgs[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reply.Messages[0].Text(), "echo: 1 messages received; you said: "; got != want {
		t.Errorf("with no user message: %q, want %q", got, want)
	}
}
