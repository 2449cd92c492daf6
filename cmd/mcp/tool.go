package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore"
)

// Tool is one tool of an MCP server, as the engine sees it: one more
// agent.Tool.
type Tool struct {
	pool   *Pool
	spec   Spec
	remote RemoteTool
	name   string
}

// Name is mcp__<server>__<tool> (ToolName).
func (t *Tool) Name() string { return t.name }

// Server is the name of the tool's server; Remote the tool as it lists
// it.
func (t *Tool) Server() string     { return t.spec.Name }
func (t *Tool) Remote() RemoteTool { return t.remote }

// Schema offers the tool with the server's description and input schema.
func (t *Tool) Schema() json.RawMessage {
	params := t.remote.InputSchema
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	b, err := json.Marshal(map[string]any{
		"type": "function",
		"function": map[string]any{
			"name":        t.name,
			"description": t.remote.Description,
			"parameters":  params,
		},
	})
	if err != nil {
		// The schema came from a server's JSON: offer it empty rather
		// than not at all.
		b, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": t.name, "parameters": map[string]any{"type": "object"}}})
	}
	return b
}

// Approval is the server's approval: ask, auto or deny.
func (t *Tool) Approval() string { return t.spec.Approval }

// NeedsApproval: a server's tools need approval when its approval is ask;
// deny is refused by Run.
func (t *Tool) NeedsApproval(json.RawMessage) bool { return t.spec.Approval == agent.PolicyAsk }

// Run calls the tool on its server, starting the server if it is not
// running; its result is cut to the turn's MaxOutput.
func (t *Tool) Run(ctx context.Context, env *agent.Env, args json.RawMessage) (string, error) {
	if t.spec.Approval == agent.PolicyDeny {
		return fmt.Sprintf("not approved: the approval of MCP server %s is deny", t.spec.Name), nil
	}
	out, err := t.pool.Call(ctx, t.spec, t.remote.Name, args)
	if err != nil {
		return "", err
	}
	if env != nil && env.MaxOutput > 0 {
		out = agent.Cut(out, env.MaxOutput)
	}
	return out, nil
}

// ServerTools returns the tools the server offers (its tools filter
// applied): from the cache when it was listed under its present
// configuration, else by starting it and listing them.
func (p *Pool) ServerTools(ctx context.Context, s Spec) ([]*Tool, error) {
	l, err := p.Cache.Read(s.Name)
	if err != nil {
		return nil, err
	}
	remote := l.Tools
	if l.Key != s.Key {
		// A server that could not be listed a moment ago, by this process
		// or another, is not started again at each turn's offer: each
		// would pay its startup_timeout.
		if l.ErrorKey == s.Key && l.LastErrorAt != nil && time.Since(*l.LastErrorAt) < retryAfter {
			why := strings.TrimPrefix(l.LastError, "MCP server "+s.Name+" unavailable: ")
			return nil, &Unavailable{Server: s.Name, Reason: fmt.Sprintf("it failed %s ago (%s); hermes mcp test %s tries again now",
				time.Since(*l.LastErrorAt).Round(time.Second), why, s.Name)}
		}
		if remote, err = p.List(ctx, s); err != nil {
			return nil, err
		}
	}
	var out []*Tool
	for _, r := range remote {
		if s.Offered(r.Name) {
			out = append(out, &Tool{pool: p, spec: s, remote: r, name: ToolName(s.Name, r.Name)})
		}
	}
	return out, nil
}

// Select returns the tools patterns name, each pattern a tool's name
// (mcp__<server>__<tool>) or a glob of them (mcp__<server>__*); nil
// patterns: every enabled server's tools. A pattern that names no
// configured server, a disabled one, or a tool its server does not list,
// is ErrInvalid. A server that cannot be listed offers nothing; warn says
// why, and the turn goes on without it.
func (p *Pool) Select(ctx context.Context, patterns []string, warn func(string)) ([]agent.Tool, error) {
	var out []agent.Tool
	add := func(t *Tool) {
		if !slices.ContainsFunc(out, func(o agent.Tool) bool { return o.Name() == t.name }) {
			out = append(out, t)
		}
	}
	cache := map[string][]*Tool{}
	failed := map[string]bool{}
	tools := func(s Spec) []*Tool {
		if ts, ok := cache[s.Name]; ok || failed[s.Name] {
			return ts
		}
		ts, err := p.ServerTools(ctx, s)
		if err != nil {
			failed[s.Name] = true
			warn(oneLine(err) + "; its tools are not offered (hermes mcp list)")
			return nil
		}
		cache[s.Name] = ts
		return ts
	}
	if patterns == nil {
		for _, s := range p.Specs {
			if s.Enabled {
				for _, t := range tools(s) {
					add(t)
				}
			}
		}
		return out, nil
	}
	for _, pat := range patterns {
		i := slices.IndexFunc(p.Specs, func(s Spec) bool { return strings.HasPrefix(pat, Prefix(s.Name)) })
		if i < 0 {
			return nil, fsstore.Invalidf("unknown tool %q: no MCP server in mcp_servers gives it (hermes mcp list)", pat)
		}
		s := p.Specs[i]
		if !s.Enabled {
			return nil, fsstore.Invalidf("tool %q: MCP server %s is disabled (mcp_servers.%s.enabled)", pat, s.Name, s.Name)
		}
		if _, err := path.Match(pat, ""); err != nil {
			return nil, fsstore.Invalidf("bad tool pattern %q", pat)
		}
		matched := false
		for _, t := range tools(s) {
			if ok, _ := path.Match(pat, t.name); ok {
				add(t)
				matched = true
			}
		}
		if !matched && !failed[s.Name] && !strings.ContainsAny(pat, `*?[\`) {
			return nil, fsstore.Invalidf("unknown tool %q: MCP server %s does not offer it (hermes mcp tools %s)", pat, s.Name, s.Name)
		}
	}
	return out, nil
}
