//go:build sdk

package gateway

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The tests in this file drive the gateway with openai-go, the official Go
// client library, so that what is sent is what a real client sends and
// what the gateway answers must parse as that client parses it; the other
// tests check the JSON by hand. scripts/clients.sh does the same with Codex
// CLI and the openai npm package.

// sdkClient is an openai-go client of e's gateway. It never retries: a
// retry would be a request the test did not make.
func sdkClient(e *testEnv) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(e.ts.URL+"/v1"),
		option.WithAPIKey("unused"),
		option.WithHTTPClient(e.ts.Client()),
		option.WithMaxRetries(0),
	)
}

// sessionOf is a request option that keeps the session the gateway names
// in its answer.
func sessionOf(sid *string) option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err == nil {
			*sid = resp.Header.Get(SessionHeader)
		}
		return resp, err
	})
}

func TestOpenAIGoChat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// clientFn is the function tool the tool subtests offer: their model
	// calls it, and refuses a request that does not offer it.
	clientFn := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "client_fn"})}
	chatWith := func(e *testEnv, sid *string, tools []openai.ChatCompletionToolUnionParam, msgs ...openai.ChatCompletionMessageParamUnion) *openai.ChatCompletion {
		t.Helper()
		client := sdkClient(e)
		c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "echo", Messages: msgs, Tools: tools}, sessionOf(sid))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Choices) != 1 || *sid == "" {
			t.Fatalf("%d choices, session %q: %s", len(c.Choices), *sid, c.RawJSON())
		}
		return c
	}
	chat := func(e *testEnv, sid *string, msgs ...openai.ChatCompletionMessageParamUnion) *openai.ChatCompletion {
		t.Helper()
		return chatWith(e, sid, nil, msgs...)
	}
	stream := func(e *testEnv, sid *string, tools []openai.ChatCompletionToolUnionParam, msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletion {
		t.Helper()
		client := sdkClient(e)
		s := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "echo", Messages: msgs, Tools: tools}, sessionOf(sid))
		defer s.Close()
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			if !acc.AddChunk(s.Current()) {
				t.Fatalf("chunk out of order: %s", s.Current().RawJSON())
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 1 || *sid == "" {
			t.Fatalf("%d choices, session %q", len(acc.Choices), *sid)
		}
		return acc.ChatCompletion
	}

	t.Run("text", func(t *testing.T) {
		e := newTestEnv(t, nil)
		var sid string
		c := chat(e, &sid, openai.UserMessage("hi"))
		m := c.Choices[0].Message
		if m.Content != echoText(1, "hi") || m.Role != "assistant" || c.Choices[0].FinishReason != "stop" ||
			c.ID == "" || c.Object != "chat.completion" || c.Created == 0 || c.Model == "" {
			t.Fatalf("completion %s", c.RawJSON())
		}
	})

	t.Run("text streamed", func(t *testing.T) {
		e := newTestEnv(t, nil)
		var sid string
		c := stream(e, &sid, nil, openai.UserMessage("hi"))
		if got := c.Choices[0].Message.Content; got != echoText(1, "hi") || c.Choices[0].FinishReason != "stop" || c.ID == "" {
			t.Fatalf("streamed %q, finish %q, id %q", got, c.Choices[0].FinishReason, c.ID)
		}
	})

	// The client answers the call in its next request, with the reply as
	// the SDK parsed it (ToParam) and the session named.
	t.Run("tool call", func(t *testing.T) {
		e := newTestEnv(t, func(o *Options) { o.Provider = callsOrAnswers("client_fn") })
		var sid, next string
		user := openai.UserMessage("go")
		c := chatWith(e, &sid, clientFn, user)
		calls := c.Choices[0].Message.ToolCalls
		if c.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].ID != "call_1" ||
			calls[0].Function.Name != "client_fn" || calls[0].Function.Arguments != "{}" {
			t.Fatalf("completion %s", c.RawJSON())
		}
		client := sdkClient(e)
		c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "echo", Messages: []openai.ChatCompletionMessageParamUnion{
			user, c.Choices[0].Message.ToParam(), openai.ToolMessage("7", calls[0].ID),
		}, Tools: clientFn}, option.WithHeader(SessionHeader, sid), sessionOf(&next))
		if err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Message.Content != "the answer is 7" || next != sid {
			t.Fatalf("completion %s in session %s, want %s", c.RawJSON(), next, sid)
		}
	})

	t.Run("tool call streamed", func(t *testing.T) {
		e := newTestEnv(t, func(o *Options) { o.Provider = callsOrAnswers("client_fn") })
		var sid string
		c := stream(e, &sid, clientFn, openai.UserMessage("go"))
		calls := c.Choices[0].Message.ToolCalls
		if c.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].ID != "call_1" ||
			calls[0].Function.Name != "client_fn" || calls[0].Function.Arguments != "{}" {
			t.Fatalf("finish %q, tool calls %+v", c.Choices[0].FinishReason, calls)
		}
	})

	// A stateless client: the whole history each turn, no session named.
	t.Run("history continues its session", func(t *testing.T) {
		e := newTestEnv(t, nil)
		var first string
		history := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("turn 1")}
		for i := 1; i <= 3; i++ {
			var sid string
			c := chat(e, &sid, history...)
			if i == 1 {
				first = sid
			} else if sid != first {
				t.Fatalf("turn %d in session %s, turn 1 in %s", i, sid, first)
			}
			history = append(history, c.Choices[0].Message.ToParam(), openai.UserMessage("turn "+itoa(i+1)))
		}
	})
}

