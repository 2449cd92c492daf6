package importer

import (
	"encoding/json"
	"strings"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// claudeEntry is one line of a Claude Code transcript. Only the fields the
// import uses are read.
type claudeEntry struct {
	Type              string          `json:"type"`
	UUID              string          `json:"uuid"`
	ParentUUID        string          `json:"parentUuid"`
	LogicalParentUUID string          `json:"logicalParentUuid"`
	SessionID         string          `json:"sessionId"`
	Timestamp         string          `json:"timestamp"`
	IsSidechain       bool            `json:"isSidechain"`
	AgentID           string          `json:"agentId"`
	Message           json.RawMessage `json:"message"`
	Summary           string          `json:"summary"`
	LeafUUID          string          `json:"leafUuid"`
	Cwd               string          `json:"cwd"`
	GitBranch         string          `json:"gitBranch"`
	Version           string          `json:"version"`
	UserType          string          `json:"userType"`
	Entrypoint        string          `json:"entrypoint"`
	RequestID         string          `json:"requestId"`

	line int
}

// hasMessage reports whether the entry is a turn of the conversation.
func (e *claudeEntry) hasMessage() bool {
	return (e.Type == "user" || e.Type == "assistant") && len(e.Message) > 0 && string(e.Message) != "null"
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *claudeUsage    `json:"usage"`
}

// claudeUsage is the Messages API's usage, as Claude Code writes it on
// each line of a response.
type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// claudeCallID is the id of the call a response's line records: the
// response's message.id (the line's uuid when it has none), so that the
// lines of one response, and a file imported twice, count it once.
func claudeCallID(e *claudeEntry, m *claudeMessage) string {
	if m.ID == "" {
		return "claude-code:" + e.UUID
	}
	return "claude-code:" + m.ID
}

// claudeCalls returns the call of each response of entries by its id,
// with the usage of its line of the most tokens (the lines of a streamed
// response carry the counts so far: the last has them all; ccusage keeps
// the largest too, the later of equals) and the time of its first, and
// the ids in the order they first appear.
// Claude Code's own "<synthetic>" notices called no model.
func claudeCalls(format string, entries []*claudeEntry) (map[string]usage.Call, []string, error) {
	calls := map[string]usage.Call{}
	var order []string
	for _, e := range entries {
		if e.Type != "assistant" || !e.hasMessage() {
			continue
		}
		var m claudeMessage
		if err := json.Unmarshal(e.Message, &m); err != nil {
			return nil, nil, invalidf(format, e.line, "message: %v", err)
		}
		if m.Usage == nil || m.Model == "<synthetic>" {
			continue
		}
		stamp, err := ts(e.Timestamp)
		if err != nil {
			return nil, nil, invalidf(format, e.line, "timestamp: %v", err)
		}
		c := claudeCall(e, &m)
		if kept, ok := calls[c.ID]; ok {
			if c.Total() < kept.Total() {
				continue
			}
			c.TS = kept.TS
		} else {
			c.TS = stamp
			order = append(order, c.ID)
		}
		calls[c.ID] = c
	}
	return calls, order, nil
}

// claudeCall is the call a response's line records. The cache writes are
// cache_creation's 5m and 1h when it gives them, the rest of
// cache_creation_input_tokens as 5m.
func claudeCall(e *claudeEntry, m *claudeMessage) usage.Call {
	u := m.Usage
	c := usage.Call{ID: claudeCallID(e, m), Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens,
		Model: m.Model, Provider: "anthropic", RequestID: e.RequestID}
	if cc := u.CacheCreation; cc != nil {
		c.CacheWrite5m, c.CacheWrite1h = cc.Ephemeral5m, cc.Ephemeral1h
	}
	if rest := u.CacheCreationInputTokens - c.CacheWrite5m - c.CacheWrite1h; rest > 0 {
		c.CacheWrite5m += rest
	}
	return c
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
	// raw is the block as it came.
	raw json.RawMessage
}

func parseClaudeCode(data []byte) (Session, error) {
	const format = FormatClaudeCode
	var entries []*claudeEntry
	byUUID := map[string]*claudeEntry{}
	var last *claudeEntry     // the last entry with a message, outside sidechains
	var lastSide *claudeEntry // the same in sidechains: all there is in an agent-*.jsonl
	for n, line := range lines(data) {
		e := &claudeEntry{line: n}
		if err := decodeLine(format, n, line, e); err != nil {
			return Session{}, err
		}
		entries = append(entries, e)
		if e.UUID != "" {
			byUUID[e.UUID] = e
		}
		switch {
		case !e.hasMessage():
		case e.IsSidechain:
			lastSide = e
		default:
			last = e
		}
	}
	subagent := last == nil
	if subagent {
		last = lastSide
	}
	if len(entries) == 0 {
		return Session{}, invalidf(format, 0, "empty input")
	}
	if last == nil {
		return Session{}, invalidf(format, 0, "no user or assistant messages")
	}

	// The conversation is the chain from the last message back to the root;
	// entries off the chain are abandoned branches (edits, retries). A
	// compaction boundary has no parentUuid but names the entry it follows
	// in logicalParentUuid, so the chain crosses it.
	var chain []*claudeEntry
	onChain := map[string]bool{}
	for e := last; e != nil; {
		if onChain[e.UUID] {
			return Session{}, invalidf(format, e.line, "parentUuid chain loops back to %q", e.UUID)
		}
		onChain[e.UUID] = true
		chain = append(chain, e)
		parent := e.ParentUUID
		if parent == "" {
			parent = e.LogicalParentUUID
		}
		e = byUUID[parent]
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}

	s := Session{ID: last.SessionID, Source: "import:" + format}
	if subagent && s.ID != "" {
		// A sub-agent's transcript carries its parent's sessionId: it is a
		// session of its own, named after the agent, whose parent is the
		// main one, whichever of the two is imported first.
		agent := last.AgentID
		if agent == "" {
			agent = chain[0].UUID
		}
		s.ID, s.ParentSessionID = s.ID+"-agent-"+agent, s.ID
	}
	// Claude Code may write several summaries; the one whose leaf is on the
	// chain names this conversation, else the first one.
	var firstSummary string
	for _, e := range entries {
		if e.Type != "summary" || e.Summary == "" {
			continue
		}
		if e.LeafUUID != "" && onChain[e.LeafUUID] {
			s.Title = e.Summary
			break
		}
		if firstSummary == "" {
			firstSummary = e.Summary
		}
	}
	if s.Title == "" {
		s.Title = firstSummary
	}

	final, order, err := claudeCalls(format, entries)
	if err != nil {
		return Session{}, err
	}
	b := claudeBuilder{format: format, final: final}
	var context claudeContext
	for _, e := range chain {
		if s.ID == "" {
			s.ID = e.SessionID
		}
		if e.IsSidechain != subagent {
			continue // a sub-agent's entries in the main file, or the reverse
		}
		context.take(e)
		if s.CreatedAt.IsZero() && e.Timestamp != "" {
			t, err := parseTime(e.Timestamp)
			if err != nil {
				return Session{}, invalidf(format, e.line, "timestamp: %v", err)
			}
			s.CreatedAt = t
		}
		if !e.hasMessage() {
			continue // system notices, compaction boundaries
		}
		if err := b.add(e, &s); err != nil {
			return Session{}, err
		}
	}
	b.flush()
	s.Messages = b.msgs
	claudeOthers(s.Messages, final, order, b.counted)
	s.Cwd = context.Cwd
	s.Meta = context.metaJSON()
	return s, nil
}

// claudeBuilder turns chain entries into chat messages. Claude Code writes
// one API response as several entries (one per content block) sharing
// message.id; consecutive ones are merged back into one assistant message.
type claudeBuilder struct {
	format string
	msgs   []sessions.Message

	pendingID   string // message.id of the assistant message being built
	pending     *sessions.Message
	pendingCall *usage.Call           // its call, if its lines said their usage
	counted     map[string]bool       // the ids of the calls the messages hold
	final       map[string]usage.Call // claudeCalls: each response's call
	parts       []json.RawMessage
	calls       []provider.ToolCall
	thinking    []json.RawMessage
}

func (b *claudeBuilder) add(e *claudeEntry, s *Session) error {
	var m claudeMessage
	if err := json.Unmarshal(e.Message, &m); err != nil {
		return invalidf(b.format, e.line, "message: %v", err)
	}
	stamp, err := ts(e.Timestamp)
	if err != nil {
		return invalidf(b.format, e.line, "timestamp: %v", err)
	}
	blocks, err := claudeBlocks(m.Content)
	if err != nil {
		return invalidf(b.format, e.line, "message content: %v", err)
	}
	if e.Type == "assistant" {
		if s.Model == "" && m.Model != "" && m.Model != "<synthetic>" {
			s.Model = m.Model
		}
		if b.pending == nil || m.ID == "" || m.ID != b.pendingID {
			b.flush()
			b.pending = &sessions.Message{Role: "assistant", TS: stamp}
			b.pendingID = m.ID
		}
		// A response's call goes to the message it starts; a response id
		// seen before (its lines parted by others) is that call again.
		if c, ok := b.final[claudeCallID(e, &m)]; ok && b.pendingCall == nil && !b.counted[c.ID] {
			b.pendingCall = &c
		}
		for _, bl := range blocks {
			switch bl.Type {
			case "text":
				b.parts = append(b.parts, textPart(bl.Text))
			case "tool_use":
				args := "{}"
				if len(bl.Input) > 0 && string(bl.Input) != "null" {
					args = compactJSON(bl.Input)
				}
				b.calls = append(b.calls, newToolCall(bl.ID, bl.Name, args))
			case "thinking", "redacted_thinking":
				// Kept as they came: the API takes a tool turn back only
				// with them unchanged.
				b.thinking = append(b.thinking, json.RawMessage(compactJSON(bl.raw)))
			}
			// Server-side tool blocks are dropped.
		}
		return nil
	}

	b.flush()
	var parts []json.RawMessage
	for _, bl := range blocks {
		switch bl.Type {
		case "tool_result":
			text, err := claudeResultText(bl.Content)
			if err != nil {
				return invalidf(b.format, e.line, "tool_result %q: %v", bl.ToolUseID, err)
			}
			b.msgs = append(b.msgs, sessions.Message{TS: stamp, Role: "tool", Content: sessions.TextContent(text), ToolCallID: bl.ToolUseID})
		case "text":
			parts = append(parts, textPart(bl.Text))
		case "image":
			if url := bl.imageURL(); url != "" {
				parts = append(parts, imagePart(url))
			}
		}
	}
	if len(parts) > 0 {
		b.msgs = append(b.msgs, sessions.Message{TS: stamp, Role: "user", Content: partsContent(parts)})
	}
	return nil
}

// flush emits the assistant message being built, unless it said nothing
// (a response that was only thinking).
func (b *claudeBuilder) flush() {
	if b.pending == nil {
		return
	}
	if len(b.parts) > 0 || len(b.calls) > 0 {
		b.pending.Content = partsContent(b.parts)
		b.pending.ToolCalls = toolCallsJSON(b.calls)
		if c := b.pendingCall; c != nil {
			c.TS = "" // the message's own
			usage.Put(b.pending, *c)
			if b.counted == nil {
				b.counted = map[string]bool{}
			}
			b.counted[c.ID] = true
		}
		if len(b.thinking) > 0 {
			if b.pending.Extra == nil {
				b.pending.Extra = map[string]json.RawMessage{}
			}
			b.pending.Extra[provider.ThinkingBlocks] = mustMarshal(b.thinking)
		}
		b.msgs = append(b.msgs, *b.pending)
	}
	b.pending, b.pendingID, b.pendingCall, b.parts, b.calls, b.thinking = nil, "", nil, nil, nil, nil
}

// claudeBlocks reads a content value: a string is one text block.
func claudeBlocks(content json.RawMessage) ([]claudeBlock, error) {
	if len(content) == 0 || string(content) == "null" {
		return nil, nil
	}
	if content[0] == '"' {
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return nil, err
		}
		return []claudeBlock{{Type: "text", Text: s}}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(content, &raws); err != nil {
		return nil, err
	}
	blocks := make([]claudeBlock, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &blocks[i]); err != nil {
			return nil, err
		}
		blocks[i].raw = raw
	}
	return blocks, nil
}

