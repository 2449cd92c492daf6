package provider

import (
	"context"
	"fmt"

	"github.com/hermes/hermes/fsstore/sessions"
)

// echoProvider answers without a model, the same way every time, so that
// chat can be used and tested offline.
type echoProvider struct{}

func (echoProvider) Name() string { return "echo" }

func (echoProvider) Complete(ctx context.Context, req Request) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	n, last := 0, sessions.Message{}
	err := req.History.Each(func(m sessions.Message) error {
		n++
		if m.Role == "user" {
			last = m // its text is decoded once, at the end
		}
		return nil
	})
	if err != nil {
		return Reply{}, err
	}
	text := fmt.Sprintf("echo: %d messages received; you said: %s", n, last.Text())
	(&streamWriter{w: req.Stream}).WriteString(text)
	return Reply{Messages: []sessions.Message{{Role: "assistant", Content: sessions.TextContent(text)}}}, nil
}
