package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

// On a terminal, an anthropic reply's thinking is shown dimmed as each
// block ends, before the text; a redacted block is named, not shown;
// NO_COLOR shows it undimmed, and anthropic.show_thinking: false not at
// all.
func TestThinkingShownDimmed(t *testing.T) {
	for _, c := range []struct {
		show, color bool
		want        string
	}{
		{true, true, "\x1b[2mweighing it\x1b[0m\n\x1b[2m(redacted thinking)\x1b[0m\nthe answer"},
		{true, false, "weighing it\n(redacted thinking)\nthe answer"},
		{false, true, "the answer"},
	} {
		var out strings.Builder
		w := thinkingWriter(&out, c.show, c.color)
		if err := w.WriteBlock(json.RawMessage(`{"type":"thinking","thinking":"weighing it","signature":"s"}`)); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteBlock(json.RawMessage(`{"type":"redacted_thinking","data":"xyz"}`)); err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("the answer"))
		if out.String() != c.want {
			t.Errorf("show %v, color %v: %q, want %q", c.show, c.color, out.String(), c.want)
		}
	}
}
