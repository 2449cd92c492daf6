package hooks

import "encoding/json"

// Input is the JSON a hook reads on its stdin: the fields every event
// has, then the event's own, by Claude Code's names. A field another
// event has is left out.
type Input struct {
	SessionID string `json:"session_id"`
	// TranscriptPath is the session's transcript (sessions/<id>.jsonl):
	// hermes's lines, not Claude Code's.
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	// PermissionMode is the tools.approval in force: default (ask),
	// bypassPermissions (auto) or dontAsk (deny).
	PermissionMode string `json:"permission_mode,omitempty"`
	HookEventName  string `json:"hook_event_name"`

	// SessionStart: new, resume, fork or compress; and the model.
	Source string `json:"source,omitempty"`
	Model  string `json:"model,omitempty"`
	// SessionEnd: the session's end_reason.
	Reason string `json:"reason,omitempty"`
	// UserPromptSubmit.
	Prompt string `json:"prompt,omitempty"`

	// PreToolUse, PostToolUse, PostToolUseFailure: the tool's name as
	// Claude Code names its own (ToolName), the call's arguments, its id;
	// HermesToolName is the tool's own name in hermes.
	ToolName       string          `json:"tool_name,omitempty"`
	HermesToolName string          `json:"hermes_tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	// PostToolUse: the result the model reads, a JSON string.
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	// PostToolUseFailure: the error the model reads, and whether the
	// user's cancellation caused it.
	Error       string `json:"error,omitempty"`
	IsInterrupt *bool  `json:"is_interrupt,omitempty"`

	// Stop, SubagentStop: true when a Stop hook already kept this turn
	// going (a hook that always blocks must not loop for ever).
	StopHookActive *bool `json:"stop_hook_active,omitempty"`
	// LastAssistantMessage is the text of the reply that would end the
	// turn.
	LastAssistantMessage *string `json:"last_assistant_message,omitempty"`
	// SubagentStop: the child session and its transcript, and the call
	// of the parent's delegation that started it.
	AgentID             string `json:"agent_id,omitempty"`
	AgentType           string `json:"agent_type,omitempty"`
	AgentTranscriptPath string `json:"agent_transcript_path,omitempty"`

	// PreCompact, PostCompact: manual (/compress, sessions compress) or
	// auto (agent.compress_at); PreCompact's custom_instructions are
	// always empty (hermes takes none); PostCompact's summary.
	Trigger            string  `json:"trigger,omitempty"`
	CustomInstructions *string `json:"custom_instructions,omitempty"`
	CompactSummary     string  `json:"compact_summary,omitempty"`
}

// claudeNames are the names Claude Code gives hermes's built-in tools'
// counterparts: a hook written for Claude Code's Bash sees the terminal
// tool's calls as Bash calls ({"command": …} in both).
var claudeNames = map[string]string{
	"terminal":     "Bash",
	"read_file":    "Read",
	"write_file":   "Write",
	"edit_file":    "Edit",
	"search_files": "Grep",
	"find_files":   "Glob",
}

// ToolName is the tool_name hooks see for hermes's tool name: Claude
// Code's name for its counterpart (terminal: Bash), else the name itself
// (an MCP tool's is mcp__server__tool in both).
func ToolName(name string) string {
	if c, ok := claudeNames[name]; ok {
		return c
	}
	return name
}

// ToolInput is the input of a tool event: the fields every event has
// (base) with the call's.
func ToolInput(base Input, event, name, id string, args json.RawMessage) Input {
	in := base
	in.HookEventName = event
	in.ToolName = ToolName(name)
	in.HermesToolName = name
	in.ToolUseID = id
	in.ToolInput = args
	return in
}

// sourceAliases are the names Claude Code's SessionStart matchers use for
// hermes's sources.
var sourceAliases = map[string]string{"new": "startup", "compress": "compact"}

// matchNames are the names in's matchers are tried on: a tool event's
// tool, by hermes's name and Claude Code's; SessionStart's source (and
// Claude Code's name for it); SessionEnd's reason; PreCompact's and
// PostCompact's trigger; none for the others, whose matchers are ignored
// (every hook of theirs runs), as Claude Code ignores them.
func matchNames(in *Input) []string {
	switch in.HookEventName {
	case PreToolUse, PostToolUse, PostToolUseFailure:
		return []string{in.ToolName, in.HermesToolName}
	case SessionStart:
		if alias, ok := sourceAliases[in.Source]; ok {
			return []string{in.Source, alias}
		}
		return []string{in.Source}
	case SessionEnd:
		return []string{in.Reason}
	case PreCompact, PostCompact:
		return []string{in.Trigger}
	}
	return nil
}

// HermesName is hermes's name for the tool hooks know as name: the
// built-in tool Claude Code's name stands for (Bash: terminal), else name.
func HermesName(name string) string {
	for h, c := range claudeNames {
		if c == name {
			return h
		}
	}
	return name
}
