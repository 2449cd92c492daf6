package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/subagents"
	"github.com/hermes/hermes/fsstore/tasks"
)

// Tool is one function a model may call. Its Run returns the text the
// model gets as the call's result; an error is a failed call, answered to
// the model as "error: …" (the turn goes on).
type Tool interface {
	// Name is the function name the model calls.
	Name() string
	// Schema is the OpenAI function-calling entry offered in a request's
	// tools: {"type":"function","function":{"name":…,"description":…,"parameters":{…}}}.
	Schema() json.RawMessage
	// NeedsApproval reports whether a call with these arguments must be
	// approved before it runs (tools.approval). args are valid JSON.
	NeedsApproval(args json.RawMessage) bool
	// Run runs the call. args are the call's arguments, valid JSON. A
	// cancelled ctx (Ctrl-C, the turn's caller gone) must stop the work,
	// killing what it started, and return promptly.
	Run(ctx context.Context, env *Env, args json.RawMessage) (string, error)
}

// Resumer is a tool whose call, left without a result by a process that
// died while it ran, is run again by the next turn on its session instead
// of being answered as interrupted: a tool whose work is durable and
// claimed step by step, so that running the call again carries it on
// and repeats nothing (delegate: its finished children are read, its
// unfinished ones continued).
type Resumer interface {
	Resumes() bool
}

// Env is what a tool call may use: the session it runs for and the
// profile's stores. One Env serves a whole turn.
type Env struct {
	SessionID string
	// Cwd is the session's working directory: relative paths and
	// commands start there.
	Cwd string
	// Root, when set, is the directory the file tools keep to: every path
	// they use is resolved through one os.Root there, so that one leading
	// outside it (by "..", an absolute name or a symbolic link, even one
	// swapped in while the tool works) is refused. The terminal tool is
	// not confined by it.
	Root     string
	Sessions *sessions.Store
	Tasks    *tasks.Store
	// MaxOutput bounds a result's text, in bytes: longer output keeps its
	// head and tail with a marker saying how much was cut.
	MaxOutput int
	// TerminalTimeout is the terminal tool's default timeout.
	TerminalTimeout time.Duration
	// StartTask starts argv as a background task of the tasks store, with
	// its session_id set to sessionID, and returns its record at once. A
	// lock wait on the way ends when ctx does.
	StartTask func(ctx context.Context, name string, argv []string, cwd, sessionID string) (tasks.Task, error)
	// Kanban is the worker's own task, set only inside a kanban worker.
	Kanban KanbanWorker
	// Memory is the profile's memory, which the memory tool changes; nil
	// when memory is off (memory.enabled: false).
	Memory *memory.Store
	// Skills are the skills the skill tools load and write; nil when
	// the session has none.
	Skills *Skills
	// Checkpoints, when set, is where write_file and edit_file store a
	// file's prior bytes before they change it (checkpoint.go); each
	// call's changes are recorded in its tool message.
	Checkpoints *checkpoints.Store
	// ShellGit is checkpoints.shell: git: a terminal command run in a git
	// work tree is preceded by a snapshot of its files, and what it
	// changed is recorded as write_file's changes are (shell_checkpoint.go).
	ShellGit bool
	// Subagents, when set, is where the delegate tool claims each child
	// before it runs it, so that none runs twice (fsstore/subagents).
	Subagents *subagents.Store
	// call gathers the changes of the call being run (withCall).
	call *callChanges
	// callID is the id of the call being run (withCall), and engine the
	// engine that runs it (Engine.Run): the delegate tool's children are
	// named after the one and run by the other.
	callID string
	engine *Engine
	// subagents sums the usage of the children the turn's delegate calls
	// ran (Result.Subagents); shared by the turn's copies of the Env.
	subagents *usageSum
	// model and provider are the turn's (Turn.Model, Turn.Provider): a
	// child runs on them unless its task names a model.
	model    string
	provider provider.Provider
}

// forCall is env for one call run under ctx: its stores are copies whose
// lock waits end when ctx does (Ctrl-C, the gateway's client gone), so
// that a call waiting on a lock another process holds is called off with
// its turn. A store is plain values (a directory, a timeout, functions),
// with no mutex or cache inside, so its copy is the same store.
func (env *Env) forCall(ctx context.Context) *Env {
	c := *env
	if env.Sessions != nil {
		st := *env.Sessions
		st.Cancel = ctx.Done()
		c.Sessions = &st
	}
	if env.Tasks != nil {
		st := *env.Tasks
		st.Cancel = ctx.Done()
		c.Tasks = &st
	}
	if env.Memory != nil {
		st := *env.Memory
		st.Cancel = ctx.Done()
		c.Memory = &st
	}
	if env.Skills != nil && env.Skills.Store != nil {
		sk, st := *env.Skills, *env.Skills.Store
		st.Cancel = ctx.Done()
		sk.Store = &st
		c.Skills = &sk
	}
	return &c
}

// KanbanWorker acts on the kanban task a worker was started for, with the
// CLI verbs' rules: a run or claim that is no longer current is refused
// (an error the model is told). A lock wait ends when ctx does.
type KanbanWorker interface {
	Complete(ctx context.Context, result string) error
	// Block blocks the worker's task, or makes it wait when it has
	// subtasks not done yet (waits true).
	Block(ctx context.Context, reason string) (waits bool, err error)
	Comment(ctx context.Context, text string) error
	Heartbeat(ctx context.Context) error
	// Create makes a task on the worker's board and returns its id; a
	// subtask is one the worker's own task waits for.
	Create(ctx context.Context, title, body, assignee string, subtask bool) (string, error)
}

// Default limits, each overridden by config.yaml's agent section.
const (
	DefaultMaxSteps        = 30
	DefaultMaxOutput       = 16 << 10
	DefaultTerminalTimeout = 120 * time.Second
)

// Cut keeps a tool's output whole when it fits in limit bytes, else its
// head and tail with a line saying how many bytes were cut: for tools
// outside this package (an MCP server's), as the built-ins cut theirs.
func Cut(s string, limit int) string { return cut(s, limit) }
