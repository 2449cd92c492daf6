package importer

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore/usage"
)

// calls returns the calls the messages of s hold, in order.
func callsOf(t *testing.T, s Session) []usage.Call {
	t.Helper()
	var out []usage.Call
	for _, m := range s.Messages {
		c, ok, err := usage.Of(m)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			out = append(out, c)
		}
	}
	return out
}

// TestClaudeUsageOncePerResponse: one response spans several lines, each
// with its usage so far; it is one call, with the last line's usage (as
// ccusage counts it), on the message the lines make. A response id met
// again after other lines is that call again; a synthetic notice is no
// call; an abandoned branch's call is kept with the message before it.
func TestClaudeUsageOncePerResponse(t *testing.T) {
	line := func(uuid, parent, typ, msg string) string {
		p := `null`
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"parentUuid":` + p + `,"isSidechain":false,"sessionId":"s1","type":"` + typ + `","uuid":"` + uuid + `","timestamp":"2025-04-01T08:00:0` + uuid + `.000Z","requestId":"req_` + uuid + `","message":` + msg + `}`
	}
	u := func(in, out int) string {
		return `"usage":{"input_tokens":` + strconv.Itoa(in) + `,"cache_creation_input_tokens":500,"cache_read_input_tokens":9000,"output_tokens":` + strconv.Itoa(out) +
			`,"cache_creation":{"ephemeral_5m_input_tokens":300,"ephemeral_1h_input_tokens":100}}`
	}
	file := strings.Join([]string{
		line("1", "", "user", `{"role":"user","content":"hi"}`),
		line("2", "1", "assistant", `{"id":"msg_A","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"thinking","thinking":"…"}],`+u(3, 8)+`}`),
		line("3", "2", "assistant", `{"id":"msg_A","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"ls"}],`+u(3, 8)+`}`),
		line("4", "3", "assistant", `{"id":"msg_A","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],`+u(3, 40)+`}`),
		line("5", "4", "user", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]}`),
		line("9", "5", "assistant", `{"id":"msg_X","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"abandoned"}],`+u(5, 1)+`}`),
		line("6", "5", "assistant", `{"id":"msg_A","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"late block"}],`+u(3, 40)+`}`),
		line("7", "6", "assistant", `{"id":"msg_B","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"done"}],`+u(7, 2)+`}`),
		line("8", "7", "assistant", `{"id":"msg_C","role":"assistant","model":"<synthetic>","content":[{"type":"text","text":"No response requested."}],"usage":{"input_tokens":0,"output_tokens":0}}`),
	}, "\n")
	ss, err := Parse(strings.NewReader(file), FormatClaudeCode)
	if err != nil {
		t.Fatal(err)
	}
	got := callsOf(t, ss[0])
	want := []usage.Call{
		{ID: "claude-code:msg_A", Input: 3, Output: 40, CacheRead: 9000, CacheWrite5m: 400, CacheWrite1h: 100, Model: "claude-sonnet-4-5-20250929", Provider: "anthropic", RequestID: "req_6"},
		{ID: "claude-code:msg_B", Input: 7, Output: 2, CacheRead: 9000, CacheWrite5m: 400, CacheWrite1h: 100, Model: "claude-sonnet-4-5-20250929", Provider: "anthropic", RequestID: "req_7"},
	}
	if len(got) != len(want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if c, _, _ := usage.Of(ss[0].Messages[1]); c.ID != "claude-code:msg_A" || ss[0].Messages[1].TS != "2025-04-01T08:00:02.000000Z" {
		t.Errorf("message 2 (%s) holds %+v", ss[0].Messages[1].TS, c)
	}
	msgs := ss[0].Messages
	others, err := usage.Others(msgs[len(msgs)-1])
	if err != nil || len(others) != 1 || others[0].ID != "claude-code:msg_X" || others[0].Output != 1 || others[0].TS != "2025-04-01T08:00:09.000000Z" {
		t.Errorf("the last message holds the other calls %+v (%v)", others, err)
	}
}

