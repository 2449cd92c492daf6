package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// request is what a client asks of a turn besides its messages, decoded
// from either API's wire shape into the chat completions API's terms, in
// which the gateway's upstream is asked.
type request struct {
	// chat: a chat completion request, whose msgs are the client's whole
	// conversation; else a Responses request, whose msgs are its input.
	chat bool
	msgs []sessions.Message
	// conv, prev and instructions are a Responses request's conversation,
	// previous_response_id and instructions; store is false for
	// store:false.
	conv, prev, instructions string
	store                    bool
	// stream: the reply goes as server-sent events; includeUsage: a
	// chat stream ends with a usage chunk.
	stream, includeUsage bool
	// wire is the request as decoded, which its idempotency key's digest
	// is of.
	wire any
	// model is the model the request names; empty: the configured one.
	// reported is the model a reply reports until the provider names the
	// one that answered: model, else the configured one.
	model, reported string
	// tools are the client's tools as chat completions function-calling
	// entries; client says which of them are, in the client's terms,
	// Responses custom tools or tools of a namespace (clientTools).
	tools  []json.RawMessage
	client clientTools
	params provider.Params
	// provider answers the model (gateway.models), and upstream is the
	// name it is asked by; nil and "": the configured provider, asked for
	// model.
	provider provider.Provider
	upstream string
	// echo is what a Responses request's response reports of it.
	echo gatewaystate.ResponseParams
	// stamp is the response a Responses request with store keeps, which
	// its reply's lines carry (stampField).
	stamp *responseStamp
}

// pickModel finds the provider of the model req names: an entry of
// gateway.models, else the configured provider, asked for that model. With
// gateway.models_only a model that is neither listed nor the configured
// one is a 404 model_not_found, as OpenAI answers an unknown model.
func (s *Server) pickModel(req *request) error {
	req.upstream, req.reported = req.model, orDefault(req.model, s.opts.Model)
	if req.model == "" {
		return nil
	}
	for _, m := range s.opts.Models {
		if m.Name == req.model {
			req.provider, req.upstream = m.Provider, orDefault(m.Upstream, m.Name)
			return nil
		}
	}
	if s.opts.ModelsOnly && req.model != s.opts.Model {
		return notFound("model", "model_not_found", "The model '%s' does not exist or you do not have access to it (gateway.models_only: the gateway serves the models GET /v1/models lists)", req.model)
	}
	return nil
}

