package sessions

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
)

// TestMessageRoundTrip: a message read from JSON and written back says the
// same thing in the store's spelling: content as a string, as a list of
// parts, or null with tool calls, and fields the store does not know are
// kept. seq and ts come first, so a line's position is in its first bytes.
func TestMessageRoundTrip(t *testing.T) {
	cases := []struct {
		name, in, out string
	}{
		{"string content",
			`{"role":"user","content":"héllo \"you\" <b>&</b>\n"}`,
			`{"seq":7,"ts":"2026-11-21T02:07:34.123456Z","role":"user","content":"héllo \"you\" <b>&</b>\n"}`},
		{"list of parts",
			`{"content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:x"}}],"role":"user"}`,
			`{"seq":7,"ts":"2026-11-21T02:07:34.123456Z","role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:x"}}]}`},
		{"null content with tool calls",
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]}`,
			`{"seq":7,"ts":"2026-11-21T02:07:34.123456Z","role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]}`},
		{"tool result",
			`{"role":"tool","tool_call_id":"call_1","name":"ls","content":"a\nb"}`,
			`{"seq":7,"ts":"2026-11-21T02:07:34.123456Z","role":"tool","content":"a\nb","tool_call_id":"call_1","name":"ls"}`},
		{"unknown fields kept, sorted",
			`{"zeta":{"b":[1, 2.50, "x"]},"role":"assistant","content":"ok","reasoning_content":"because","refusal":null}`,
			`{"seq":7,"ts":"2026-11-21T02:07:34.123456Z","role":"assistant","content":"ok","reasoning_content":"because","refusal":null,"zeta":{"b":[1,2.50,"x"]}}`},
		{"stored seq and ts replaced",
			`{"seq":1,"ts":"2020-01-01T00:00:00Z","role":"system","content":"s"}`,
			`{"seq":7,"ts":"2026-11-21T02:07:34.123456Z","role":"system","content":"s"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseMessage([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			m.Seq, m.TS = 7, "2026-11-21T02:07:34.123456Z"
			b, err := m.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.out {
				t.Fatalf("marshaled\n  %s\nwant\n  %s", b, c.out)
			}
			if !strings.HasPrefix(string(b), `{"seq":7,"ts":"2026-11-21T02:07:34.123456Z",`) {
				t.Fatalf("seq and ts are not first: %s", b)
			}
			if !json.Valid(b) {
				t.Fatalf("not valid JSON: %s", b)
			}
			// Reading the written line back gives the same message and the
			// same bytes again.
			back, err := ParseMessage(b)
			if err != nil {
				t.Fatal(err)
			}
			if !back.SameAs(m) || back.Seq != 7 || back.TS != "2026-11-21T02:07:34.123456Z" {
				t.Fatalf("read back %+v, want %+v", back, m)
			}
			if b2, _ := back.MarshalJSON(); string(b2) != string(b) {
				t.Fatalf("second round trip\n  %s\nwant\n  %s", b2, b)
			}
			// The chat form has no seq, ts or extra fields.
			var chat map[string]json.RawMessage
			if err := json.Unmarshal(m.ChatJSON(), &chat); err != nil {
				t.Fatalf("ChatJSON: %v: %s", err, m.ChatJSON())
			}
			if _, ok := chat["seq"]; ok {
				t.Fatalf("ChatJSON has seq: %s", m.ChatJSON())
			}
			if _, ok := chat["ts"]; ok {
				t.Fatalf("ChatJSON has ts: %s", m.ChatJSON())
			}
		})
	}
}

// TestMessageRoundTripThroughStore: what goes in through Append comes out
// of the transcript unchanged.
func TestMessageRoundTripThroughStore(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "s1")
	in := []string{
		`{"role":"user","content":"plain"}`,
		`{"role":"user","content":[{"type":"text","text":"part"}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		`{"role":"tool","content":"out","tool_call_id":"c1","custom":{"k":"v"}}`,
	}
	var msgs []Message
	for _, line := range in {
		m, err := ParseMessage([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if _, err := s.Append(id, msgs); err != nil {
		t.Fatal(err)
	}
	got := readMessages(t, s, id)
	if len(got) != len(in) {
		t.Fatalf("%d messages, want %d", len(got), len(in))
	}
	for i, m := range got {
		want, _ := ParseMessage([]byte(in[i]))
		if !m.SameAs(want) || m.Seq != int64(i+1) || m.TS == "" {
			t.Errorf("message %d: %s, want %s with seq %d and a ts", i+1, m.ChatJSON(), in[i], i+1)
		}
		// The chat form is what a provider gets: no seq, ts or extra fields.
		chat := want
		chat.Extra = nil
		if string(m.ChatJSON()) != string(chat.ChatJSON()) || strings.Contains(string(m.ChatJSON()), "custom") {
			t.Errorf("message %d: chat form %s", i+1, m.ChatJSON())
		}
	}
}

// TestParseMessageRejects: ParseMessage refuses what is not a chat message.
func TestParseMessageRejects(t *testing.T) {
	for _, line := range []string{
		``, `null`, `[]`, `"x"`, `{"role":"robot","content":"x"}`, `{"content":"x"}`,
		`{"role":"user","content":42}`, `{"role":"user","content":{"a":1}}`,
		`{"role":"assistant","tool_calls":{"id":1}}`, `{"role":"user","content":"x"`,
	} {
		if m, err := ParseMessage([]byte(line)); err == nil {
			t.Errorf("ParseMessage(%q) = %+v, want an error", line, m)
		}
	}
}

// The error of a malformed message keeps the decoder's, so a caller can
// learn where the JSON broke.
func TestParseMessageKeepsTheCause(t *testing.T) {
	_, err := ParseMessage([]byte(`{"role":"user","content":"x"`))
	var syntax *json.SyntaxError
	if !errors.Is(err, fsstore.ErrInvalid) || !errors.As(err, &syntax) {
		t.Fatalf("err %v (%T): want fsstore.ErrInvalid wrapping a *json.SyntaxError", err, err)
	}
}

func TestContentText(t *testing.T) {
	for raw, want := range map[string]string{
		`"plain text"`:                    "plain text",
		`"a \"quoted\" word\nand a line"`: "a \"quoted\" word\nand a line",
		`"\u00e9t\u00e9"`:                 "été",
		`""`:                              "",
		`[{"type":"text","text":"one"},{"type":"image_url","image_url":{"url":"x"}},{"type":"output_text","text":"two"}]`: "one\ntwo",
		`null`: "",
	} {
		if got := ContentText(json.RawMessage(raw)); got != want {
			t.Errorf("ContentText(%s) = %q, want %q", raw, got, want)
		}
	}
}
