package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// chatRequest is the part of a chat completion request the gateway reads:
// the parameters it passes on have the names provider.Params has.
type chatRequest struct {
	Model         string            `json:"model"`
	Messages      rawList           `json:"messages"`
	Tools         []json.RawMessage `json:"tools"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	provider.Params
}

// rawList is a JSON array kept as the bytes of its elements, cut out of
// the request body without decoding or copying them: the whole body has
// been checked (by encoding/json before it calls UnmarshalJSON, or by
// decodeChatBody), and the body is not reused. A client that re-sends a
// conversation of 1,000 messages has them read once
// (sessions.ParseValidMessage), not three times. null is an empty list,
// as for a slice.
type rawList []json.RawMessage

func (l *rawList) UnmarshalJSON(b []byte) error {
	var out rawList
	p, err := sessions.CutArray(b, func(elem []byte) {
		out = append(out, elem)
	})
	if err != nil {
		return errors.New("messages must be a list")
	}
	if p {
		*l = out
	} else {
		*l = nil
	}
	return nil
}

// decodeChat reads a chat completion request.
func (s *Server) decodeChat(w http.ResponseWriter, r *http.Request) (request, error) {
	cr := &chatRequest{}
	body, err := s.readBody(w, r)
	if err != nil {
		return request{}, err
	}
	if err := decodeChatBody(body, cr); err != nil {
		return request{}, notJSON(err)
	}
	if err := refuseLoneSurrogate(body); err != nil {
		return request{}, err
	}
	msgs, err := parseChatMessages(cr.Messages)
	if err != nil {
		return request{}, err
	}
	req := request{
		chat: true, msgs: msgs, stream: cr.Stream, includeUsage: cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage, wire: cr,
		model: cr.Model, tools: cr.Tools, params: chatParams(cr.Params),
	}
	if err := s.pickModel(&req); err != nil {
		return req, err
	}
	return req, s.checkTools(req.tools)
}

// decodeChatBody decodes body into cr as json.Unmarshal does, reading its
// messages once: the body is checked once (sessions.ValidJSON, which
// reads strings by whole runs of bytes, in a third of json.Valid's time),
// and its messages member is cut out of it (sessions.CutObject) before
// encoding/json decodes the rest, which it would otherwise scan a second
// time to find the member's end, and rawList a third. A body whose
// members are not plain (a name with an escape or a byte beyond ASCII,
// which encoding/json may still match to messages, without regard to
// case) is decoded whole. A 1,000-message request is so decoded in a
// fifth of the time.
func decodeChatBody(body []byte, cr *chatRequest) error {
	if !sessions.ValidJSON(body) {
		return json.Unmarshal(body, cr)
	}
	var msgs [][]byte
	rest := make([]byte, 0, 256)
	plain := true
	object := sessions.CutObject(body, func(key, value []byte) {
		for _, c := range key {
			if c == '\\' || c >= utf8.RuneSelf {
				plain = false
			}
		}
		if bytes.EqualFold(key, []byte(`"messages"`)) {
			msgs = append(msgs, value)
			return
		}
		if len(rest) == 0 {
			rest = append(rest, '{')
		} else {
			rest = append(rest, ',')
		}
		rest = append(append(append(rest, key...), ':'), value...)
	})
	if !object || !plain {
		return json.Unmarshal(body, cr)
	}
	if len(rest) == 0 {
		rest = append(rest, '{')
	}
	rest = append(rest, '}')
	// encoding/json calls UnmarshalJSON for each member named so, the last
	// one kept, and stops at the first error, before any of the others'.
	for _, m := range msgs {
		if err := cr.Messages.UnmarshalJSON(m); err != nil {
			return err
		}
	}
	return json.Unmarshal(rest, cr)
}

// parseChatMessages checks the client's messages as the store would; the
// role "developer" of newer clients is stored as "system".
func parseChatMessages(raw []json.RawMessage) ([]sessions.Message, error) {
	if len(raw) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty list")
	}
	msgs := make([]sessions.Message, 0, len(raw))
	for i, r := range raw {
		m, err := parseMessage(r)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("messages[%d]", i), "messages[%d]: %v", i, err)
		}
		if len(m.Extra) > 0 {
			if err := refuseMarkers(m.Extra, fmt.Sprintf("messages[%d]", i)); err != nil {
				return nil, err
			}
		}
		msgs = append(msgs, m)
	}
	if i, ok := orphanResult(msgs); !ok {
		param := fmt.Sprintf("messages[%d]", i)
		return nil, badRequest(param, "%s: a message with role \"tool\" must answer a call of the assistant message before it; tool_call_id %q answers no call there", param, msgs[i].ToolCallID)
	}
	return msgs, nil
}

// orphanResult finds the first tool message of a whole conversation that
// answers no call: a tool message follows an assistant message with
// tool_calls, or another tool message after one, and names one of its
// calls not yet answered. The API refuses such a conversation; the
// gateway refuses it the same way, before anything is stored, rather than
// store a message that no request upstream could carry.
func orphanResult(msgs []sessions.Message) (int, bool) {
	var pending []provider.ToolCall
	owner := -1 // the message whose calls pending are, decoded at its first result
	for i, m := range msgs {
		if m.Role != "tool" {
			pending, owner = nil, i
			continue
		}
		if owner >= 0 {
			pending, owner = agent.ToolCalls(msgs[owner]), -1
		}
		k := slices.IndexFunc(pending, func(c provider.ToolCall) bool { return c.ID == m.ToolCallID })
		if k < 0 {
			return i, false
		}
		pending = slices.Delete(pending, k, k+1)
	}
	return 0, true
}

// parseMessage reads a chat completions message; role developer (the
// newer name of system) is stored as system. A message whose bytes hold
// neither "developer" nor a \u escape cannot have that role, and is
// parsed once rather than probed first: a client re-sending a long
// conversation pays one JSON scan a message.
func parseMessage(raw json.RawMessage) (sessions.Message, error) {
	var probe struct {
		Role string `json:"role"`
	}
	if mayBeDeveloper(raw) && json.Unmarshal(raw, &probe) == nil && probe.Role == "developer" {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return sessions.Message{}, err
		}
		fields["role"] = json.RawMessage(`"system"`)
		raw, _ = json.Marshal(fields)
	}
	m, err := sessions.ParseValidMessage(raw)
	if err != nil {
		return sessions.Message{}, err
	}
	m.Seq, m.TS = 0, ""
	return m, nil
}

func mayBeDeveloper(raw []byte) bool {
	return bytes.Contains(raw, []byte("developer")) || bytes.Contains(raw, []byte(`\u`))
}

// chatCompletions serves POST /v1/chat/completions. The client sends its
// whole conversation; with X-Hermes-Session-Id the messages beyond the
// stored history are appended, a contradicting history goes to a new
// session whose parent is the named one, and without the header a new
// session is made.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) error {
	req, err := s.decodeChat(w, r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	rt, err := s.router.routeRequest(ctx, r, req)
	defer rt.release()
	if err != nil {
		return err
	}
	a := rt.a
	w.Header().Set(SessionHeader, a.sess.ID)

	id := "chatcmpl-" + randomID()
	created := s.now().Unix()
	model := req.reported
	if !req.stream {
		out, err := s.run(ctx, &rt, req, nil, nil)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, chatCompletion(id, created, orDefault(out.model, model), out))
		s.whenDelivered(w, a.sess.ID, out.count)
		return nil
	}

	var sse *sseWriter
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
	}
	stream := writerFunc(func(p []byte) (int, error) {
		sse.event("", chunk(map[string]any{"content": string(p)}, nil))
		return len(p), nil
	})
	out, err := s.run(ctx, &rt, req, stream, func() {
		sse = startSSE(w)
		sse.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	})
	if err != nil {
		if sse == nil {
			return err
		}
		// The stream has started: the failure is its last event.
		ae := s.toAPIError(err)
		sse.event("", map[string]any{"error": errorBody(ae.typ, ae.param, ae.code, ae.msg)})
		return nil
	}
	finish := "stop"
	delta := map[string]any{}
	if calls := pendingToolCalls(out.reply.Messages); len(calls) > 0 {
		finish = "tool_calls"
		indexed := make([]map[string]any, len(calls))
		for i, c := range calls {
			indexed[i] = map[string]any{"index": i, "id": c.ID, "type": "function", "function": c.Function}
		}
		delta["tool_calls"] = indexed
	}
	sse.event("", chunk(delta, finish))
	if req.includeUsage && out.reply.Usage != nil {
		sse.event("", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": out.reply.Usage,
		})
	}
	sse.raw("", []byte("[DONE]"))
	s.whenDelivered(w, a.sess.ID, out.count)
	return nil
}

// apiChatCompletion is a chat.completion object.
type apiChatCompletion struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []apiChatChoice `json:"choices"`
	Usage   any             `json:"usage,omitempty"`
}

type apiChatChoice struct {
	Index        int            `json:"index"`
	Message      apiChatMessage `json:"message"`
	Logprobs     any            `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type apiChatMessage struct {
	Role      string              `json:"role"`
	Content   *string             `json:"content"`
	Refusal   any                 `json:"refusal"`
	ToolCalls []provider.ToolCall `json:"tool_calls,omitempty"`
}

// chatCompletion is the chat.completion object of a turn.
func chatCompletion(id string, created int64, model string, out turnOutcome) apiChatCompletion {
	text := replyText(out.reply.Messages)
	msg := apiChatMessage{Role: "assistant", Content: &text}
	finish := "stop"
	if calls := pendingToolCalls(out.reply.Messages); len(calls) > 0 {
		msg.ToolCalls = calls
		finish = "tool_calls"
		if text == "" {
			msg.Content = nil
		}
	}
	obj := apiChatCompletion{
		ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices: []apiChatChoice{{Message: msg, FinishReason: finish}},
	}
	if out.reply.Usage != nil {
		obj.Usage = out.reply.Usage
	}
	return obj
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// randomID is the random part of the ids of chat completions and output
// items.
func randomID() string {
	var b [12]byte
	rand.Read(b[:]) // crypto/rand does not fail on supported platforms
	return hex.EncodeToString(b[:])
}
