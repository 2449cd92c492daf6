package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// chatRequest is the part of a chat completion request the gateway reads:
// the parameters it passes on have the names provider.Params has.
type chatRequest struct {
	Model         string            `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Tools         []json.RawMessage `json:"tools"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	provider.Params
}

// decodeChat is what a chat completion request asks besides its messages.
func (s *Server) decodeChat(cr *chatRequest) (request, error) {
	req := request{model: cr.Model, tools: cr.Tools, params: chatParams(cr.Params)}
	if err := s.pickModel(&req); err != nil {
		return req, err
	}
	return req, s.checkTools(req.tools)
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
		if err := refuseMarkers(m.Extra, fmt.Sprintf("messages[%d]", i)); err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

func parseMessage(raw json.RawMessage) (sessions.Message, error) {
	var probe struct {
		Role string `json:"role"`
	}
	if json.Unmarshal(raw, &probe) == nil && probe.Role == "developer" {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return sessions.Message{}, err
		}
		fields["role"] = json.RawMessage(`"system"`)
		raw, _ = json.Marshal(fields)
	}
	m, err := sessions.ParseMessage(raw)
	if err != nil {
		return sessions.Message{}, err
	}
	m.Seq, m.TS = 0, ""
	return m, nil
}

// chatCompletions serves POST /v1/chat/completions. The client sends its
// whole conversation; with X-Hermes-Session-Id the messages beyond the
// stored history are appended, a contradicting history goes to a new
// session whose parent is the named one, and without the header a new
// session is made.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) error {
	var req chatRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	msgs, err := parseChatMessages(req.Messages)
	if err != nil {
		return err
	}
	asked, err := s.decodeChat(&req)
	if err != nil {
		return err
	}
	ctx := r.Context()
	k, err := s.lookupKey(ctx, r, &req)
	defer k.unlock()
	if err != nil {
		return err
	}
	var a admission
	var add, stored, replayed []sessions.Message
	var prior hash.Hash // the digest state of msgs' history, when found by it
	var replayCount int64
	sid := r.Header.Get(SessionHeader)
	if k.found {
		var unlock func()
		a, replayed, replayCount, unlock, err = s.keyedTurn(ctx, k)
		if err != nil {
			unlock()
			return err
		}
		if replayed != nil {
			defer unlock()
		} else {
			// The key's turn got no reply (it failed, or a crash came
			// before its input was even stored): it runs again in its
			// session, as a request naming that session would, which
			// stores nothing twice.
			unlock()
			sid = k.rec.SessionID
		}
	}
	if replayed == nil && sid != "" {
		sess, unlock, err := s.namedSession(ctx, sid)
		defer unlock()
		if err != nil {
			return err
		}
		if stored, err = s.transcript(sess.ID); err != nil {
			return err
		}
		_, end, reply, undelivered, err := s.lastTurn(sess.ID, stored)
		if err != nil {
			return err
		}
		add = msgs
		if n, ok := reconcile(stored[:end], msgs); undelivered && ok && n == len(msgs) {
			// The client repeats the turn whose reply it never got: it is
			// answered from the session, whatever its state (a session
			// suspended since must not run the turn again in a successor).
			a, replayed, replayCount = admission{sess: sess}, reply, int64(len(stored))
		} else if a, err = s.admit(sess); err != nil {
			return err
		} else if a.fresh {
			stored = nil
		} else if n, ok := reconcile(stored, msgs); ok {
			add = msgs[n:]
		} else {
			// The guard: the stored history is never rewritten; the
			// client's version of it becomes a new session.
			sess, err := s.newSession(a.sess.ID, a.sess.SessionKey)
			if err != nil {
				return err
			}
			a, stored = admission{sess: sess, fresh: true}, nil
		}
	} else if replayed == nil {
		// No session named: the conversation is found by its history.
		rt, routed, err := s.routeHistory(ctx, msgs, retried(r))
		defer rt.release()
		if err != nil {
			return err
		}
		a, add, stored = rt.a, routed, rt.stored
		replayed, replayCount = rt.replay, rt.replayCount
		prior = rt.history
	}
	w.Header().Set(SessionHeader, a.sess.ID)
	if replayed == nil {
		if err := s.record(&k, a.sess.ID, len(stored)+len(add)); err != nil {
			return err
		}
	}
	turn := func(stream io.Writer, started func()) (turnOutcome, error) {
		if replayed != nil {
			return replay(replayed, replayCount, stream, started), nil
		}
		out, err := s.runTurn(ctx, a, add, asked, stream, started)
		if err == nil {
			s.done(&k, out)
			s.indexHistory(msgs, prior, out, a.sess.ID)
		}
		return out, err
	}

	id := "chatcmpl-" + randomID()
	created := s.now().Unix()
	model := s.modelOf(asked)
	if !req.Stream {
		out, err := turn(nil, nil)
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
	out, err := turn(stream, func() {
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
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage && out.reply.Usage != nil {
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
