package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/testtmp"
)

const fixtures = "../../testdata/import"

// TestMain reads naive times in UTC, whatever the machine's zone, unless a
// test says otherwise.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(testtmp.Main(m))
}

// TestTimesNaiveAndEpoch: a time without a zone is local time where the
// file was written, read in this process's zone; Unix seconds keep their
// microseconds.
func TestTimesNaiveAndEpoch(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skipf("no time zone data for Asia/Tokyo (apt-get install tzdata): %v", err)
	}
	time.Local = tokyo
	defer func() { time.Local = time.UTC }()
	got, err := parseTimeJSON(json.RawMessage(`"2025-03-01T19:15:00.123456"`))
	if err != nil {
		t.Fatal(err)
	}
	wantTime(t, "naive Tokyo time", got, "2025-03-01T10:15:00.123456Z")
	for raw, want := range map[string]string{
		`1750000000.123456`: "2025-06-15T15:06:40.123456Z",
		`1750000000.000001`: "2025-06-15T15:06:40.000001Z",
		`1750000000`:        "2025-06-15T15:06:40Z",
	} {
		got, err := parseTimeJSON(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, raw, got, want)
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// parseFixture parses a fixture with detection, as `hermes sessions import`
// without --format does.
func parseFixture(t *testing.T, name string) []Session {
	t.Helper()
	sessions, err := Parse(bytes.NewReader(readFixture(t, name)), "")
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return sessions
}

func roles(msgs []sessions.Message) string {
	var r []string
	for _, m := range msgs {
		r = append(r, m.Role)
	}
	return strings.Join(r, ",")
}

func wantRoles(t *testing.T, msgs []sessions.Message, want string) {
	t.Helper()
	if got := roles(msgs); got != want {
		t.Fatalf("roles = %s\nwant    %s", got, want)
	}
}

func wantContent(t *testing.T, m sessions.Message, want string) {
	t.Helper()
	if string(m.Content) != want {
		t.Errorf("%s content = %s, want %s", m.Role, m.Content, want)
	}
}

func calls(t *testing.T, m sessions.Message) []provider.ToolCall {
	t.Helper()
	var c []provider.ToolCall
	if err := json.Unmarshal(m.ToolCalls, &c); err != nil {
		t.Fatalf("tool_calls %s: %v", m.ToolCalls, err)
	}
	return c
}

func wantCalls(t *testing.T, m sessions.Message, want ...provider.ToolCall) {
	t.Helper()
	got := calls(t, m)
	if len(got) != len(want) {
		t.Fatalf("tool_calls = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("tool_calls[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func wantTime(t *testing.T, what string, got time.Time, want string) {
	t.Helper()
	w, err := time.Parse(time.RFC3339Nano, want)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(w) || got.Location() != time.UTC {
		t.Errorf("%s = %v, want %v UTC", what, got, w)
	}
}

func TestDetectFixtures(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"hermes_session.json", FormatHermesJSON},
		{"hermes_export.jsonl", FormatHermesJSONL},
		{"claude_code.jsonl", FormatClaudeCode},
		{"codex_rollout.jsonl", FormatCodex},
		{"hermes/session_20250610_091500_aa11bb.json", FormatHermesJSON},
		{"hermes_export_chain.jsonl", FormatHermesJSONL},
		{claudeMain, FormatClaudeCode},
		{claudeAgent, FormatClaudeCode},
		{codexBase, FormatCodex},
	} {
		data := readFixture(t, tc.file)
		got, err := Detect(data)
		if err != nil || got != tc.want {
			t.Errorf("Detect(%s) = %q, %v; want %q", tc.file, got, err, tc.want)
		}
		// A caller may pass only the first bytes of a large file.
		got, err = Detect(data[:min(len(data), 300)])
		if err != nil || got != tc.want {
			t.Errorf("Detect(first 300 bytes of %s) = %q, %v; want %q", tc.file, got, err, tc.want)
		}
	}
}

func TestDetectOtherShapes(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"compact hermes-json", `{"session_id":"s1","model":"m","messages":[]}`, FormatHermesJSON},
		{"pretty-printed, messages first", "{\n  \"messages\": []\n}\n", FormatHermesJSON},
		{"pretty-printed and cut short", "{\n  \"messages\": [\n    {\"role\": \"user\", \"con", FormatHermesJSON},
		{"one-line export", `{"messages":[],"id":"s"}` + "\n", FormatHermesJSONL},
		{"claude starting with a snapshot", `{"type":"file-history-snapshot","messageId":"x","snapshot":{}}` + "\n", FormatClaudeCode},
		{"bare codex meta", `{"id":"0196","timestamp":"2025-05-01T12:00:00Z","instructions":null}` + "\n", FormatCodex},
		{"BOM and blank lines", "\xef\xbb\xbf\n\n" + `{"id":"s","messages":[]}`, FormatHermesJSONL},
	} {
		got, err := Detect([]byte(tc.data))
		if err != nil || got != tc.want {
			t.Errorf("%s: Detect = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestDetectRejects(t *testing.T) {
	for _, data := range []string{"", " \n\t", "[]", `[{"role":"user"}]`, "hello", `{"foo":1}`, "null"} {
		got, err := Detect([]byte(data))
		if !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("Detect(%q) = %q, %v; want ErrInvalid", data, got, err)
		}
	}
}

func TestParseHermesJSON(t *testing.T) {
	sessions := parseFixture(t, "hermes_session.json")
	if len(sessions) != 1 {
		t.Fatalf("got %d sessions", len(sessions))
	}
	s := sessions[0]
	if s.ID != "20250301_101500_ab12cd" || s.Model != "anthropic/claude-sonnet-4" || s.Source != "telegram" || s.Title != "" {
		t.Errorf("metadata = %q %q %q %q", s.ID, s.Model, s.Source, s.Title)
	}
	wantTime(t, "CreatedAt", s.CreatedAt, "2025-03-01T10:15:00.123456Z")
	wantRoles(t, s.Messages, "system,user,assistant,tool,assistant")
	wantContent(t, s.Messages[0], `"You are Hermes, a helpful agent."`)
	wantContent(t, s.Messages[1], `"What is in /tmp?"`)
	wantCalls(t, s.Messages[2], newToolCall("call_ls1", "terminal", `{"command": "ls /tmp"}`))
	if got := string(s.Messages[2].Extra["reasoning"]); got != `"The user wants a directory listing."` {
		t.Errorf("unknown key reasoning not kept in Extra: %q", got)
	}
	if s.Messages[3].ToolCallID != "call_ls1" {
		t.Errorf("tool_call_id = %q", s.Messages[3].ToolCallID)
	}
	wantContent(t, s.Messages[3], `"a.txt\nb.txt"`)
	wantContent(t, s.Messages[4], `"Two files: a.txt and b.txt."`)
	// A snapshot's messages have no times: they get its last_updated.
	for i, m := range s.Messages {
		if m.Seq != 0 || m.TS != "2025-03-01T10:17:42.000001Z" {
			t.Errorf("message %d: seq %d ts %q, want 0 and last_updated", i, m.Seq, m.TS)
		}
	}
	wantTime(t, "UpdatedAt", s.UpdatedAt, "2025-03-01T10:17:42.000001Z")
	if got := string(s.Meta); got != `{"base_url":"https://openrouter.ai/api/v1"}` {
		t.Errorf("Meta = %s", got)
	}
}

func TestParseHermesJSONSystemPromptNotRepeated(t *testing.T) {
	in := `{"session_id":"s1","session_start":"2025-03-01 10:15:00","system_prompt":"Be brief.",
	"messages":[{"role":"system","content":"Be brief."},{"seq":7,"ts":"2025-03-01T11:15:00+01:00","role":"user","content":"hi"},
	{"role":"assistant","content":"hello","timestamp":1740827701.5}]}`
	sessions, err := Parse(strings.NewReader(in), FormatHermesJSON)
	if err != nil {
		t.Fatal(err)
	}
	s := sessions[0]
	wantRoles(t, s.Messages, "system,user,assistant")
	if s.Source != "import:hermes-json" {
		t.Errorf("Source = %q, want import:hermes-json when platform is absent", s.Source)
	}
	wantTime(t, "CreatedAt", s.CreatedAt, "2025-03-01T10:15:00Z")
	if m := s.Messages[1]; m.Seq != 0 || m.TS != "2025-03-01T10:15:00.000000Z" {
		t.Errorf("user seq %d ts %q, want 0 and the ts in UTC", m.Seq, m.TS)
	}
	if m := s.Messages[2]; m.TS != "2025-03-01T11:15:01.500000Z" || m.Extra != nil {
		t.Errorf("assistant ts %q extra %v, want the timestamp moved to ts", m.TS, m.Extra)
	}
}

func TestParseHermesJSONL(t *testing.T) {
	sessions := parseFixture(t, "hermes_export.jsonl")
	if len(sessions) != 2 {
		t.Fatalf("got %d sessions, want 2", len(sessions))
	}
	a, b := sessions[0], sessions[1]
	if a.ID != "20250302_090000_aaaaaa" || a.Title != "Fix the build" || a.Source != "cli" || a.Model != "gpt-4o" {
		t.Errorf("session 1 metadata = %q %q %q %q", a.ID, a.Title, a.Source, a.Model)
	}
	wantTime(t, "session 1 CreatedAt", a.CreatedAt, "2025-03-02T09:00:00Z")
	wantRoles(t, a.Messages, "user,assistant")
	wantContent(t, a.Messages[1], `[{"type":"text","text":"Remove the import of \"os\"."}]`)
	if a.Messages[1].Seq != 0 || a.Messages[1].TS != "2025-03-02T09:00:05.500000Z" {
		t.Errorf("seq %d ts %q, want 0 and the source ts", a.Messages[1].Seq, a.Messages[1].TS)
	}

	if b.ID != "20250303_120000_bbbbbb" || b.Title != "" || b.Source != "gateway" || b.Model != "claude-opus-4" {
		t.Errorf("session 2 metadata = %q %q %q %q", b.ID, b.Title, b.Source, b.Model)
	}
	wantTime(t, "session 2 CreatedAt", b.CreatedAt, "2025-03-03T12:00:00.25Z")
	wantRoles(t, b.Messages, "user,assistant,tool")
	wantContent(t, b.Messages[1], "null")
	wantCalls(t, b.Messages[1], newToolCall("call_w1", "weather", `{"city":"Oslo"}`))
	if b.Messages[2].ToolCallID != "call_w1" {
		t.Errorf("tool_call_id = %q", b.Messages[2].ToolCallID)
	}
}

func TestParseClaudeCode(t *testing.T) {
	sessions := parseFixture(t, "claude_code.jsonl")
	if len(sessions) != 1 {
		t.Fatalf("got %d sessions", len(sessions))
	}
	s := sessions[0]
	if s.ID != "5b0c6f1e-2d3a-4c8b-9e7f-1a2b3c4d5e6f" || s.Title != "Listing files in /tmp" || s.Model != "claude-sonnet-4-20250514" || s.Source != "import:claude-code" {
		t.Errorf("metadata = %q %q %q %q", s.ID, s.Title, s.Model, s.Source)
	}
	wantTime(t, "CreatedAt", s.CreatedAt, "2025-04-01T08:00:00Z")
	wantRoles(t, s.Messages, "user,assistant,tool,assistant,user,assistant")
	wantContent(t, s.Messages[0], `"What is in /tmp?"`)
	// The thinking, text and tool_use entries of msg_01A are one message.
	wantContent(t, s.Messages[1], `"I'll list it."`)
	wantCalls(t, s.Messages[1], newToolCall("toolu_01", "Bash", `{"command":"ls /tmp","description":"List /tmp"}`))
	// Its thinking is kept as it came, signature included, for the
	// anthropic provider to send back.
	if got := string(s.Messages[1].Extra[provider.ThinkingBlocks]); got != `[{"type":"thinking","thinking":"The user wants a listing; run ls.","signature":"EqQBCkYIBxgCKkB"}]` {
		t.Errorf("thinking blocks %s", got)
	}
	if s.Messages[1].TS != "2025-04-01T08:00:02.100000Z" {
		t.Errorf("merged assistant ts = %q, want its first entry's", s.Messages[1].TS)
	}
	if m := s.Messages[2]; m.ToolCallID != "toolu_01" || string(m.Content) != `"a.txt\nb.txt"` {
		t.Errorf("tool message = %q %s", m.ToolCallID, m.Content)
	}
	wantContent(t, s.Messages[3], `"Two files: a.txt and b.txt."`)
	wantContent(t, s.Messages[4], `"Thanks. Two lines please."`)
	wantContent(t, s.Messages[5], `[{"type":"text","text":"Line one."},{"type":"text","text":"Line two."}]`)
	for i, m := range s.Messages {
		if strings.Contains(string(m.Content), "ABANDONED") {
			t.Errorf("message %d is from the dropped side branch: %s", i, m.Content)
		}
		if strings.Contains(string(m.Content), "run ls") {
			t.Errorf("message %d carries the thinking block: %s", i, m.Content)
		}
		if m.TS == "" || m.Seq != 0 {
			t.Errorf("message %d: seq %d ts %q", i, m.Seq, m.TS)
		}
	}
}

func TestParseClaudeCodeBranchChoice(t *testing.T) {
	// The same file with the abandoned branch written last: the chain now
	// ends there, and the other reply is the dropped one.
	data := readFixture(t, "claude_code.jsonl")
	var keep, moved [][]byte
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if bytes.Contains(line, []byte("ABANDONED")) {
			moved = append(moved, line)
		} else if !bytes.Contains(line, []byte(`"summary"`)) {
			keep = append(keep, line)
		}
	}
	sessions, err := Parse(bytes.NewReader(bytes.Join(append(keep, moved...), []byte("\n"))), FormatClaudeCode)
	if err != nil {
		t.Fatal(err)
	}
	s := sessions[0]
	wantRoles(t, s.Messages, "user,assistant,tool,assistant,user")
	wantContent(t, s.Messages[3], `"ABANDONED: /tmp is empty."`)
	if s.Title != "" {
		t.Errorf("Title = %q, want none without a summary", s.Title)
	}
}

func TestParseClaudeCodeCompactionAndImages(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2025-04-01T08:00:00Z","message":{"role":"user","content":"before compaction"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2025-04-01T08:00:01Z","message":{"id":"m1","role":"assistant","model":"<synthetic>","content":[{"type":"thinking","thinking":"only thinking"}]}}`,
		`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"b1","parentUuid":null,"logicalParentUuid":"a1","sessionId":"s","timestamp":"2025-04-01T09:00:00Z"}`,
		`{"type":"user","uuid":"u2","parentUuid":"b1","sessionId":"s","timestamp":"2025-04-01T09:00:01Z","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s","timestamp":"2025-04-01T09:00:02Z","message":{"id":"m2","role":"assistant","model":"claude-opus-4-1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]}}`,
		`{"type":"user","uuid":"u3","parentUuid":"a2","sessionId":"s","timestamp":"2025-04-01T09:00:03Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"no such file","is_error":true},{"type":"text","text":"and?"}]}}`,
	}, "\n")
	sessions, err := Parse(strings.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	s := sessions[0]
	// The thinking-only response says nothing and is dropped.
	wantRoles(t, s.Messages, "user,user,assistant,tool,user")
	wantContent(t, s.Messages[0], `"before compaction"`)
	wantContent(t, s.Messages[1], `[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]`)
	wantContent(t, s.Messages[2], "null")
	wantCalls(t, s.Messages[2], newToolCall("t1", "Read", "{}"))
	if m := s.Messages[3]; m.ToolCallID != "t1" || string(m.Content) != `"no such file"` {
		t.Errorf("tool message = %q %s", m.ToolCallID, m.Content)
	}
	wantContent(t, s.Messages[4], `"and?"`)
	if s.Model != "claude-opus-4-1" {
		t.Errorf("Model = %q, want the first real model", s.Model)
	}
}

func TestParseClaudeCodeSidechains(t *testing.T) {
	main := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2025-04-01T08:00:00Z","message":{"role":"user","content":"main question"}}`
	side := `{"type":"user","uuid":"x1","parentUuid":null,"isSidechain":true,"sessionId":"s","timestamp":"2025-04-01T08:00:01Z","message":{"role":"user","content":"sub-agent task"}}`
	for _, tc := range []struct{ name, in, want string }{
		{"sub-agent lines after the main ones are not the conversation", main + "\n" + side, `"main question"`},
		{"a file of sub-agent lines only is read", side, `"sub-agent task"`},
	} {
		sessions, err := Parse(strings.NewReader(tc.in), FormatClaudeCode)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if msgs := sessions[0].Messages; len(msgs) != 1 || string(msgs[0].Content) != tc.want {
			t.Errorf("%s: messages %v, want one with content %s", tc.name, msgs, tc.want)
		}
	}
}

func TestParseCodex(t *testing.T) {
	sessions := parseFixture(t, "codex_rollout.jsonl")
	if len(sessions) != 1 {
		t.Fatalf("got %d sessions", len(sessions))
	}
	s := sessions[0]
	if s.ID != "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" || s.Model != "gpt-5-codex" || s.Source != "import:codex" || s.Title != "" {
		t.Errorf("metadata = %q %q %q %q", s.ID, s.Model, s.Source, s.Title)
	}
	wantTime(t, "CreatedAt", s.CreatedAt, "2025-05-01T12:00:00.001Z")
	wantRoles(t, s.Messages, "system,user,user,assistant,tool,tool,assistant")
	wantContent(t, s.Messages[0], `"<permissions instructions>Sandbox: workspace-write.</permissions instructions>"`)
	wantContent(t, s.Messages[2], `"How many Go files are here?"`)
	// Both calls join the assistant message that announced them.
	wantContent(t, s.Messages[3], `"Let me count them."`)
	wantCalls(t, s.Messages[3],
		newToolCall("call_A1", "shell", `{"command":["bash","-lc","ls *.go | wc -l"]}`),
		newToolCall("call_B2", "shell", `{"command":["bash","-lc","ls **/*_test.go | wc -l"]}`))
	if m := s.Messages[4]; m.ToolCallID != "call_A1" || m.Text() != `{"output":"3\n","metadata":{"exit_code":0,"duration_seconds":0.1}}` {
		t.Errorf("tool message 1 = %q %q", m.ToolCallID, m.Text())
	}
	if m := s.Messages[5]; m.ToolCallID != "call_B2" || m.Text() != "1\n" {
		t.Errorf("tool message 2 = %q %q", m.ToolCallID, m.Text())
	}
	wantContent(t, s.Messages[6], `"There are 3 Go files; 1 is a test."`)
	if s.Messages[6].TS != "2025-05-01T12:00:09.500000Z" {
		t.Errorf("ts = %q", s.Messages[6].TS)
	}
	for i, m := range s.Messages {
		if strings.Contains(string(m.Content), "Counting") {
			t.Errorf("message %d carries reasoning: %s", i, m.Content)
		}
	}
}

func TestParseCodexBareFormat(t *testing.T) {
	in := strings.Join([]string{
		`{"id":"old-1","timestamp":"2025-07-01T10:00:00.000Z","instructions":"Follow AGENTS.md.","git":null}`,
		`{"record_type":"state"}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}`,
		`{"type":"reasoning","id":"rs_1","summary":[]}`,
		`{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}`,
		`{"type":"function_call_output","call_id":"call_1","output":{"output":"go.mod\n"}}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"One file."}]}`,
	}, "\n")
	sessions, err := Parse(strings.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	s := sessions[0]
	if s.ID != "old-1" {
		t.Errorf("ID = %q", s.ID)
	}
	wantTime(t, "CreatedAt", s.CreatedAt, "2025-07-01T10:00:00Z")
	// The instructions appear in no message, so they lead as a system one;
	// a call with no assistant text before it gets a message of its own.
	wantRoles(t, s.Messages, "system,user,assistant,tool,assistant")
	wantContent(t, s.Messages[0], `"Follow AGENTS.md."`)
	wantContent(t, s.Messages[2], "null")
	wantCalls(t, s.Messages[2], newToolCall("call_1", "shell", `{"command":["ls"]}`))
	if m := s.Messages[3]; m.ToolCallID != "call_1" || m.Text() != "go.mod\n" {
		t.Errorf("tool message = %q %q", m.ToolCallID, m.Text())
	}
	// Bare lines have no timestamp: the messages get the session's.
	for i, m := range s.Messages {
		if m.TS != "2025-07-01T10:00:00.000000Z" {
			t.Errorf("message %d ts = %q, want the session_meta's", i, m.TS)
		}
	}
}

func TestParseCRLF(t *testing.T) {
	for _, name := range []string{"hermes_session.json", "claude_code.jsonl", "codex_rollout.jsonl"} {
		crlf := bytes.ReplaceAll(readFixture(t, name), []byte("\n"), []byte("\r\n"))
		got, err := Parse(bytes.NewReader(crlf), "")
		if err != nil {
			t.Errorf("%s with CRLF: %v", name, err)
			continue
		}
		if want := parseFixture(t, name); roles(got[0].Messages) != roles(want[0].Messages) {
			t.Errorf("%s with CRLF: roles %s, want %s", name, roles(got[0].Messages), roles(want[0].Messages))
		}
	}
}

func TestParseMalformed(t *testing.T) {
	truncate := func(name string) string {
		data := readFixture(t, name)
		return string(data[:len(data)-25])
	}
	for _, tc := range []struct {
		name, format, in string
		wantMsg          string // a part of the message
	}{
		{"empty file", "", "", "empty input"},
		{"empty file, format given", FormatClaudeCode, "", "claude-code: empty input"},
		{"blank lines only", FormatHermesJSONL, "\n\n  \n", "hermes-jsonl: empty input"},
		{"JSON array", "", `[{"role":"user","content":"hi"}]`, "JSON array"},
		{"JSON array, format given", FormatHermesJSON, `[{"role":"user","content":"hi"}]`, "hermes-json: line 1: not a JSON object"},
		{"JSON array line", FormatCodex, "[1,2]\n", "codex: line 1: not a JSON object"},
		{"truncated hermes-json", "", truncate("hermes_session.json"), "hermes-json: line 21: truncated JSON"},
		{"truncated hermes-jsonl", "", truncate("hermes_export.jsonl"), "hermes-jsonl: line 2: malformed JSON"},
		{"truncated claude-code", "", truncate("claude_code.jsonl"), "claude-code: line 13: malformed JSON"},
		{"truncated codex", "", truncate("codex_rollout.jsonl"), "codex: line 16: malformed JSON"},
		{"trailing data", FormatHermesJSON, `{"messages":[]} {}`, "hermes-json: line 1: data after the session object"},
		{"no messages", FormatHermesJSON, `{"session_id":"x"}`, `no "messages"`},
		{"bad role", FormatHermesJSON, "{\"messages\":[\n{\"role\":\"user\",\"content\":\"a\"},\n{\"role\":\"robot\",\"content\":\"b\"}]}", "hermes-json: line 3: message 2"},
		{"bad role, jsonl", FormatHermesJSONL, `{"id":"a","messages":[]}` + "\n" + `{"id":"b","messages":[{"role":"function"}]}`, "hermes-jsonl: line 2: message 1"},
		{"bad ts", FormatHermesJSONL, `{"id":"a","messages":[{"role":"user","content":"x","ts":"yesterday"}]}`, "hermes-jsonl: line 1: message 1: ts"},
		{"no messages, jsonl", FormatHermesJSONL, `{"id":"a"}`, `line 1: no "messages"`},
		{"bad created_at", FormatHermesJSONL, `{"id":"a","created_at":"soon","messages":[]}`, "created_at"},
		{"only snapshots", FormatClaudeCode, `{"type":"file-history-snapshot","messageId":"x"}`, "no user or assistant messages"},
		{"parent loop", FormatClaudeCode, `{"type":"user","uuid":"a","parentUuid":"b","message":{"role":"user","content":"x"}}` + "\n" + `{"type":"user","uuid":"b","parentUuid":"a","message":{"role":"user","content":"y"}}`, "loops"},
		{"bad content", FormatClaudeCode, `{"type":"user","uuid":"a","message":{"role":"user","content":42}}`, "claude-code: line 1: message content"},
		{"bad codex role", FormatCodex, `{"type":"response_item","payload":{"type":"message","role":"critic","content":[]}}`, "codex: line 1: message: role"},
		{"codex call without id", FormatCodex, `{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}"}}`, "codex: line 1: function_call: no call_id"},
		{"codex without items", FormatCodex, `{"type":"event_msg","payload":{"type":"token_count"}}`, "no session_meta"},
		{"unknown format", "gemini", `{}`, `unknown format "gemini"`},
		{"unknown format, empty input", "gemini", "", `unknown format "gemini"`},
	} {
		_, err := Parse(strings.NewReader(tc.in), tc.format)
		if !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantMsg) {
			t.Errorf("%s: err = %q, want it to contain %q", tc.name, err, tc.wantMsg)
		}
	}
}

// Every message the importer builds must be one the store accepts and
// writes back unchanged.
func TestMessagesRoundTrip(t *testing.T) {
	for _, name := range []string{"hermes_session.json", "hermes_export.jsonl", "claude_code.jsonl", "codex_rollout.jsonl"} {
		for _, s := range parseFixture(t, name) {
			if len(s.Messages) == 0 {
				t.Errorf("%s: no messages", name)
			}
			for i, m := range s.Messages {
				line, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				back, err := sessions.ParseMessage(line)
				if err != nil {
					t.Errorf("%s message %d: %s: %v", name, i, line, err)
					continue
				}
				if !back.SameAs(m) || back.TS != m.TS {
					t.Errorf("%s message %d does not round-trip: %s", name, i, line)
				}
				if m.TS != "" {
					if _, err := m.TS.Instant(); err != nil || !strings.HasSuffix(string(m.TS), "Z") {
						t.Errorf("%s message %d: ts %q is not RFC 3339 UTC", name, i, m.TS)
					}
				}
			}
		}
	}
}

const (
	claudeMain  = "claude/-home-ann-proj/7d3e2f10-5a6b-4c7d-8e9f-0a1b2c3d4e5f.jsonl"
	claudeAgent = "claude/-home-ann-proj/7d3e2f10-5a6b-4c7d-8e9f-0a1b2c3d4e5f/subagents/agent-a9f4657.jsonl"
	codexBase   = "codex/2025/09/20/rollout-2025-09-20T10-00-00-0199a0b1-c2d3-7e4f-8a5b-6c7d8e9f0a1b.jsonl"
)

// TestParseHermesExportChain: an export keeps its lineage, its end, its
// session key and the rest of its row as meta; epoch times keep their
// microseconds; the system prompt takes the session's start.
func TestParseHermesExportChain(t *testing.T) {
	got := parseFixture(t, "hermes_export_chain.jsonl")
	if len(got) != 2 {
		t.Fatalf("%d sessions, want 2", len(got))
	}
	p, c := got[0], got[1]
	if p.EndReason != "compression" || p.ParentSessionID != "" || p.Title != "Kyoto weekend" || p.SessionKey != "agent:main:telegram:dm:4242" {
		t.Errorf("parent = %+v", p)
	}
	if c.ParentSessionID != p.ID || c.EndReason != "" || !c.EndedAt.IsZero() {
		t.Errorf("child: parent %q, end %q at %v", c.ParentSessionID, c.EndReason, c.EndedAt)
	}
	wantTime(t, "parent CreatedAt", p.CreatedAt, "2025-01-15T08:00:00.123456Z")
	wantTime(t, "parent EndedAt", p.EndedAt, "2025-01-15T09:00:00.654321Z")
	wantTime(t, "parent UpdatedAt", p.UpdatedAt, "2025-01-15T08:00:10.999999Z")
	if p.Messages[0].Role != "system" || p.Messages[0].TS != "2025-01-15T08:00:00.123456Z" || p.Messages[1].TS != "2025-01-15T08:00:01.000001Z" {
		t.Errorf("first messages: %s %s, %s", p.Messages[0].Role, p.Messages[0].TS, p.Messages[1].TS)
	}
	var meta map[string]any
	if err := json.Unmarshal(p.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"input_tokens", "model_config", "user_id", "estimated_cost_usd", "api_call_count"} {
		if _, ok := meta[k]; !ok {
			t.Errorf("meta lacks %s: %s", k, p.Meta)
		}
	}
	for _, k := range []string{"id", "messages", "title", "actual_cost_usd", "session_key"} {
		if _, ok := meta[k]; ok {
			t.Errorf("meta has %s: %s", k, p.Meta)
		}
	}
}

// TestParseHermesSnapshotPrivateKeys: "_db_persisted" is not kept, so the
// grown snapshot starts with the messages of the first.
func TestParseHermesSnapshotPrivateKeys(t *testing.T) {
	first := parseFixture(t, "hermes/session_20250610_091500_aa11bb.json")[0]
	grown := parseFixture(t, "hermes_snapshot_grown.json")[0]
	for i, m := range first.Messages {
		a, _ := m.MarshalJSON()
		b, _ := grown.Messages[i].MarshalJSON()
		if strings.Contains(string(b), "_db_persisted") {
			t.Fatalf("message %d keeps a private key: %s", i+1, b)
		}
		a, b = bytes.Replace(a, []byte(m.TS), nil, 1), bytes.Replace(b, []byte(grown.Messages[i].TS), nil, 1)
		if !bytes.Equal(a, b) {
			t.Errorf("message %d differs:\n%s\n%s", i+1, a, b)
		}
	}
}

// TestParseClaudeSubagent: a sub-agent's transcript is a session of its
// own whose parent is the main one; the main one leaves out sidechains.
func TestParseClaudeSubagent(t *testing.T) {
	main := parseFixture(t, claudeMain)[0]
	agent := parseFixture(t, claudeAgent)[0]
	if main.ID != "7d3e2f10-5a6b-4c7d-8e9f-0a1b2c3d4e5f" || main.ParentSessionID != "" {
		t.Errorf("main: id %q parent %q", main.ID, main.ParentSessionID)
	}
	if agent.ID != main.ID+"-agent-a9f4657" || agent.ParentSessionID != main.ID {
		t.Errorf("agent: id %q parent %q", agent.ID, agent.ParentSessionID)
	}
	wantRoles(t, main.Messages, "user,assistant,tool,assistant")
	wantRoles(t, agent.Messages, "user,assistant,tool,assistant")
	for _, m := range main.Messages {
		if strings.Contains(m.Text(), "SIDECHAIN") {
			t.Errorf("main holds a sidechain message: %s", m.Content)
		}
	}
}

// TestParseCodexBaseInstructions: the system prompt of a 0.16x rollout
// comes first; skipped lines and items are counted.
func TestParseCodexBaseInstructions(t *testing.T) {
	s := parseFixture(t, codexBase)[0]
	wantRoles(t, s.Messages, "system,system,user,user,assistant,tool,assistant")
	if !strings.HasPrefix(s.Messages[0].Text(), "You are Codex") {
		t.Errorf("first message = %s", s.Messages[0].Content)
	}
	if s.Skipped["event_msg"] != 3 || s.Skipped["reasoning"] != 1 {
		t.Errorf("Skipped = %v", s.Skipped)
	}
	if !strings.Contains(string(s.Meta), `"cli_version":"0.164.0"`) || strings.Contains(string(s.Meta), "base_instructions") {
		t.Errorf("Meta = %s", s.Meta)
	}
}
