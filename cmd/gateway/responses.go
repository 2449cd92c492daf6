package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// responsesRequest is the part of a Responses API request the gateway
// reads; metadata is accepted and not used.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Conversation       json.RawMessage   `json:"conversation"`
	Store              *bool             `json:"store"`
	Stream             bool              `json:"stream"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  json.RawMessage   `json:"parallel_tool_calls"`
	Temperature        json.RawMessage   `json:"temperature"`
	TopP               json.RawMessage   `json:"top_p"`
	MaxOutputTokens    json.RawMessage   `json:"max_output_tokens"`
	Text               json.RawMessage   `json:"text"`
	Reasoning          json.RawMessage   `json:"reasoning"`
	User               json.RawMessage   `json:"user"`
}

// decodeResponses is what a Responses request asks besides its input, in
// chat completions' terms: max_output_tokens is max_completion_tokens,
// text.format response_format, reasoning.effort reasoning_effort, and the
// tools and tool_choice are translated (responsesTools,
// responsesToolChoice).
func (s *Server) decodeResponses(w http.ResponseWriter, r *http.Request) (request, error) {
	rr := &responsesRequest{}
	if err := s.decodeBody(w, r, rr); err != nil {
		return request{}, err
	}
	tools, client, err := responsesTools(rr.Tools)
	if err != nil {
		return request{}, err
	}
	conv, err := parseConversation(rr.Conversation)
	if err != nil {
		return request{}, err
	}
	prev := deref(rr.PreviousResponseID)
	if prev != "" && conv != "" {
		return request{}, badRequest("previous_response_id", "previous_response_id and conversation cannot be used together")
	}
	input, err := parseInput(rr.Input, client, prev != "" || conv != "", func(id string) (json.RawMessage, error) { return s.resolveItem(r.Context(), id) })
	if err != nil {
		return request{}, err
	}
	req := request{
		msgs: input, conv: conv, prev: prev, instructions: deref(rr.Instructions),
		store: rr.Store == nil || *rr.Store, stream: rr.Stream, wire: rr,
		model: rr.Model, tools: tools, client: client, params: provider.Params{
			ToolChoice:          responsesToolChoice(rr.ToolChoice),
			ParallelToolCalls:   set(rr.ParallelToolCalls),
			Temperature:         set(rr.Temperature),
			TopP:                set(rr.TopP),
			MaxCompletionTokens: set(rr.MaxOutputTokens),
			ResponseFormat:      responseFormat(rr.Text),
			ReasoningEffort:     reasoningEffort(rr.Reasoning),
			User:                set(rr.User),
		}, echo: gatewaystate.ResponseParams{
			Temperature: set(rr.Temperature), TopP: set(rr.TopP), MaxOutputTokens: set(rr.MaxOutputTokens),
			ParallelToolCalls: set(rr.ParallelToolCalls), Tools: toolList(rr.Tools), ToolChoice: set(rr.ToolChoice),
			Text: set(rr.Text), Reasoning: set(rr.Reasoning), User: set(rr.User),
		}}
	if err := s.pickModel(&req); err != nil {
		return req, err
	}
	return req, s.checkTools(req.tools)
}

// toolList is a request's tools as its response reports them, nil for
// none.
func toolList(tools []json.RawMessage) json.RawMessage {
	if len(tools) == 0 {
		return nil
	}
	b, _ := marshal(tools) // decoded values always encode
	return b
}

// inputItem is one item of a Responses API input list.
type inputItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Action    json.RawMessage `json:"action"`
	Output    json.RawMessage `json:"output"`
}

// skippedItems are the input item types that are not stored: what they
// hold only the API's own models can use (reasoning, with its encrypted
// content), or a call the API ran itself, whose result is in the message
// after it and which no tool message answers (web_search_call).
var skippedItems = map[string]bool{"reasoning": true, "web_search_call": true}

// parseInput turns the input (a string, or a list of items) into chat
// messages: message items keep their role (developer becomes system) and
// their text and image parts; function_call, custom_tool_call and
// local_shell_call items become an assistant message with tool_calls, and
// function_call_output and custom_tool_call_output items tool messages;
// skippedItems are left out. An output item answers a call item earlier
// in the input, not answered yet; with stored (a previous_response_id or
// a conversation), the input may also begin with outputs, which answer
// the stored response's calls. Any other output is refused, as the API
// refuses an output with no call.
func parseInput(raw json.RawMessage, client clientTools, stored bool, resolve func(id string) (json.RawMessage, error)) ([]sessions.Message, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("input", "input is required")
	}
	if raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, badRequest("input", "input: %v", err)
		}
		return []sessions.Message{{Role: "user", Content: sessions.TextContent(text)}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest("input", "input must be a string or a list of items")
	}
	if len(items) == 0 {
		return nil, badRequest("input", "input is an empty list")
	}
	var msgs []sessions.Message
	calls := map[string]bool{} // the input's calls by id: true once answered
	for i, rawItem := range items {
		param := fmt.Sprintf("input[%d]", i)
		var it inputItem
		if err := json.Unmarshal(rawItem, &it); err != nil {
			return nil, badRequest(param, "%s: %v", param, err)
		}
		if it.Type == "item_reference" {
			item, err := resolve(it.ID)
			if err != nil {
				return nil, err
			}
			if item == nil {
				return nil, badRequest(param, "%s: item_reference %q names no output item of a stored response", param, it.ID)
			}
			rawItem, it = item, inputItem{}
			json.Unmarshal(rawItem, &it) // an item the gateway wrote
		}
		var fields map[string]json.RawMessage
		json.Unmarshal(rawItem, &fields) // an object: it decoded as an item
		if err := refuseMarkers(fields, param); err != nil {
			return nil, err
		}
		switch it.Type {
		case "", "message":
			role := it.Role
			switch role {
			case "developer":
				role = "system"
			case "user", "assistant", "system":
			default:
				return nil, badRequest(param, "%s: role %q is not one of user, assistant, system, developer", param, it.Role)
			}
			content, err := convertContent(it.Content)
			if err != nil {
				return nil, badRequest(param, "%s: %v", param, err)
			}
			msgs = append(msgs, sessions.Message{Role: role, Content: content})
		case "function_call", "custom_tool_call", "local_shell_call":
			call, err := toolCall(it, client)
			if err != nil {
				return nil, badRequest(param, "%s: %v", param, err)
			}
			msgs = appendCall(msgs, call)
			calls[call.ID] = false
		case "function_call_output", "custom_tool_call_output":
			answered, ok := calls[it.CallID]
			if answered || !ok && !(stored && allResults(msgs)) {
				return nil, badRequest(param, "%s: no tool call found for %s with call_id %q: it answers no call of the input, or one answered already", param, it.Type, it.CallID)
			}
			calls[it.CallID] = true
			out := it.Output
			if len(out) > 0 && out[0] == '[' {
				var err error
				if out, err = convertContent(out); err != nil {
					return nil, badRequest(param, "%s: %v", param, err)
				}
			}
			if len(out) == 0 || (out[0] != '"' && out[0] != '[') {
				return nil, badRequest(param, "%s: output must be a string or a list of parts", param)
			}
			msgs = append(msgs, sessions.Message{Role: "tool", ToolCallID: it.CallID, Content: out})
		default:
			if !skippedItems[it.Type] {
				return nil, badRequest(param, "%s: item type %q is not supported", param, it.Type)
			}
		}
	}
	if len(msgs) == 0 {
		return nil, badRequest("input", "input holds no message or tool call, only items that are not stored (reasoning, web_search_call)")
	}
	return msgs, nil
}

// allResults reports whether msgs are all tool messages (none at all
// included).
func allResults(msgs []sessions.Message) bool {
	return !slices.ContainsFunc(msgs, func(m sessions.Message) bool { return m.Role != "tool" })
}

// toolCall is the chat tool call of a call item. A custom tool's
// free-form input is its arguments as they are; a local shell call is a
// call of the tool local_shell (the API's name for it) whose arguments
// are its action, so that the command is kept and its result, a
// function_call_output, answers it.
func toolCall(it inputItem, client clientTools) (provider.ToolCall, error) {
	call := provider.ToolCall{ID: it.CallID, Type: "function"}
	name := namespacedName(it.Namespace, it.Name)
	switch it.Type {
	case "function_call":
		call.Function.Name, call.Function.Arguments = name, it.Arguments
	case "custom_tool_call":
		call.Function.Name, call.Function.Arguments = name, it.Input
		if client.custom[name] {
			call.Function.Arguments = customArguments(it.Input)
		}
	case "local_shell_call":
		if call.ID == "" {
			call.ID = it.ID
		}
		action := bytes.TrimSpace(it.Action)
		if len(action) == 0 || action[0] != '{' {
			return call, errors.New("local_shell_call needs an action object")
		}
		var compact bytes.Buffer
		json.Compact(&compact, action) // valid: the item decoded
		call.Function.Name, call.Function.Arguments = "local_shell", compact.String()
	}
	if call.ID == "" {
		return call, fmt.Errorf("%s needs a call_id", it.Type)
	}
	return call, nil
}

// appendCall adds call to msgs: to the assistant message before it when
// that message holds only tool calls (calls made in parallel are one
// message in the chat API), else as a new assistant message.
func appendCall(msgs []sessions.Message, call provider.ToolCall) []sessions.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" && hasToolCalls(msgs[n-1]) && len(msgs[n-1].Content) == 0 {
		var calls []provider.ToolCall
		json.Unmarshal(msgs[n-1].ToolCalls, &calls)
		msgs[n-1].ToolCalls, _ = json.Marshal(append(calls, call))
		return msgs
	}
	tc, _ := json.Marshal([]provider.ToolCall{call})
	return append(msgs, sessions.Message{Role: "assistant", ToolCalls: tc})
}

// convertContent turns message content (a string, or a list of input_text,
// output_text and input_image parts) into chat content: a string for text
// only, else a list of chat parts.
func convertContent(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("content is required")
	}
	if raw[0] == '"' {
		return raw, nil
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ImageURL string          `json:"image_url"`
		Detail   string          `json:"detail"`
		Other    json.RawMessage `json:"-"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, errors.New("content must be a string or a list of parts")
	}
	var texts []string
	var chat []map[string]any
	onlyText := true
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
			chat = append(chat, map[string]any{"type": "text", "text": p.Text})
		case "input_image":
			onlyText = false
			img := map[string]any{"url": p.ImageURL}
			if p.Detail != "" {
				img["detail"] = p.Detail
			}
			chat = append(chat, map[string]any{"type": "image_url", "image_url": img})
		default:
			return nil, fmt.Errorf("content part type %q is not supported", p.Type)
		}
	}
	if onlyText && len(texts) == 1 {
		return sessions.TextContent(texts[0]), nil
	}
	return marshal(chat)
}

