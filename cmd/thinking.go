package cmd

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/hermes/hermes/cmd/provider"
)

// thinkingWriter is line mode's stream of a reply: its text as it comes
// and, when show, an anthropic reply's thinking blocks, each as it ends
// (before the text that follows), dimmed when color; a redacted block is
// named. The thinking stays in the transcript either way.
func thinkingWriter(w io.Writer, show, color bool) provider.BlockWriter {
	return &thinkingStream{Writer: w, show: show, color: color}
}

type thinkingStream struct {
	io.Writer
	show, color bool
}

func (s *thinkingStream) WriteBlock(raw json.RawMessage) error {
	if !s.show {
		return nil
	}
	var b struct {
		Type     string `json:"type"`
		Thinking string `json:"thinking"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return err
	}
	text := strings.TrimRight(b.Thinking, "\n")
	if b.Type == "redacted_thinking" {
		text = "(redacted thinking)"
	}
	if text == "" {
		return nil
	}
	if s.color {
		text = "\x1b[2m" + text + "\x1b[0m"
	}
	_, err := io.WriteString(s.Writer, text+"\n")
	return err
}
