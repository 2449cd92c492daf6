package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
)

// Each stored message as the request carries it: the API's fields for its
// role only.
func TestWriteMessage(t *testing.T) {
	for _, tc := range []struct{ stored, replay, drop string }{
		{stored: `{"role":"user","content":"hi","tool_calls":null,"_db_persisted":true,"name":"ann"}`,
			drop: `{"role":"user","content":"hi","name":"ann"}`},
		{stored: `{"role":"user","content":[{"type":"text","text":"a <b>"}]}`,
			drop: `{"role":"user","content":[{"type":"text","text":"a <b>"}]}`},
		{stored: `{"role":"user"}`, drop: `{"role":"user","content":""}`},
		{stored: `{"role":"system","content":null,"tool_call_id":"x"}`, drop: `{"role":"system","content":""}`},
		{stored: `{"role":"tool","content":"out","tool_call_id":"c1","name":"terminal","tool_calls":null}`,
			drop: `{"role":"tool","content":"out","name":"terminal","tool_call_id":"c1"}`},
		{stored: `{"role":"assistant","content":"","reasoning_content":"think","tool_calls":[{"id":"c1","call_id":"c1","response_item_id":"fc_1","function":{"name":"f","arguments":"{}","strict":true}}]}`,
			drop:   `{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			replay: `{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}],"reasoning_content":"think"}`},
		{stored: `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			drop:   `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			replay: `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}],"reasoning_content":""}`},
		// Calls that are not calls (an empty list, null, a shape the engine
		// does not read as calls) are not sent, and the content the API
		// requires then is there.
		{stored: `{"role":"assistant","content":null,"tool_calls":[]}`, drop: `{"role":"assistant","content":""}`,
			replay: `{"role":"assistant","content":"","reasoning_content":""}`},
		{stored: `{"role":"assistant","tool_calls":null,"reasoning_content":null,"refusal":"no"}`, drop: `{"role":"assistant","content":""}`,
			replay: `{"role":"assistant","content":"","reasoning_content":""}`},
		{stored: `{"role":"assistant","content":"x","tool_calls":[{"id":"c1","function":{"name":"f","arguments":{"a":1}}}]}`,
			drop: `{"role":"assistant","content":"x"}`, replay: `{"role":"assistant","content":"x","reasoning_content":""}`},
		{stored: `{"role":"assistant","content":"x","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}],"name":"bot"}`,
			drop:   `{"role":"assistant","content":"x","name":"bot","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			replay: `{"role":"assistant","content":"x","name":"bot","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}],"reasoning_content":""}`},
	} {
		m := transcript(t, tc.stored)[0]
		if tc.replay == "" {
			tc.replay = tc.drop
		}
		for _, want := range []struct {
			replay bool
			body   string
		}{{false, tc.drop}, {true, tc.replay}} {
			var b bytes.Buffer
			writeMessage(&b, m, want.replay)
			if b.String() != want.body {
				t.Errorf("%s (replay %v):\n got %s\nwant %s", tc.stored, want.replay, b.String(), want.body)
			}
		}
	}
}

// auto replays reasoning_content to the hosts whose thinking models refuse
// a history without it, and to no other.
func TestReplaysReasoning(t *testing.T) {
	for _, tc := range []struct {
		setting, url string
		want         bool
	}{
		{"", "https://api.deepseek.com", true},
		{"auto", "https://api.deepseek.com/v1", true},
		{"", "https://API.Moonshot.ai/v1", true},
		{"", "https://api.moonshot.cn/v1", true},
		{"", "https://api.kimi.com/coding/v1", true},
		{"", "https://token-plan-sgp.xiaomimimo.com/v1", true},
		{"", "https://api.openai.com/v1", false},
		{"", "https://openrouter.ai/api/v1", false},
		{"", "https://api.groq.com/openai/v1", false},
		{"", "https://notdeepseek.com/v1", false},
		{"", "https://deepseek.com.example.org/v1", false},
		{"", "http://127.0.0.1:8080/v1", false},
		{"replay", "http://127.0.0.1:8080/v1", true},
		{"drop", "https://api.deepseek.com", false},
	} {
		if got := replaysReasoning(tc.setting, tc.url); got != tc.want {
			t.Errorf("replaysReasoning(%q, %q) = %v, want %v", tc.setting, tc.url, got, tc.want)
		}
	}
}

func TestReasoningContentSettingChecked(t *testing.T) {
	for _, name := range []string{"echo", "openai", "exec"} {
		_, err := New(Config{Name: name, Model: "m", ExecCommand: "true", ReasoningContent: "keep"})
		if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), `"keep"`) {
			t.Errorf("%s with reasoning_content keep: %v, want ErrInvalid naming the value", name, err)
		}
	}
}

// A reply's reasoning_content is stored with the message, streamed or not,
// and is not shown as the reply's text.
func TestOpenAIKeepsReasoningContent(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !streamed {
				io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":null,"reasoning_content":"call f",
					"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{
				`{"role":"assistant","content":null,"reasoning_content":"call"}`,
				`{"reasoning_content":" f"}`,
				`{"reasoning_content":null,"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			} {
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", d)
			}
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
		}))
		var shown strings.Builder
		req := toolTranscript(t)
		if streamed {
			req.Stream = &shown
		}
		reply, err := newOpenAITest(t, srv.URL, Config{}).Complete(context.Background(), req)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		line, _ := reply.Messages[0].MarshalJSON()
		if got := string(reply.Messages[0].Extra["reasoning_content"]); got != `"call f"` || shown.Len() != 0 {
			t.Errorf("streamed %v: reply %s, shown %q; want reasoning_content \"call f\" stored and nothing shown", streamed, line, shown.String())
		}
	}
}