// parseConversation reads the conversation field: a slug, or an object with
// an id.
func parseConversation(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var slug string
	if raw[0] == '{' {
		var obj struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", badRequest("conversation", "conversation: %v", err)
		}
		slug = obj.ID
	} else if err := json.Unmarshal(raw, &slug); err != nil {
		return "", badRequest("conversation", "conversation must be a string or an object with an id")
	}
	if err := fsstore.CheckID("conversation", slug); err != nil {
		return "", badRequest("conversation", "%v", err)
	}
	return slug, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// sameInstructions reports whether the last instructions stored in msgs
// are text: instructions sent again unchanged are not stored again.
func sameInstructions(msgs []sessions.Message, text string) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if marked(msgs[i], instructionsMarker) {
			return msgs[i].Text() == text
		}
	}
	return false
}

// createResponse serves POST /v1/responses. The session is, in order: the
// turn of a seen Idempotency-Key's, the one X-Hermes-Session-Id names, the
// conversation's (made on its first request), the session of
// previous_response_id, the one of the thread a client names in its own
// headers (threadOf), the one the input's history is found in, or a new
// one.
func (s *Server) createResponse(w http.ResponseWriter, r *http.Request) error {
	req, err := s.decodeResponses(w, r)
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

	now := s.now()
	doc := gatewaystate.Response{
		ID:                 newResponseID(now, a.sess.ID),
		SessionID:          a.sess.ID,
		CreatedAt:          fsstore.TimeOf(now),
		Model:              req.reported,
		Status:             "in_progress",
		Output:             json.RawMessage("[]"),
		PreviousResponseID: req.prev,
		Conversation:       req.conv,
		Instructions:       req.instructions,
		Params:             req.echo,
	}
	if req.store {
		req.stamp = newStamp(doc, s.opts.Tools)
	}

	var rs *responseStream
	var stream io.Writer
	var started func()
	if req.stream {
		rs = &responseStream{itemID: outputItemID(doc.ID, "msg", 0), responseID: doc.ID}
		stream = rs
		started = func() {
			rs.sse = startSSE(w)
			obj := responseObject(doc, req.store)
			rs.send("response.created", map[string]any{"response": obj})
			rs.send("response.in_progress", map[string]any{"response": obj})
		}
	}
	out, err := s.run(ctx, &rt, req, stream, started)
	if err == nil {
		doc = finishDoc(doc, out, rs, req.client)
		// The reply is stored: a document that cannot be written now
		// does not make the turn a failure, which a client would retry.
		if kerr := s.storeResponse(doc, req, out); kerr != nil {
			s.opts.Logf("session %s: the reply is stored, but keeping response %s failed: %v", a.sess.ID, doc.ID, kerr)
		}
	}
	if err != nil {
		if rs == nil || rs.sse == nil {
			return err
		}
		// The stream has started: the failure is its last event.
		ae := s.toAPIError(err)
		doc.Status = "failed"
		obj := responseObject(doc, req.store)
		obj.Error = map[string]any{"code": orDefault(ae.code, "server_error"), "message": ae.msg}
		rs.send("response.failed", map[string]any{"response": obj})
		return nil
	}
	if rs == nil {
		writeJSON(w, http.StatusOK, responseObject(doc, req.store))
		s.whenDelivered(w, a.sess.ID, out.count)
		return nil
	}
	rs.finish(doc, out, req.client)
	rs.send("response.completed", map[string]any{"response": responseObject(doc, req.store)})
	s.whenDelivered(w, a.sess.ID, out.count)
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// storeResponse stores the response document (unless store is false). The
// document is a cache, written without a sync, when the reply's lines
// carry the response (stampField): a turn that ran, in a session its id
// names. A reply answered from a stored one (out.replayed) carries the
// stamp of the request that stored it, and its new response is synced.
func (s *Server) storeResponse(doc gatewaystate.Response, req request, out turnOutcome) error {
	if !req.store {
		return nil
	}
	put := s.opts.Store.PutResponse
	if req.stamp != nil && !out.replayed && gatewaystate.ResponseSession(doc.ID) == doc.SessionID {
		put = s.opts.Store.CacheResponse
	}
	_, err := put(doc, s.opts.MaxStoredResponses)
	return err
}

// finishDoc fills the response document from the turn: status, output
// items, text and usage. A stream's message item keeps the id its events
// used.
func finishDoc(doc gatewaystate.Response, out turnOutcome, rs *responseStream, client clientTools) gatewaystate.Response {
	text := replyText(out.reply.Messages)
	calls := pendingToolCalls(out.reply.Messages)
	var items []any
	if text != "" || len(calls) == 0 {
		items = append(items, messageItem(outputItemID(doc.ID, "msg", 0), text, "completed"))
	}
	for _, c := range calls {
		items = append(items, callItem(doc.ID, len(items), c, "completed", client))
	}
	doc.Status = "completed"
	doc.Model = orDefault(out.model, doc.Model)
	doc.OutputText = text
	doc.Output, _ = marshal(items)
	doc.MessageCount = out.count
	if u := out.reply.Usage; u != nil {
		doc.Usage = &gatewaystate.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	}
	return doc
}

func messageItem(id, text, status string) map[string]any {
	return map[string]any{
		"type": "message", "id": id, "status": status, "role": "assistant",
		"content": []any{outputText(text)},
	}
}

func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

// callItem is the output item of a call: a custom_tool_call, with its
// input, when it names one of the request's custom tools, else a
// function_call; a tool of a namespace is named as the client named it,
// with its namespace.
func callItem(responseID string, index int, c provider.ToolCall, status string, client clientTools) map[string]any {
	namespace, name := client.split(c.Function.Name)
	item := map[string]any{
		"type": "function_call", "id": outputItemID(responseID, "fc", index), "call_id": c.ID, "name": name,
		"arguments": c.Function.Arguments, "status": status,
	}
	if client.custom[c.Function.Name] {
		item = map[string]any{
			"type": "custom_tool_call", "id": outputItemID(responseID, "ctc", index), "call_id": c.ID, "name": name,
			"input": customInput(c.Function.Arguments), "status": status,
		}
	}
	if namespace != "" {
		item["namespace"] = namespace
	}
	return item
}

// outputItemID is the id of the output item at index of a response:
// its kind (msg, fc, ctc), the response id without "resp_", and the
// index, e.g. msg_20261121_020734_123456_a1b2c3d4e5f60718_0. So an
// item_reference names the response that holds the item (itemResponse).
func outputItemID(responseID, kind string, index int) string {
	return fmt.Sprintf("%s_%s_%d", kind, strings.TrimPrefix(responseID, "resp_"), index)
}

// itemResponse is the id of the response whose output holds the item id
// names (outputItemID), or "" when id is not of that form.
func itemResponse(id string) string {
	_, rest, ok := strings.Cut(id, "_")
	i := strings.LastIndexByte(rest, '_')
	if !ok || i <= 0 {
		return ""
	}
	return "resp_" + rest[:i]
}

// resolveItem is the stored output item id names, for an item_reference:
// an item of a stored response of a session that still exists.
func (s *Server) resolveItem(ctx context.Context, id string) (json.RawMessage, error) {
	respID := itemResponse(id)
	if respID == "" {
		return nil, nil
	}
	doc, err := s.router.response(respID)
	if err == nil {
		_, err = s.router.getSession(ctx, doc.SessionID)
	}
	if errors.Is(err, fsstore.ErrNotFound) || errors.Is(err, fsstore.ErrInvalid) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	json.Unmarshal(doc.Output, &items)
	for _, item := range items {
		var it struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(item, &it) == nil && it.ID == id {
			return item, nil
		}
	}
	return nil, nil
}

// apiResponse is a response as the Responses API returns it.
type apiResponse struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Error              any             `json:"error"`
	IncompleteDetails  any             `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             json.RawMessage `json:"output"`
	ParallelToolCalls  json.RawMessage `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Conversation       *struct {
		ID string `json:"id"`
	} `json:"conversation"`
	Reasoning   json.RawMessage `json:"reasoning"`
	Store       bool            `json:"store"`
	Temperature json.RawMessage `json:"temperature"`
	Text        json.RawMessage `json:"text"`
	ToolChoice  json.RawMessage `json:"tool_choice"`
	Tools       json.RawMessage `json:"tools"`
	TopP        json.RawMessage `json:"top_p"`
	Truncation  string          `json:"truncation"`
	Usage       any             `json:"usage,omitempty"`
	User        json.RawMessage `json:"user"`
	Metadata    map[string]any  `json:"metadata"`
}

