package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// searchTool is hermes's own search over the profile's sessions.
type searchTool struct{}

func (searchTool) Name() string { return "session_search" }

func (searchTool) Schema() json.RawMessage {
	return schema("session_search",
		"Search the messages of every session of this profile (earlier conversations included), ignoring case. One line per match: session id, title, message number and a snippet.",
		map[string]any{
			"query": prop("string", "the words to find"),
			"limit": prop("integer", "at most this many matches (default 20)"),
		}, "query")
}

func (searchTool) NeedsApproval(json.RawMessage) bool { return false }

func (searchTool) Run(_ context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := decodeArgs("session_search", raw, &args); err != nil {
		return "", err
	}
	if strings.TrimSpace(args.Query) == "" {
		return "", errors.New("session_search: query is required")
	}
	if env.Sessions == nil {
		return "", errors.New("session_search: no session store here")
	}
	limit := args.Limit
	if limit <= 0 {
		limit = 20
	}
	hits, err := env.Sessions.Search(args.Query, limit)
	if err != nil {
		return "", fmt.Errorf("session_search: %w", err)
	}
	if len(hits) == 0 {
		return "no matches", nil
	}
	var b strings.Builder
	for _, h := range hits {
		title := h.Title
		if title == "" {
			title = "-"
		}
		fmt.Fprintf(&b, "%s  %s  #%d %s: %s\n", h.SessionID, title, h.Seq, h.Role, h.Snippet)
	}
	return cut(b.String(), max(env.MaxOutput, 256)), nil
}