// claudeResultText is the text of a tool_result's content: a string, or
// the text blocks of a list joined by newlines (images are dropped).
func claudeResultText(content json.RawMessage) (string, error) {
	blocks, err := claudeBlocks(content)
	if err != nil {
		return "", err
	}
	var texts []string
	for _, bl := range blocks {
		if bl.Type == "text" {
			texts = append(texts, bl.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

func (bl *claudeBlock) imageURL() string {
	switch {
	case bl.Source == nil:
		return ""
	case bl.Source.Type == "base64" && bl.Source.Data != "":
		return "data:" + bl.Source.MediaType + ";base64," + bl.Source.Data
	}
	return bl.Source.URL
}

// claudeContext is what Claude Code writes on every line about where the
// conversation runs; the last line that says it is the session's. The
// working directory becomes the session's cwd, the rest its meta, under
// the source's names.
type claudeContext struct {
	Cwd  string
	meta map[string]string
}

func (c *claudeContext) take(e *claudeEntry) {
	if e.Cwd != "" {
		c.Cwd = e.Cwd
	}
	for k, v := range map[string]string{"gitBranch": e.GitBranch, "version": e.Version, "userType": e.UserType, "entrypoint": e.Entrypoint} {
		if v == "" {
			continue
		}
		if c.meta == nil {
			c.meta = map[string]string{}
		}
		c.meta[k] = v
	}
}

// metaJSON is the context but its cwd as a JSON object, nil when empty.
func (c *claudeContext) metaJSON() json.RawMessage {
	if len(c.meta) == 0 {
		return nil
	}
	return mustMarshal(c.meta)
}

// claudeOthers stores the calls of the file that made no message of msgs
// (abandoned branches, a main file's sidechain entries, a response that
// was only thinking) in OtherField, each on the last message of its time
// or before (the first message for a call before all), so that a file
// that grew puts them where they were.
func claudeOthers(msgs []sessions.Message, calls map[string]usage.Call, order []string, counted map[string]bool) {
	if len(msgs) == 0 {
		return
	}
	byMsg := map[int][]usage.Call{}
	for _, id := range order {
		if counted[id] {
			continue
		}
		c := calls[id]
		at := 0
		for i := range msgs {
			if !c.TS.Before(msgs[i].TS) {
				at = i
			}
		}
		byMsg[at] = append(byMsg[at], c)
	}
	for i, cs := range byMsg {
		usage.PutOthers(&msgs[i], cs)
	}
}