// responseObject is a stored (or in-progress) response as the API returns
// it: the parameters its request sent, as sent, and the API's defaults
// for those it did not.
func responseObject(doc gatewaystate.Response, store bool) *apiResponse {
	p := doc.Params
	r := &apiResponse{
		ID:                doc.ID,
		Object:            "response",
		Status:            doc.Status,
		Model:             doc.Model,
		Output:            doc.Output,
		MaxOutputTokens:   orNull(p.MaxOutputTokens),
		ParallelToolCalls: orJSON(p.ParallelToolCalls, "true"),
		Reasoning:         orJSON(p.Reasoning, `{"effort":null,"summary":null}`),
		Store:             store,
		Temperature:       orJSON(p.Temperature, "1"),
		Text:              orJSON(p.Text, `{"format":{"type":"text"}}`),
		ToolChoice:        orJSON(p.ToolChoice, `"auto"`),
		Tools:             orJSON(p.Tools, "[]"),
		TopP:              orJSON(p.TopP, "1"),
		Truncation:        "disabled",
		User:              orNull(p.User),
		Metadata:          map[string]any{},
	}
	if t, err := doc.CreatedAt.Instant(); err == nil {
		r.CreatedAt = t.Unix()
	}
	if doc.Instructions != "" {
		r.Instructions = &doc.Instructions
	}
	if doc.PreviousResponseID != "" {
		r.PreviousResponseID = &doc.PreviousResponseID
	}
	if doc.Conversation != "" {
		r.Conversation = &struct {
			ID string `json:"id"`
		}{doc.Conversation}
	}
	if u := doc.Usage; u != nil {
		r.Usage = map[string]any{
			"input_tokens": u.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": u.TotalTokens,
		}
	}
	if len(r.Output) == 0 {
		r.Output = json.RawMessage("[]")
	}
	return r
}