// TestCodexTokenCount: each token_count event whose total moved is a
// call, last_token_usage's tokens (input counting the cached ones), on
// the response's assistant message; a repeated or empty event is none.
func TestCodexTokenCount(t *testing.T) {
	tc := func(ts string, in, cached, out, reasoning, totalIn int) string {
		return `{"timestamp":"` + ts + `","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":` + strconv.Itoa(totalIn) +
			`,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":0},"last_token_usage":{"input_tokens":` + strconv.Itoa(in) +
			`,"cached_input_tokens":` + strconv.Itoa(cached) + `,"output_tokens":` + strconv.Itoa(out) + `,"reasoning_output_tokens":` + strconv.Itoa(reasoning) + `,"total_tokens":0}}}}`
	}
	file := strings.Join([]string{
		`{"timestamp":"2025-09-20T10:00:00.000Z","type":"session_meta","payload":{"id":"cx1","timestamp":"2025-09-20T10:00:00.000Z","cwd":"/p"}}`,
		`{"timestamp":"2025-09-20T10:00:00.100Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}`,
		`{"timestamp":"2025-09-20T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`,
		`{"timestamp":"2025-09-20T10:00:01.500Z","type":"event_msg","payload":{"type":"token_count","info":null}}`,
		`{"timestamp":"2025-09-20T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}}`,
		tc("2025-09-20T10:00:02.100Z", 1000, 800, 50, 20, 1000),
		tc("2025-09-20T10:00:02.200Z", 1000, 800, 50, 20, 1000),
		`{"timestamp":"2025-09-20T10:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"ok"}}`,
		`{"timestamp":"2025-09-20T10:00:04.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`,
		tc("2025-09-20T10:00:04.100Z", 1100, 1000, 5, 0, 2100),
	}, "\n")
	ss, err := Parse(strings.NewReader(file), FormatCodex)
	if err != nil {
		t.Fatal(err)
	}
	got := callsOf(t, ss[0])
	want := []usage.Call{
		{ID: "codex:cx1:1", Input: 1000, Output: 50, CacheRead: 800, Reasoning: 20, InputHasCache: true, Model: "gpt-5-codex", Provider: "openai"},
		{ID: "codex:cx1:2", Input: 1100, Output: 5, CacheRead: 1000, InputHasCache: true, Model: "gpt-5-codex", Provider: "openai"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("calls:\n got %+v\nwant %+v", got, want)
	}
}

// TestHermesSessionTotals: the Python agent's session totals are the
// session's Totals, a call of its model with no id (the import gives it
// one); a session that counts no token has none.
func TestHermesSessionTotals(t *testing.T) {
	in := `{"id":"py1","model":"claude-sonnet-4","billing_provider":"anthropic","input_tokens":1200,"output_tokens":300,"cache_read_tokens":5000,"cache_write_tokens":700,"reasoning_tokens":40,"messages":[{"role":"user","content":"hi"}]}
{"id":"py2","messages":[{"role":"user","content":"hi"}]}`
	ss, err := Parse(strings.NewReader(in), FormatHermesJSONL)
	if err != nil {
		t.Fatal(err)
	}
	want := usage.Call{ID: "-", Input: 1200, Output: 300, CacheRead: 5000, CacheWrite5m: 700, Reasoning: 40, Model: "claude-sonnet-4", Provider: "anthropic"}
	if ss[0].Totals == nil || *ss[0].Totals != want {
		t.Errorf("totals %+v, want %+v", ss[0].Totals, want)
	}
	if ss[1].Totals != nil {
		t.Errorf("totals of a session with none: %+v", ss[1].Totals)
	}
	if _, err := Parse(strings.NewReader(`{"id":"py3","input_tokens":-5,"messages":[]}`), FormatHermesJSONL); err == nil {
		t.Error("negative totals were taken")
	}
}