// set is a parameter's value as the client sent it, or nil for a null
// one, which is sent as an absent one.
func set(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// chatParams are chat completions' parameters, as the client sent them.
func chatParams(p provider.Params) provider.Params {
	return provider.Params{
		ToolChoice: set(p.ToolChoice), ParallelToolCalls: set(p.ParallelToolCalls),
		Temperature: set(p.Temperature), TopP: set(p.TopP),
		MaxTokens: set(p.MaxTokens), MaxCompletionTokens: set(p.MaxCompletionTokens),
		Stop: set(p.Stop), Seed: set(p.Seed),
		PresencePenalty: set(p.PresencePenalty), FrequencyPenalty: set(p.FrequencyPenalty),
		ResponseFormat: set(p.ResponseFormat), ReasoningEffort: set(p.ReasoningEffort), User: set(p.User),
	}
}

// toolName is the name of a chat completions tool entry: function.name,
// or custom.name for the API's custom tools.
func toolName(raw json.RawMessage) (string, error) {
	var t struct {
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
		Custom *struct {
			Name string `json:"name"`
		} `json:"custom"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", err
	}
	switch {
	case t.Type == "function" && t.Function != nil && t.Function.Name != "":
		return t.Function.Name, nil
	case t.Type == "custom" && t.Custom != nil && t.Custom.Name != "":
		return t.Custom.Name, nil
	}
	return "", fmt.Errorf("want {\"type\":\"function\",\"function\":{\"name\":…}}")
}

// checkTools refuses a tool list that names a tool twice, or a tool of
// the gateway's own (gateway.tools): the model could not tell which one
// it calls, nor the gateway whose call it is.
func (s *Server) checkTools(tools []json.RawMessage) error {
	own := map[string]bool{}
	for _, t := range s.opts.Tools {
		own[t.Name()] = true
	}
	seen := map[string]bool{}
	for i, raw := range tools {
		param := fmt.Sprintf("tools[%d]", i)
		name, err := toolName(raw)
		switch {
		case err != nil:
			return badRequest(param, "%s: %v", param, err)
		case own[name]:
			return badRequest(param, "%s: the tool name %q is the name of one of the gateway's own tools (gateway.tools); rename the client's tool", param, name)
		case seen[name]:
			return badRequest(param, "%s: the tool name %q is given twice", param, name)
		}
		seen[name] = true
	}
	return nil
}

// clientTools is what the gateway keeps of a Responses request's tools
// to give a call back in the client's terms: the tools, by the name they
// are offered upstream, that are custom tools (offered as functions whose
// one argument, input, is the free-form text: customTool), and those that
// sit in a namespace (offered as NAMESPACE__NAME: namespacedName).
type clientTools struct {
	custom    map[string]bool
	namespace map[string]string
}

// name is the upstream name of a call's tool: name itself, or
// NAMESPACE__NAME for a tool of a namespace. Codex CLI sends an MCP
// server's tools as the namespace mcp__SERVER, so they reach the model
// with the names MCP clients give them (mcp__SERVER__TOOL).
func namespacedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "__" + name
}

// split is an upstream tool name in the client's terms: its namespace
// ("" for none) and its name there.
func (ct clientTools) split(upstream string) (namespace, name string) {
	if ns, ok := ct.namespace[upstream]; ok {
		return ns, strings.TrimPrefix(upstream, ns+"__")
	}
	return "", upstream
}

// responsesTools turns a Responses request's tools into chat completions
// entries: a function tool ({"type":"function","name",…}) becomes
// {"type":"function","function":{"name",…}}, a custom tool a function
// (customTool), and each tool of a namespace ({"type":"namespace","name",
// "tools":[…]}) one of these named NAMESPACE__NAME. The API's hosted
// tools (web_search, file_search, mcp, …) have no chat completions form
// and are left out.
func responsesTools(raw []json.RawMessage) (tools []json.RawMessage, ct clientTools, err error) {
	var add func(param, namespace string, r json.RawMessage) error
	add = func(param, namespace string, r json.RawMessage) error {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(r, &fields); err != nil {
			return badRequest(param, "%s: %v", param, err)
		}
		var typ, name string
		json.Unmarshal(fields["type"], &typ)
		json.Unmarshal(fields["name"], &name)
		if (typ == "function" || typ == "custom" || typ == "namespace") && name == "" {
			return badRequest(param, "%s: a %s tool needs a name", param, typ)
		}
		if namespace != "" && typ != "function" && typ != "custom" {
			return badRequest(param, "%s: a namespace holds function and custom tools, not %q", param, typ)
		}
		var fn map[string]json.RawMessage
		switch typ {
		case "function":
			delete(fields, "type")
			fn = fields
		case "custom":
			fn = customTool(fields)
		case "namespace":
			var inner []json.RawMessage
			if err := json.Unmarshal(fields["tools"], &inner); err != nil || len(inner) == 0 {
				return badRequest(param, "%s: a namespace tool needs a list of tools", param)
			}
			for j, t := range inner {
				if err := add(fmt.Sprintf("%s.tools[%d]", param, j), name, t); err != nil {
					return err
				}
			}
			return nil
		default:
			return nil
		}
		upstream := namespacedName(namespace, name)
		fn["name"], _ = marshal(upstream) // a string always encodes
		if typ == "custom" {
			if ct.custom == nil {
				ct.custom = map[string]bool{}
			}
			ct.custom[upstream] = true
		}
		if namespace != "" {
			if ct.namespace == nil {
				ct.namespace = map[string]string{}
			}
			ct.namespace[upstream] = namespace
		}
		b, _ := marshal(map[string]any{"type": "function", "function": fn}) // decoded values always encode
		tools = append(tools, b)
		return nil
	}
	for i, r := range raw {
		if err := add(fmt.Sprintf("tools[%d]", i), "", r); err != nil {
			return nil, clientTools{}, err
		}
	}
	return tools, ct, nil
}

// customTool is the function a Responses custom tool is offered upstream
// as: its name; its description, followed by the format its input must
// have (a grammar's syntax and definition); and one string parameter,
// input, that holds the free-form text. A call's input is given back to
// the client as a custom_tool_call's input.
func customTool(fields map[string]json.RawMessage) map[string]json.RawMessage {
	var desc string
	json.Unmarshal(fields["description"], &desc)
	var format struct {
		Type       string `json:"type"`
		Syntax     string `json:"syntax"`
		Definition string `json:"definition"`
	}
	json.Unmarshal(fields["format"], &format)
	note := "The argument input is the tool's input: free-form text, not JSON."
	if format.Type == "grammar" {
		note = fmt.Sprintf("The argument input is the tool's input: free-form text, not JSON, in this grammar (%s syntax):\n%s", format.Syntax, format.Definition)
	}
	if desc != "" {
		note = desc + "\n\n" + note
	}
	d, _ := marshal(note)
	return map[string]json.RawMessage{
		"name":        fields["name"],
		"description": d,
		"parameters":  json.RawMessage(`{"type":"object","properties":{"input":{"type":"string"}},"required":["input"],"additionalProperties":false}`),
	}
}

// customInput is the free-form input of a call of a custom tool: the
// input argument of the function it is offered as, or the arguments
// whole when they are not that.
func customInput(arguments string) string {
	var a struct {
		Input *string `json:"input"`
	}
	if json.Unmarshal([]byte(arguments), &a) == nil && a.Input != nil {
		return *a.Input
	}
	return arguments
}

// customArguments are the arguments a call of a custom tool is stored
// with: its input as the function's one argument.
func customArguments(input string) string {
	b, _ := marshal(map[string]string{"input": input})
	return string(b)
}

// responsesToolChoice is a Responses tool_choice in chat completions'
// shape: "auto", "none" and "required" as they are; a function or custom
// tool named ({"type":"function","name":…}) as {"type":"function",
// "function":{"name":…}}; allowed_tools with its tools so translated;
// anything else as it is.
func responsesToolChoice(raw json.RawMessage) json.RawMessage {
	raw = set(raw)
	if raw == nil || raw[0] != '{' {
		return raw
	}
	var c struct {
		Type  string            `json:"type"`
		Name  string            `json:"name"`
		Mode  json.RawMessage   `json:"mode"`
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return raw
	}
	named := func(name string) map[string]any {
		return map[string]any{"type": "function", "function": map[string]string{"name": name}}
	}
	var v any
	switch c.Type {
	case "function", "custom":
		if c.Name == "" {
			return raw
		}
		v = named(c.Name)
	case "allowed_tools":
		tools := make([]any, 0, len(c.Tools))
		for _, t := range c.Tools {
			var tc struct {
				Type string `json:"type"`
				Name string `json:"name"`
			}
			if json.Unmarshal(t, &tc) == nil && (tc.Type == "function" || tc.Type == "custom") && tc.Name != "" {
				tools = append(tools, named(tc.Name))
			} else {
				tools = append(tools, t)
			}
		}
		v = map[string]any{"type": "allowed_tools", "allowed_tools": map[string]any{"mode": c.Mode, "tools": tools}}
	default:
		return raw
	}
	b, _ := marshal(v)
	return b
}

// responseFormat is a Responses text.format in chat completions' shape
// (response_format): a json_schema format's name, schema, description
// and strict move into its json_schema member; text and json_object are
// the same in both.
func responseFormat(text json.RawMessage) json.RawMessage {
	var t struct {
		Format json.RawMessage `json:"format"`
	}
	if set(text) == nil || json.Unmarshal(text, &t) != nil || set(t.Format) == nil {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(t.Format, &fields) != nil || string(fields["type"]) != `"json_schema"` {
		return set(t.Format)
	}
	delete(fields, "type")
	b, _ := marshal(map[string]any{"type": "json_schema", "json_schema": fields})
	return b
}

// reasoningEffort is a Responses reasoning.effort.
func reasoningEffort(reasoning json.RawMessage) json.RawMessage {
	var r struct {
		Effort json.RawMessage `json:"effort"`
	}
	if set(reasoning) == nil || json.Unmarshal(reasoning, &r) != nil {
		return nil
	}
	return set(r.Effort)
}