// orJSON is raw, or def when raw is absent.
func orJSON(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(def)
	}
	return raw
}

func orNull(raw json.RawMessage) json.RawMessage { return orJSON(raw, "null") }

// getResponse serves GET /v1/responses/{id}.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	doc, err := s.router.response(id)
	if err == nil {
		// Deleting a session deletes its replies, as far as clients see;
		// another key's are unknown.
		_, err = s.router.getSession(r.Context(), doc.SessionID)
	}
	if errors.Is(err, fsstore.ErrNotFound) || errors.Is(err, fsstore.ErrInvalid) {
		return notFound("", "response_not_found", "response with id '%s' not found", id)
	}
	if err != nil {
		return err
	}
	w.Header().Set(SessionHeader, doc.SessionID)
	writeJSON(w, http.StatusOK, responseObject(doc, true))
	return nil
}

// responseStream writes the Responses API's events: the provider's text
// arrives through Write as output_text deltas of one message item.
type responseStream struct {
	mu         sync.Mutex
	sse        *sseWriter
	seq        int
	itemID     string
	responseID string
	opened     bool
}

func (rs *responseStream) send(typ string, fields map[string]any) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.sendLocked(typ, fields)
}

func (rs *responseStream) sendLocked(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = rs.seq
	rs.seq++
	rs.sse.event(typ, fields)
}

