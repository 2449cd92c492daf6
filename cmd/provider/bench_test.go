package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore/sessions"
)

// BenchmarkProviderTurn is one call of a provider on a history of 1,000
// messages (a user turn, a tool call and its result, a reply, over and
// over; 150 bytes of text each), against a server on loopback that
// answers at once and reads the whole request: what is measured is the
// provider's part of a stateless turn, the conversion of the history to
// the request and the reading of the reply. The target (issue 44): the
// anthropic provider costs at most 1.1x the openai provider.
func BenchmarkProviderTurn(b *testing.B) {
	var history Messages
	text := strings.Repeat("x", 150)
	for i := 0; len(history) < 1000; i++ {
		id := fmt.Sprintf("call_%d", i)
		history = append(history,
			sessions.Message{Role: "user", Content: sessions.TextContent(fmt.Sprintf("question %d: %s", i, text))},
			sessions.Message{Role: "assistant", Content: sessions.TextContent("looking"), ToolCalls: []byte(`[{"id":"` + id + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]`)},
			sessions.Message{Role: "tool", ToolCallID: id, Content: sessions.TextContent(text)},
			sessions.Message{Role: "assistant", Content: sessions.TextContent("it is sunny " + text)},
		)
	}
	// openai-nousage is openai answering without usage: what recording
	// the call's usage costs a turn is the difference (issue 42).
	replies := map[string]string{
		"openai":         `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
		"openai-nousage": `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`,
		"anthropic":      `{"type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
	}
	for _, name := range []string{"openai", "openai-nousage", "anthropic"} {
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, replies[name])
			}))
			defer srv.Close()
			base, kind := srv.URL, strings.TrimSuffix(name, "-nousage")
			if kind == "openai" {
				base += "/v1"
			}
			p, err := New(Config{Name: kind, BaseURL: base, Model: "m"})
			if err != nil {
				b.Fatal(err)
			}
			req := Request{History: history, Tools: []json.RawMessage{weatherTool}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Complete(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
