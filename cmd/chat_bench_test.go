package cmd

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/profiles"
	"github.com/hermes/hermes/scripts/fixture"
)

// stopAtCall is a provider that notes when it was called and fails, so a
// benchmark measures the way to the provider call and nothing after it.
type stopAtCall struct{ at time.Time }

var errStop = errors.New("stop")

func (p *stopAtCall) Name() string { return "stop" }
func (p *stopAtCall) Complete(context.Context, provider.Request) (provider.Reply, error) {
	p.at = time.Now()
	return provider.Reply{}, errStop
}

// benchEnv writes one session of n messages and returns an env on it.
func benchEnv(b *testing.B, n int) (*env, string) {
	root := b.TempDir()
	p := profiles.Profile{Root: root, Name: "default"}
	ids, err := fixture.Write(filepath.Join(p.Dir(), "sessions"), fixture.Options{Sessions: 1, Messages: n, BytesPerMessage: 200})
	if err != nil {
		b.Fatal(err)
	}
	return &env{profile: p, lockTimeout: 10 * time.Second, stdout: io.Discard, stderr: io.Discard}, ids[0]
}

// benchChatter is a chat on session id with prov and no tools.
func benchChatter(e *env, prov provider.Provider, id string) *chatter {
	st := e.sessions()
	return &chatter{e: e, store: st, engine: &agent.Engine{Sessions: st, Provider: prov}, toolEnv: &agent.Env{}, sessionID: id}
}

// BenchmarkResumeToProvider is the way of `chat --resume` on a session of
// 100,000 messages, from the start of the turn to the provider call: read
// the document, store the user message (synced). The provider reads the
// history itself, as a stream: BenchmarkResumeEchoTurn measures a whole
// turn that reads all of it. Compare both with BenchmarkExport of the same
// session.
func BenchmarkResumeToProvider(b *testing.B) {
	e, id := benchEnv(b, 100_000)
	p := &stopAtCall{}
	ch := benchChatter(e, p, id)
	var total time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		if _, err := ch.turn(context.Background(), "hi"); !errors.Is(err, errStop) {
			b.Fatal(err)
		}
		total += p.at.Sub(start)
		n++
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(n), "ms-to-provider")
}

// BenchmarkResumeEchoTurn is a whole `chat --resume` turn on a session of
// 100,000 messages with the echo provider, which reads every message of
// the history, and stores its reply.
func BenchmarkResumeEchoTurn(b *testing.B) {
	e, id := benchEnv(b, 100_000)
	echo, err := provider.New(provider.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ch := benchChatter(e, echo, id)
	for b.Loop() {
		if _, err := ch.turn(context.Background(), "hi"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExport streams the same session as `sessions export` does.
func BenchmarkExport(b *testing.B) {
	e, id := benchEnv(b, 100_000)
	b.ResetTimer()
	for b.Loop() {
		if err := exportSessions(e, []string{id}, "jsonl"); err != nil {
			b.Fatal(err)
		}
	}
}