func (rs *responseStream) openLocked() {
	if rs.opened {
		return
	}
	rs.opened = true
	item := messageItem(rs.itemID, "", "in_progress")
	item["content"] = []any{}
	rs.sendLocked("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	rs.sendLocked("response.content_part.added", map[string]any{
		"item_id": rs.itemID, "output_index": 0, "content_index": 0, "part": outputText(""),
	})
}

func (rs *responseStream) Write(p []byte) (int, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.openLocked()
	rs.sendLocked("response.output_text.delta", map[string]any{
		"item_id": rs.itemID, "output_index": 0, "content_index": 0, "delta": string(p), "logprobs": []any{},
	})
	return len(p), nil
}

// finish closes the message item with the whole text and sends the
// function calls the reply ends with.
func (rs *responseStream) finish(doc gatewaystate.Response, out turnOutcome, client clientTools) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	text := doc.OutputText
	calls := pendingToolCalls(out.reply.Messages)
	index := 0
	if text != "" || len(calls) == 0 {
		rs.openLocked()
		rs.sendLocked("response.output_text.done", map[string]any{
			"item_id": rs.itemID, "output_index": 0, "content_index": 0, "text": text, "logprobs": []any{},
		})
		rs.sendLocked("response.content_part.done", map[string]any{
			"item_id": rs.itemID, "output_index": 0, "content_index": 0, "part": outputText(text),
		})
		rs.sendLocked("response.output_item.done", map[string]any{"output_index": 0, "item": messageItem(rs.itemID, text, "completed")})
		index++
	}
	for _, c := range calls {
		if client.custom[c.Function.Name] {
			item := callItem(rs.responseID, index, c, "in_progress", client)
			input := item["input"]
			item["input"] = ""
			rs.sendLocked("response.output_item.added", map[string]any{"output_index": index, "item": item})
			rs.sendLocked("response.custom_tool_call_input.delta", map[string]any{
				"item_id": item["id"], "output_index": index, "delta": input,
			})
			rs.sendLocked("response.custom_tool_call_input.done", map[string]any{
				"item_id": item["id"], "output_index": index, "input": input,
			})
			rs.sendLocked("response.output_item.done", map[string]any{"output_index": index, "item": callItem(rs.responseID, index, c, "completed", client)})
			index++
			continue
		}
		// The added item's arguments are empty and the deltas carry them,
		// as the API streams them: a client that appends each delta to the
		// added item (openai-node's ResponseStream does) would otherwise
		// hold them twice. The provider's reply is whole, so one delta.
		item := callItem(rs.responseID, index, c, "in_progress", client)
		item["arguments"] = ""
		rs.sendLocked("response.output_item.added", map[string]any{"output_index": index, "item": item})
		rs.sendLocked("response.function_call_arguments.delta", map[string]any{
			"item_id": item["id"], "output_index": index, "delta": c.Function.Arguments,
		})
		rs.sendLocked("response.function_call_arguments.done", map[string]any{
			"item_id": item["id"], "output_index": index, "name": item["name"], "arguments": c.Function.Arguments,
		})
		rs.sendLocked("response.output_item.done", map[string]any{"output_index": index, "item": callItem(rs.responseID, index, c, "completed", client)})
		index++
	}
}

// newResponseID returns a new response id of session sid: "resp_", the
// time to the microsecond, 8 random bytes, and the session, e.g.
// resp_20261121_020734_123456_a1b2c3d4e5f60718_20261121_020700_a1b2c3. A
// listing sorts by creation (the index can be rebuilt from one), a
// gateway storing many responses a second needs more than
// fsstore.NewID's 3 random bytes, and a response whose document a crash
// lost is found in its session's transcript
// (gatewaystate.ResponseSession). A session id too long for a response id
// (96 bytes) is left out: that response's document is synced.
func newResponseID(now time.Time, sid string) string {
	ts := strings.Replace(now.UTC().Format("20060102_150405.000000"), ".", "_", 1)
	id := "resp_" + ts + "_" + randomHex(8)
	if withSession := id + "_" + sid; fsstore.CheckID("response id", withSession) == nil {
		return withSession
	}
	return id
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}
