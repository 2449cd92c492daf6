package profiles

import (
	"bytes"
	"errors"
	"io"
	"reflect"

	"gopkg.in/yaml.v3"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/usage"
)

// Config is a profile's config.yaml. Every key is optional; a missing file
// is the zero Config. Unknown keys are an error, so a typo does not pass
// silently.
type Config struct {
	Provider string `yaml:"provider" json:"provider"`
	Model    string `yaml:"model" json:"model"`
	BaseURL  string `yaml:"base_url" json:"base_url"`
	// ExecCommand is the exec provider's command.
	ExecCommand string `yaml:"exec_command" json:"exec_command"`
	// ReasoningContent is auto (the default), replay or drop: whether the
	// openai provider sends assistant messages' reasoning_content back
	// (cmd/provider).
	ReasoningContent string `yaml:"reasoning_content" json:"reasoning_content"`
	// Anthropic are the anthropic provider's settings (cmd/provider).
	Anthropic struct {
		Version   string   `yaml:"version" json:"version"`
		Beta      []string `yaml:"beta" json:"beta"`
		Bearer    bool     `yaml:"bearer" json:"bearer"`
		MaxTokens int      `yaml:"max_tokens" json:"max_tokens"`
		Thinking  string   `yaml:"thinking" json:"thinking"`
		Cache     string   `yaml:"cache" json:"cache"`
		APIKeyEnv string   `yaml:"api_key_env" json:"api_key_env"`
		// ShowThinking: line mode shows a reply's thinking, dimmed, as
		// it arrives (default true; the transcript keeps it either way).
		ShowThinking *bool `yaml:"show_thinking" json:"show_thinking"`
	} `yaml:"anthropic" json:"anthropic"`
	Retention struct {
		// Sessions is how long ended sessions are kept by a prune that
		// names no --older-than (a duration such as 90d).
		Sessions string `yaml:"sessions" json:"sessions"`
	} `yaml:"retention" json:"retention"`
	Sessions struct {
		// MaxLine bounds one line that `sessions append` and imports
		// read, in bytes (default 64 MiB): a longer line is refused.
		MaxLine int64 `yaml:"max_line" json:"max_line"`
	} `yaml:"sessions" json:"sessions"`
	Kanban struct {
		ResumeOnRespawn *bool  `yaml:"resume_on_respawn" json:"resume_on_respawn"`
		WorkerCommand   string `yaml:"worker_command" json:"worker_command"`
		// FailureLimit and RetryBackoff are the board's retry policy
		// (fsstore/kanban retry.go); unset, its defaults.
		FailureLimit int    `yaml:"failure_limit" json:"failure_limit"`
		RetryBackoff string `yaml:"retry_backoff" json:"retry_backoff"`
		// MaxInProgress bounds the board's running tasks, and each
		// assignee's under Assignees; unset, no bound beyond dispatch's
		// --max-workers.
		MaxInProgress int                       `yaml:"max_in_progress" json:"max_in_progress"`
		Assignees     map[string]KanbanAssignee `yaml:"assignees" json:"assignees"`
	} `yaml:"kanban" json:"kanban"`
	Cron struct {
		// MaxFailures is how many failed runs in a row pause a job
		// (unset or 0: 3).
		MaxFailures int `yaml:"max_failures" json:"max_failures"`
	} `yaml:"cron" json:"cron"`
	Gateway struct {
		Addr string `yaml:"addr" json:"addr"`
		// APIKey is the key clients must send, unless the variable
		// APIKeyEnv names is set. Never printed (profile show).
		APIKey    string `yaml:"api_key" json:"-"`
		APIKeyEnv string `yaml:"api_key_env" json:"api_key_env"`
		// APIKeys are named keys, each client's conversations kept apart
		// from the other keys' (cmd/gateway: Key).
		APIKeys             []GatewayKey `yaml:"api_keys" json:"api_keys"`
		MaxStoredResponses  int          `yaml:"max_stored_responses" json:"max_stored_responses"`
		ResumeFreshness     string       `yaml:"resume_freshness" json:"resume_freshness"`
		MaxRequestBodyBytes int64        `yaml:"max_request_body_bytes" json:"max_request_body_bytes"`
		// Tools are the built-in tools the gateway's turns run; none by
		// default (a client's own tool calls go back to the client).
		Tools []string `yaml:"tools" json:"tools"`
		// Instructions: a conversation's first turn stores the project
		// instructions (AGENTS.md) of the gateway's working directory, as
		// a chat's does; off by default (a client sends its own).
		Instructions bool `yaml:"instructions" json:"instructions"`
		// UnauthenticatedTools lets the gateway run Tools without an API
		// key, which it otherwise refuses to do.
		UnauthenticatedTools bool `yaml:"unauthenticated_tools" json:"unauthenticated_tools"`
		// Cron makes the gateway tick the profile's scheduled jobs every
		// second, as hermes cron daemon does.
		Cron bool `yaml:"cron" json:"cron"`
		// Cwd is the directory the gateway's file tools keep to, and
		// where relative paths and commands start (default: the
		// directory serve runs in).
		Cwd string `yaml:"cwd" json:"cwd"`
		// AllowedHosts are the names a request's Host may carry besides
		// loopback ones and the server's own addresses; AllowedOrigins
		// the web origins that may call the gateway (none by default).
		AllowedHosts   []string `yaml:"allowed_hosts" json:"allowed_hosts"`
		AllowedOrigins []string `yaml:"allowed_origins" json:"allowed_origins"`
		// HeaderTimeout bounds the reading of a request's headers,
		// ReadTimeout the reading of a request, WriteTimeout each write of
		// a response (durations, e.g. 30s); MaxConnections the
		// connections open at once.
		HeaderTimeout  string `yaml:"header_timeout" json:"header_timeout"`
		ReadTimeout    string `yaml:"read_timeout" json:"read_timeout"`
		WriteTimeout   string `yaml:"write_timeout" json:"write_timeout"`
		MaxConnections int    `yaml:"max_connections" json:"max_connections"`
		// ToolTimeout bounds each call of a gateway tool (a duration;
		// default 10m): past it the call is cancelled and answered as
		// timed out.
		ToolTimeout string `yaml:"tool_timeout" json:"tool_timeout"`
		// IdleEnd is how long a gateway session may go without a request
		// before the running gateway ends it (a duration; default 24h).
		IdleEnd string `yaml:"idle_end" json:"idle_end"`
		// Models maps the model names a client may ask for to providers;
		// with ModelsOnly, a name that is neither one of them nor the
		// profile's model is refused (404 model_not_found).
		Models     map[string]GatewayModel `yaml:"models" json:"models"`
		ModelsOnly bool                    `yaml:"models_only" json:"models_only"`
		// Hooks are the commands the gateway's turns run at their events,
		// instead of the profile's hooks (cmd/hooks): the operator's
		// only, never a client's.
		Hooks Hooks `yaml:"hooks" json:"hooks"`
	} `yaml:"gateway" json:"gateway"`
	// Agent bounds the turn engine's loop (cmd/agent); zero values mean
	// its defaults.
	Agent struct {
		MaxSteps        int      `yaml:"max_steps" json:"max_steps"`
		MaxToolOutput   int      `yaml:"max_tool_output" json:"max_tool_output"`   // bytes
		TerminalTimeout string   `yaml:"terminal_timeout" json:"terminal_timeout"` // a duration, e.g. 2m
		Tools           []string `yaml:"tools" json:"tools"`                       // the tools a chat offers
		// CompressAt makes a chat compress its session before a turn once
		// the history reaches it: a number of messages (200), or a
		// fraction (0.8) of ContextTokens, the model's context in tokens.
		CompressAt    string `yaml:"compress_at" json:"compress_at"`
		ContextTokens int64  `yaml:"context_tokens" json:"context_tokens"`
		// Confine keeps a chat's file tools to its working directory, as
		// the gateway's keep to gateway.cwd (agent.Env.Root); off by
		// default. The terminal tool is not confined.
		Confine bool `yaml:"confine" json:"confine"`
		// MaxSubagents is how many children of one delegate call run at
		// once (default 3); SubagentDepth how deep delegation goes
		// (default 1: the children do not delegate).
		MaxSubagents  int `yaml:"max_subagents" json:"max_subagents"`
		SubagentDepth int `yaml:"subagent_depth" json:"subagent_depth"`
	} `yaml:"agent" json:"agent"`
	Tools struct {
		// Approval is ask (the default), auto or deny: what happens to a
		// call that needs approval (terminal, write_file, process kill).
		Approval string `yaml:"approval" json:"approval"`
	} `yaml:"tools" json:"tools"`
	// Memory is what the agent keeps between sessions (fsstore/memory):
	// on unless enabled is false; the bounds of MEMORY.md and USER.md in
	// characters, 0 for the defaults (8,000 and 4,000). The gateway's
	// sessions get it only with gateway: true (its clients are
	// stateless programs), kanban workers read it and change it only
	// with kanban_write: true.
	Memory struct {
		Enabled      *bool `yaml:"enabled" json:"enabled"`
		MaxChars     int   `yaml:"max_chars" json:"max_chars"`
		UserMaxChars int   `yaml:"user_max_chars" json:"user_max_chars"`
		Gateway      bool  `yaml:"gateway" json:"gateway"`
		KanbanWrite  bool  `yaml:"kanban_write" json:"kanban_write"`
	} `yaml:"memory" json:"memory"`
	// Skills (fsstore/skills): the gateway's sessions list them only with
	// gateway: true; kanban workers load them, and write their own only
	// with kanban_write: true.
	Skills struct {
		Gateway     bool `yaml:"gateway" json:"gateway"`
		KanbanWrite bool `yaml:"kanban_write" json:"kanban_write"`
	} `yaml:"skills" json:"skills"`
	// Checkpoints bounds the store of files' prior bytes that write_file
	// and edit_file fill before they change a file (fsstore/checkpoints).
	Checkpoints struct {
		// MaxFile is the largest file checkpointed, in bytes (default 16
		// MiB): a larger one is changed and recorded as not checkpointed.
		MaxFile int64 `yaml:"max_file" json:"max_file"`
		// Restore is what line mode's /undo and /retry do with the files
		// the turns they take back changed: ask (the default on a
		// terminal), always or never (the default without one).
		Restore string `yaml:"restore" json:"restore"`
		// MaxAge and MaxBytes bound the store for checkpoints prune
		// (defaults 30d and 1 GiB): objects whose newest checkpoint is
		// older go, then the oldest until the store is within MaxBytes.
		MaxAge   string `yaml:"max_age" json:"max_age"`
		MaxBytes int64  `yaml:"max_bytes" json:"max_bytes"`
		// Shell is git to snapshot the git work tree a terminal command
		// runs in before it runs, so that what it changed can be taken
		// back too; off (the default) otherwise.
		Shell string `yaml:"shell" json:"shell"`
	} `yaml:"checkpoints" json:"checkpoints"`
	// MCPServers are the MCP servers whose tools the agent is offered,
	// by name (cmd/mcp).
	MCPServers map[string]MCPServer `yaml:"mcp_servers" json:"mcp_servers"`
	// Pricing is what each model's tokens cost, by model name or
	// pattern, in US dollars per million tokens (fsstore/usage): `hermes
	// usage` prices calls with it, then with its shipped table.
	Pricing usage.Pricing `yaml:"pricing" json:"pricing"`
	// Hooks are commands run at the turn engine's events (cmd/hooks).
	Hooks Hooks `yaml:"hooks" json:"hooks"`
}

