package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// A lone surrogate escape in a raw value (content, tool calls, a field the
// store keeps as sent) is refused by every write, and nothing is written:
// kept as sent, it made the transcript unreadable to jq.
func TestLoneSurrogateRefused(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "lone")
	mustAppend(t, s, id, textMsg("user", "kept"))
	logBefore := storetest.MustRead(t, s.logPath(id))
	docBefore := storetest.MustRead(t, s.docPath(id))
	for _, tc := range []struct {
		field string
		msg   Message
	}{
		{"content", Message{Role: "user", Content: json.RawMessage(`"a \ud800 b"`)}},
		{"content", Message{Role: "user", Content: json.RawMessage(`[{"type":"text","text":"\uDE00\uD83D"}]`)}},
		{"tool_calls", Message{Role: "assistant", Content: json.RawMessage(`null`), ToolCalls: json.RawMessage(`[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":\"\udc00\"}"}}]`)}},
		{"reasoning", Message{Role: "assistant", Content: json.RawMessage(`"x"`), Extra: map[string]json.RawMessage{"a": json.RawMessage(`"ok"`), "reasoning": json.RawMessage(`"\udbff"`)}}},
	} {
		msgs := []Message{textMsg("user", "fine"), tc.msg}
		check := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(fmt.Sprint(err), "message 2: "+tc.field+" holds") {
				t.Fatalf("%s of %s: %v, want ErrInvalid naming message 2's %s", what, tc.msg.Content, err, tc.field)
			}
		}
		_, err := s.Append(id, msgs)
		check("Append", err)
		_, err = s.Save(id, append([]Message{textMsg("user", "kept")}, msgs...), false)
		check("Save", err)
		_, err = s.Save(id, msgs, true)
		check("Save --force", err)
		_, _, err = s.CreateWith(Session{ID: "lone2"}, msgs)
		check("CreateWith", err)
	}
	if b := storetest.MustRead(t, s.logPath(id)); string(b) != string(logBefore) {
		t.Fatalf("a refused write changed the transcript:\n%s", b)
	}
	if b := storetest.MustRead(t, s.docPath(id)); string(b) != string(docBefore) {
		t.Fatalf("a refused write changed the document:\n%s", b)
	}
	if names := strings.Join(storetest.DirNames(t, s.Dir), " "); strings.Contains(names, "replaced") || strings.Contains(names, "lone2") {
		t.Fatalf("a refused write left files: %s", names)
	}
	mustAppend(t, s, id, Message{Role: "user", Content: json.RawMessage(`"\ud83d\ude00 \\ud800"`)})
}