func TestOpenAIGoResponses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// fnTool is the function tool the tool subtests offer (see clientFn).
	fnTool := []responses.ToolUnionParam{responses.ToolParamOfFunction("client_fn", map[string]any{"type": "object", "properties": map[string]any{}}, false)}
	create := func(e *testEnv, sid *string, params responses.ResponseNewParams, opts ...option.RequestOption) *responses.Response {
		t.Helper()
		client := sdkClient(e)
		params.Model = "echo"
		r, err := client.Responses.New(ctx, params, append(opts, sessionOf(sid))...)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID == "" || r.Status != responses.ResponseStatusCompleted || *sid == "" {
			t.Fatalf("session %q, response %s", *sid, r.RawJSON())
		}
		return r
	}
	// stream returns the response of response.completed, having checked
	// that the text deltas add up to its text and that the events come in
	// order.
	stream := func(e *testEnv, sid *string, params responses.ResponseNewParams) responses.Response {
		t.Helper()
		client := sdkClient(e)
		params.Model = "echo"
		s := client.Responses.NewStreaming(ctx, params, sessionOf(sid))
		defer s.Close()
		var deltas string
		var completed *responses.Response
		seq := int64(-1)
		for s.Next() {
			ev := s.Current()
			if ev.SequenceNumber <= seq {
				t.Fatalf("event %s has sequence number %d after %d", ev.Type, ev.SequenceNumber, seq)
			}
			seq = ev.SequenceNumber
			switch ev.Type {
			case "response.output_text.delta":
				deltas += ev.Delta
			case "response.completed":
				r := ev.AsResponseCompleted().Response
				completed = &r
			case "response.failed", "error":
				t.Fatalf("event %s", ev.RawJSON())
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if completed == nil || *sid == "" {
			t.Fatalf("no response.completed event, or no session (%q)", *sid)
		}
		if deltas != completed.OutputText() {
			t.Fatalf("deltas %q, completed text %q", deltas, completed.OutputText())
		}
		return *completed
	}
	text := func(s string) responses.ResponseNewParamsInputUnion {
		return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
	}

	t.Run("text", func(t *testing.T) {
		e := newTestEnv(t, nil)
		var sid string
		r := create(e, &sid, responses.ResponseNewParams{Input: text("hi")})
		if r.OutputText() != echoText(1, "hi") || len(r.Output) != 1 || r.Output[0].Type != "message" {
			t.Fatalf("response %s", r.RawJSON())
		}
	})

	t.Run("text streamed", func(t *testing.T) {
		e := newTestEnv(t, nil)
		var sid string
		r := stream(e, &sid, responses.ResponseNewParams{Input: text("hi")})
		if r.OutputText() != echoText(1, "hi") || r.Status != responses.ResponseStatusCompleted {
			t.Fatalf("response %s", r.RawJSON())
		}
	})

	// The call's output goes back chained to the response that made it.
	t.Run("tool call", func(t *testing.T) {
		e := newTestEnv(t, func(o *Options) { o.Provider = callsOrAnswers("client_fn") })
		var sid, next string
		r := create(e, &sid, responses.ResponseNewParams{Input: text("go"), Tools: fnTool})
		if len(r.Output) != 1 || r.Output[0].Type != "function_call" {
			t.Fatalf("response %s", r.RawJSON())
		}
		call := r.Output[0].AsFunctionCall()
		if call.Name != "client_fn" || call.CallID == "" || call.Arguments != "{}" {
			t.Fatalf("function call %s", call.RawJSON())
		}
		r = create(e, &next, responses.ResponseNewParams{
			Tools:              fnTool,
			PreviousResponseID: openai.String(r.ID),
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: openai.String(call.CallID),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("7")},
				}},
			}},
		})
		if r.OutputText() != "the answer is 7" || next != sid {
			t.Fatalf("response %s in session %s, want %s", r.RawJSON(), next, sid)
		}
	})

	t.Run("tool call streamed", func(t *testing.T) {
		e := newTestEnv(t, func(o *Options) { o.Provider = callsOrAnswers("client_fn") })
		var sid string
		r := stream(e, &sid, responses.ResponseNewParams{Input: text("go"), Tools: fnTool})
		if len(r.Output) != 1 || r.Output[0].Type != "function_call" || r.Output[0].AsFunctionCall().Name != "client_fn" {
			t.Fatalf("response %s", r.RawJSON())
		}
	})

	// Codex's loop: store:false, the whole input each turn with the
	// output items appended as they came, no previous_response_id.
	t.Run("store false input continues its session", func(t *testing.T) {
		e := newTestEnv(t, nil)
		var first string
		input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("turn 1", responses.EasyInputMessageRoleUser)}
		for i := 1; i <= 3; i++ {
			var sid string
			r := create(e, &sid, responses.ResponseNewParams{
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
				Store: openai.Bool(false),
			})
			if i == 1 {
				first = sid
			} else if sid != first {
				t.Fatalf("turn %d in session %s, turn 1 in %s", i, sid, first)
			}
			for _, item := range r.Output {
				m := item.AsMessage().ToParam()
				input = append(input, responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
			}
			input = append(input, responses.ResponseInputItemParamOfMessage("turn "+itoa(i+1), responses.EasyInputMessageRoleUser))
		}
	})
}
