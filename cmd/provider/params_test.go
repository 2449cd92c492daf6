package provider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allParams sets every parameter, each to a value of its own.
func allParams() Params {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	return Params{
		ToolChoice:          raw(`{"type":"function","function":{"name":"f"}}`),
		ParallelToolCalls:   raw(`false`),
		Temperature:         raw(`0.25`),
		TopP:                raw(`0.5`),
		MaxTokens:           raw(`100`),
		MaxCompletionTokens: raw(`200`),
		Stop:                raw(`["END"]`),
		Seed:                raw(`7`),
		PresencePenalty:     raw(`0.1`),
		FrequencyPenalty:    raw(`0.2`),
		ResponseFormat:      raw(`{"type":"json_object"}`),
		ReasoningEffort:     raw(`"low"`),
		User:                raw(`"u-1"`),
	}
}

const allParamsJSON = `"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,` +
	`"temperature":0.25,"top_p":0.5,"max_tokens":100,"max_completion_tokens":200,"stop":["END"],"seed":7,` +
	`"presence_penalty":0.1,"frequency_penalty":0.2,"response_format":{"type":"json_object"},` +
	`"reasoning_effort":"low","user":"u-1"`

// The request's model replaces the configured one, and its parameters
// follow the tools, streamed or not; the reply says which model answered.
func TestOpenAIRequestModelAndParams(t *testing.T) {
	for _, stream := range []bool{false, true} {
		var got string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got = string(b)
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"model\":\"m-2024\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"model":"m-2024","choices":[{"message":{"role":"assistant","content":"hi"}}]}`)
		}))
		req := Request{SessionID: "s1", History: transcript(t, `{"role":"user","content":"hi"}`),
			Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f"}}`)}, Model: "m", Params: allParams()}
		var sb strings.Builder
		if stream {
			req.Stream = &sb
		}
		reply, err := newOpenAITest(t, srv.URL, Config{Model: "configured"}).Complete(context.Background(), req)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],` + allParamsJSON
		if stream {
			want += `,"stream":true,"stream_options":{"include_usage":true}`
		}
		if want += "}"; got != want {
			t.Errorf("stream %v: request body:\n got %s\nwant %s", stream, got, want)
		}
		if reply.Model != "m-2024" {
			t.Errorf("stream %v: reply model %q, want m-2024", stream, reply.Model)
		}
	}
}

// An error status carries what the server said and its code apart from
// the message, for the gateway to pass on.
func TestOpenAIErrorSaidAndCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"message":"The model 'x' does not exist","type":"invalid_request_error","code":"model_not_found"}}`)
	}))
	defer srv.Close()
	_, err := newOpenAITest(t, srv.URL, Config{}).Complete(context.Background(), Request{History: transcript(t, `{"role":"user","content":"hi"}`)})
	var pe *Error
	if !errors.As(err, &pe) || pe.StatusCode != 404 || pe.Said != "The model 'x' does not exist" || pe.Code != "model_not_found" {
		t.Fatalf("error %#v, want status 404, what the server said and its code", err)
	}
}

// The exec command finds the request's model and parameters in the file
// $HERMES_PARAMS names; a request with neither sets no $HERMES_PARAMS.
func TestExecParams(t *testing.T) {
	dir := t.TempDir()
	p, _ := newExecTest(t, `
if [ -n "$HERMES_PARAMS" ]; then cat "$HERMES_PARAMS" > '`+dir+`/params'; else echo none > '`+dir+`/params'; fi
echo '{"role":"assistant","content":"ok"}'
`, 0)
	read := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "params"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	req := Request{SessionID: "s1", History: transcript(t, `{"role":"user","content":"hi"}`), Model: "m", Params: allParams()}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), `{"model":"m",`+allParamsJSON+"}\n"; got != want {
		t.Errorf("$HERMES_PARAMS holds\n %s\nwant\n %s", got, want)
	}
	req.Model, req.Params = "", Params{}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "none\n" {
		t.Errorf("$HERMES_PARAMS without parameters: %q, want it unset", got)
	}
}
