package sessions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func callMsg(id string) Message {
	return Message{Role: "assistant", Content: json.RawMessage("null"),
		ToolCalls: json.RawMessage(`[{"id":"` + id + `","type":"function","function":{"name":"work","arguments":"{}"}}]`)}
}

func resultMsg(id, text string) Message {
	return Message{Role: "tool", ToolCallID: id, Content: TextContent(text)}
}

// What a tool call's turns must never store, each found by Check and, with
// repair, dropped: the transcript written again without it, the old one
// kept whole beside it; a second check finds nothing.
func TestCheckToolCalls(t *testing.T) {
	for _, c := range []struct {
		name  string
		msgs  []Message
		what  string
		after string // the roles left
	}{
		{"a call answered twice", []Message{textMsg("user", "go"), callMsg("c1"), resultMsg("c1", "interrupted"), resultMsg("c1", "cancelled by the user"), textMsg("assistant", "done")},
			"seq 4 is a second result of call c1, answered at seq 3", "user assistant tool assistant"},
		{"a result after its turn's end, then the reply again", []Message{textMsg("user", "go"), callMsg("c1"), resultMsg("c1", "abandoned"), textMsg("assistant", "done"), resultMsg("c1", "worked late"), textMsg("assistant", "done")},
			"seq 5 is a second result of call c1, answered at seq 3; seq 6 repeats the reply at seq 4 (a reply stored twice)", "user assistant tool assistant"},
		{"a result after the reply of a turn that left it unanswered", []Message{textMsg("user", "go"), callMsg("c1"), textMsg("assistant", "done"), resultMsg("c1", "late")},
			"seq 4 is a result of call c1 (seq 2) stored after its turn ended", "user assistant assistant"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _, _ := newTestStore(t)
			id := mustCreate(t, s, "s1")
			mustAppend(t, s, id, c.msgs...)
			before, err := os.ReadFile(s.logPath(id))
			if err != nil {
				t.Fatal(err)
			}
			found, err := s.Check(false, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 1 || found[0].What != "tool calls: "+c.what || !found[0].Problem {
				t.Fatalf("findings %+v, want one: %s", found, c.what)
			}
			found, err = s.Check(true, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 1 || !found[0].Repaired || !strings.Contains(found[0].What, "dropped, the transcript as it was kept in ") {
				t.Fatalf("repair: %+v", found)
			}
			kept := strings.TrimSpace(found[0].What[strings.LastIndex(found[0].What, " ")+1:])
			aside, err := os.ReadFile(kept)
			if err != nil {
				t.Fatal(err)
			}
			if string(aside) != string(before) {
				t.Fatalf("the transcript kept aside differs from the one repaired:\n%s\n%s", aside, before)
			}
			if filepath.Dir(kept) != filepath.Dir(s.logPath(id)) {
				t.Fatalf("kept in %s", kept)
			}
			var roles []string
			for _, m := range readMessages(t, s, id) {
				roles = append(roles, m.Role)
			}
			if got := strings.Join(roles, " "); got != c.after {
				t.Fatalf("after repair: %s, want %s", got, c.after)
			}
			// The copy kept aside is reported as such, and nothing else.
			if found, err = s.Check(false, t.TempDir()); err != nil || len(found) != 1 || found[0].Problem || found[0].Path != kept {
				t.Fatalf("after repair: %+v, %v", found, err)
			}
		})
	}
}

// Transcripts that keep the rules are not reported: parallel calls
// answered in any order, a client's calls answered in its next request,
// the same reply to two user messages, notes between a call and its
// result, and a result of a call the transcript does not hold (an import
// that begins mid-turn).
func TestCheckToolCallsClean(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "s1")
	two := Message{Role: "assistant", Content: json.RawMessage("null"),
		ToolCalls: json.RawMessage(`[{"id":"a","type":"function","function":{"name":"x","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"x","arguments":"{}"}}]`)}
	note := Message{Role: "system", Content: TextContent("resumed"), Extra: map[string]json.RawMessage{noteMarker: json.RawMessage("true")}}
	mustAppend(t, s, id,
		resultMsg("before", "from an earlier log"),
		textMsg("user", "go"), two, resultMsg("b", "2"), note, resultMsg("a", "1"), textMsg("assistant", "ok"),
		textMsg("user", "again"), textMsg("assistant", "ok"),
		textMsg("user", "client"), callMsg("c"), resultMsg("c", "client's result"), textMsg("assistant", "thanks"),
	)
	found, err := s.Check(false, t.TempDir())
	if err != nil || len(found) != 0 {
		t.Fatalf("findings %+v, %v", found, err)
	}
}