// GatewayKey is one entry of gateway.api_keys: a name (the scope of its
// clients' conversations, recorded in their sessions as gateway_key) and
// the key, in the variable KeyEnv names, else in Key (never printed).
type GatewayKey struct {
	Name   string `yaml:"name" json:"name"`
	KeyEnv string `yaml:"key_env" json:"key_env"`
	Key    string `yaml:"key" json:"-"`
}

// GatewayModel is one entry of gateway.models: the provider that answers
// for a model name. Each field left out is the profile's own setting
// (provider, base_url, exec_command; the key in $HERMES_API_KEY or
// $OPENAI_API_KEY); Model, the name sent upstream, is the entry's name
// when left out.
type GatewayModel struct {
	Provider    string `yaml:"provider,omitempty" json:"provider,omitempty"`
	BaseURL     string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	Model       string `yaml:"model,omitempty" json:"model,omitempty"`
	APIKeyEnv   string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	ExecCommand string `yaml:"exec_command,omitempty" json:"exec_command,omitempty"`
}

// MCPServer is one entry of mcp_servers: a command run over stdio
// (Command, Args, Env, Cwd) or a streamable HTTP endpoint (URL, Headers,
// BearerTokenEnv). ${VAR} in Env, Headers and URL is hermes's environment
// variable VAR.
type MCPServer struct {
	Command        string            `yaml:"command,omitempty" json:"command,omitempty"`
	Args           []string          `yaml:"args,omitempty" json:"args,omitempty"`
	Env            map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	Cwd            string            `yaml:"cwd,omitempty" json:"cwd,omitempty"`
	URL            string            `yaml:"url,omitempty" json:"url,omitempty"`
	Headers        map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	BearerTokenEnv string            `yaml:"bearer_token_env,omitempty" json:"bearer_token_env,omitempty"`
	// Enabled false keeps the entry but offers none of its tools.
	Enabled *bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// StartupTimeout bounds a start (connect and list), ToolTimeout one
	// call: durations such as 10s.
	StartupTimeout string `yaml:"startup_timeout,omitempty" json:"startup_timeout,omitempty"`
	ToolTimeout    string `yaml:"tool_timeout,omitempty" json:"tool_timeout,omitempty"`
	// Tools picks the server's tools by name or glob: those Include names
	// (all when empty), less those Exclude names.
	Tools MCPToolFilter `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Approval is ask, auto or deny for this server's tools; empty means
	// tools.approval.
	Approval string `yaml:"approval,omitempty" json:"approval,omitempty"`
}

// MCPToolFilter picks a server's tools by name or glob.
type MCPToolFilter struct {
	Include []string `yaml:"include,omitempty" json:"include,omitempty"`
	Exclude []string `yaml:"exclude,omitempty" json:"exclude,omitempty"`
}

// parseConfig decodes config.yaml's bytes b, read from path. Unknown
// keys are an error, as is anything else that does not decode: bad input
// naming the file (exit 2); the file is never replaced.
func parseConfig(path string, b []byte) (Config, error) {
	var c Config
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return c, fsstore.Invalidf("%s: %w", path, err)
	}
	if err := checkShape(&doc, reflect.TypeFor[Config](), ""); err != nil {
		return c, fsstore.Invalidf("%s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	// An empty file decodes as io.EOF: it is an empty config.
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fsstore.Invalidf("%s: %w", path, err)
	}
	return c, nil
}

// KanbanAssignee is what kanban.assignees.<profile> sets for the tasks
// assigned to that profile.
type KanbanAssignee struct {
	MaxInProgress int `yaml:"max_in_progress" json:"max_in_progress"`
}
