package profiles

// Hooks are config.yaml's hooks (and gateway.hooks): by event name
// (PreToolUse, SessionStart, …), the matchers whose commands run at that
// event (cmd/hooks). Each entry is written either flat,
//
//	PreToolUse:
//	  - matcher: Bash
//	    command: ~/bin/check-command
//	    timeout: 30
//
// or as Claude Code's settings.json writes it, with its commands in a
// hooks list ({type: command, command, timeout}), so that a settings file
// converted to YAML loads as it is.
type Hooks map[string][]HookMatcher

// HookMatcher is one entry of an event's list: a matcher (a tool name,
// names separated by |, or a regular expression; empty or * for all) and
// the commands it runs.
type HookMatcher struct {
	Matcher string `yaml:"matcher,omitempty" json:"matcher,omitempty"`
	// Command and Timeout are the flat form's one command.
	Command string  `yaml:"command,omitempty" json:"command,omitempty"`
	Timeout float64 `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Hooks are Claude Code's form's commands.
	Hooks []HookCommand `yaml:"hooks,omitempty" json:"hooks,omitempty"`
}

// HookCommand is one command of Claude Code's form: Type is command (the
// only kind hermes runs), Timeout in seconds.
type HookCommand struct {
	Type    string  `yaml:"type,omitempty" json:"type,omitempty"`
	Command string  `yaml:"command" json:"command"`
	Timeout float64 `yaml:"timeout,omitempty" json:"timeout,omitempty"`
}
