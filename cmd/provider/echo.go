package provider

import (
	"context"
	"fmt"

	"github.com/hermes/hermes/fsstore"
)

// echoProvider answers without a model, the same way every time, so that
// chat can be used and tested offline.
type echoProvider struct{}

func (echoProvider) Name() string { return "echo" }

func (echoProvider) Complete(ctx context.Context, req Request) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	last := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			last = req.Messages[i].Text()
			break
		}
	}
	text := fmt.Sprintf("echo: %d messages received; you said: %s", len(req.Messages), last)
	(&streamWriter{w: req.Stream}).WriteString(text)
	return Reply{Messages: []fsstore.Message{{Role: "assistant", Content: fsstore.TextContent(text)}}}, nil
}
