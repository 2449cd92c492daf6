package cmd

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/mcp"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/cmd/supervisor"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/subagents"
	"github.com/hermes/hermes/fsstore/tasks"
	"github.com/hermes/hermes/profiles"
)

// toolFlags choose what the agent's turns may run.
func toolFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "tools", Usage: "the tools offered, comma-separated; an MCP server's as mcp__SERVER__TOOL or mcp__SERVER__* (default agent.tools in config.yaml, else all but the kanban ones outside a worker)"},
		&cli.BoolFlag{Name: "no-tools", Usage: "offer the model no tools"},
		&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "approve every tool call for this run (tools.approval: auto)"},
		&cli.StringFlag{Name: "cwd", Usage: "the working directory of the session's tools (recorded on the session)"},
	}
}

// newToolEnv builds what the tools of a turn may use, all but the session
// and its directory, which each turn sets.
func newToolEnv(e *env, cfg profiles.Config) (*agent.Env, error) {
	timeout, err := durationSetting("agent.terminal_timeout", cfg.Agent.TerminalTimeout, agent.DefaultTerminalTimeout, profiles.ParsePeriod)
	if err != nil {
		return nil, err
	}
	taskStore, err := e.tasks()
	if err != nil {
		return nil, err
	}
	maxOutput := agent.DefaultMaxOutput
	switch {
	case cfg.Agent.MaxToolOutput < 0:
		return nil, fsstore.Invalidf("agent.max_tool_output must be a positive number of bytes")
	case cfg.Agent.MaxToolOutput > 0:
		maxOutput = cfg.Agent.MaxToolOutput
	}
	if cfg.Checkpoints.MaxFile < 0 {
		return nil, fsstore.Invalidf("checkpoints.max_file must be a positive number of bytes")
	}
	if s := cfg.Checkpoints.Shell; s != "" && s != "off" && s != "git" {
		return nil, fsstore.Invalidf("checkpoints.shell must be git or off, not %q", s)
	}
	env := &agent.Env{
		Checkpoints:     e.checkpoints(cfg),
		Subagents:       subagentStore(e),
		ShellGit:        cfg.Checkpoints.Shell == "git",
		Sessions:        e.sessions(),
		Tasks:           taskStore,
		MaxOutput:       maxOutput,
		TerminalTimeout: timeout,
		StartTask: func(ctx context.Context, name string, argv []string, cwd, sessionID string) (tasks.Task, error) {
			st := *taskStore // plain values: the copy is the same store, with its own Cancel
			st.Cancel = ctx.Done()
			return spawnTask(e, &st, tasks.Task{Name: name, Command: argv, Cwd: cwd, SessionID: sessionID}, os.Environ())
		},
	}
	if w, ok := workerFromEnv(); ok {
		board, err := e.board()
		if err != nil {
			return nil, err
		}
		env.Kanban = &kanbanWorker{board: board, w: w, author: e.profile.Name}
	}
	return env, nil
}

// subagentStore is the profile's sub-agent claims, waiting for a claim
// held as long as for any lock.
func subagentStore(e *env) *subagents.Store {
	st := subagents.Open(e.profile.Dir())
	st.LockTimeout = e.lockTimeout
	return st
}

// maxSteps is agent.max_steps, checked.
func maxSteps(cfg profiles.Config) (int, error) {
	if cfg.Agent.MaxSteps < 0 {
		return 0, fsstore.Invalidf("agent.max_steps must be a positive number")
	}
	return cfg.Agent.MaxSteps, nil
}

// chatTools are the tools a chat offers: --no-tools, else --tools, else
// agent.tools, else the default set (agent.Select, and every enabled MCP
// server's tools), with the pool of the MCP servers they call, which the
// caller closes.
func chatTools(e *env, o chatOptions, cfg profiles.Config) ([]agent.Tool, *mcp.Pool, error) {
	_, inWorker := workerFromEnv()
	if o.NoTools {
		if o.HasTools {
			return nil, nil, usagef("--tools and --no-tools do not go together")
		}
		return nil, nil, nil
	}
	names := cfg.Agent.Tools
	if o.HasTools {
		names = splitList(o.Tools)
		if len(names) == 0 {
			return nil, nil, usagef("--tools needs tool names (or use --no-tools)")
		}
	}
	_, memoryOn, err := memoryStore(e, cfg)
	if err != nil {
		return nil, nil, err
	}
	if !memoryOn && slices.Contains(names, agent.MemoryToolName) {
		return nil, nil, fsstore.Invalidf("tool %s: memory is off (memory.enabled: false in config.yaml)", agent.MemoryToolName)
	}
	tools, pool, err := selectTools(e, cfg, names, inWorker)
	if err == nil && names == nil {
		// A kanban worker reads the memory (its snapshot) and loads
		// skills; it changes them only where the profile says so.
		more := []string{agent.SkillViewToolName}
		if !inWorker || cfg.Skills.KanbanWrite {
			more = append(more, agent.SkillManageToolName)
		}
		if memoryOn && (!inWorker || cfg.Memory.KanbanWrite) {
			more = append([]string{agent.MemoryToolName}, more...)
		}
		if !inWorker {
			// A worker splits its work with kanban_create instead.
			more = append(more, agent.DelegateToolName)
		}
		extra, _ := agent.Select(more, inWorker)
		tools = append(tools, extra...)
	}
	return tools, pool, err
}

// selectTools returns the built-in tools names picks (agent.Select) and
// the MCP servers' tools (names starting with mcp__, mcp.Pool.Select).
// No names: the default built-ins and every enabled server's tools.
func selectTools(e *env, cfg profiles.Config, names []string, inWorker bool) ([]agent.Tool, *mcp.Pool, error) {
	var builtin, fromMCP []string
	if names != nil {
		builtin = []string{}
		for _, n := range names {
			if strings.HasPrefix(n, "mcp__") {
				fromMCP = append(fromMCP, n)
			} else {
				builtin = append(builtin, n)
			}
		}
	}
	tools, err := agent.Select(builtin, inWorker)
	if err != nil {
		return nil, nil, err
	}
	if len(cfg.MCPServers) == 0 {
		if len(fromMCP) > 0 {
			return nil, nil, fsstore.Invalidf("unknown tool %q: config.yaml has no mcp_servers", fromMCP[0])
		}
		return tools, nil, nil
	}
	pool, err := newMCPPool(e, cfg)
	if err != nil {
		return nil, nil, err
	}
	if names != nil && fromMCP == nil {
		return tools, pool, nil
	}
	more, err := pool.Select(context.Background(), fromMCP, e.warn)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return append(tools, more...), pool, nil
}

// newMCPPool is the pool of the profile's MCP servers; it starts none.
func newMCPPool(e *env, cfg profiles.Config) (*mcp.Pool, error) {
	return mcp.NewPool(e.profile.Dir(), cfg, readBuildInfo().Version, e.warn)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// newApprover resolves tools.approval: yes (--yes) means auto; ask
// prompts on a terminal (reading answers from in) and acts as deny
// without one.
func newApprover(e *env, cfg profiles.Config, in *bufio.Reader, yes bool) (agent.Approver, error) {
	policy := firstSet(cfg.Tools.Approval, agent.PolicyAsk)
	if err := agent.CheckPolicy(policy); err != nil {
		return nil, err
	}
	if yes {
		policy = agent.PolicyAuto
	}
	if policy == agent.PolicyAsk && e.stdinIsTerminal() {
		return &agent.Prompter{In: in, Out: e.stderr}, nil
	}
	return agent.Unattended(policy), nil
}

// serverAsks sends the calls of MCP servers whose approval is ask to ask,
// whatever tools.approval says for the other tools, which rest decides.
type serverAsks struct {
	ask, rest agent.Approver
	names     map[string]bool
}

// Refuses reports whether the approver of c refuses it by policy.
func (a serverAsks) Refuses(c provider.ToolCall) bool {
	if a.names[c.Function.Name] {
		return agent.Refuses(a.ask, c)
	}
	return agent.Refuses(a.rest, c)
}

func (a serverAsks) Approve(ctx context.Context, c provider.ToolCall) (bool, error) {
	if a.names[c.Function.Name] {
		return a.ask.Approve(ctx, c)
	}
	return a.rest.Approve(ctx, c)
}

// withServerApproval is approver with the calls of MCP servers whose
// approval is ask sent to ask (a person at a terminal, or a refusal),
// unless --yes approves every call of the run.
func withServerApproval(e *env, approver, ask agent.Approver, tools []agent.Tool) agent.Approver {
	if e.c.Bool("yes") {
		return approver
	}
	names := map[string]bool{}
	for _, t := range tools {
		if m, ok := t.(*mcp.Tool); ok && m.Approval() == agent.PolicyAsk {
			names[m.Name()] = true
		}
	}
	if len(names) == 0 {
		return approver
	}
	return serverAsks{ask: ask, rest: approver, names: names}
}

// askApprover is what tools.approval: ask gives: a Prompter on a
// terminal (approver, when it is one already), else a refusal.
func askApprover(e *env, approver agent.Approver, in *bufio.Reader) agent.Approver {
	if p, ok := approver.(*agent.Prompter); ok {
		return p
	}
	if e.stdinIsTerminal() {
		return &agent.Prompter{In: in, Out: e.stderr}
	}
	return agent.Fixed(false)
}

// absDir resolves dir to an absolute directory that exists.
func absDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fsstore.Invalidf("--cwd %s is not a directory", dir)
	}
	return abs, nil
}

// spawnTask creates the record of a background task and starts its
// supervisor, returning the record once the command runs.
func spawnTask(e *env, store *tasks.Store, t tasks.Task, env []string) (tasks.Task, error) {
	self := os.Getpid()
	// Until the supervisor writes its own pid, the caller's stands in: it
	// lives until the supervisor says the command runs.
	t.SupervisorPID, t.SupervisorStart = self, supervisor.ProcStart(self)
	t, err := store.Create(t)
	if err != nil {
		return t, err
	}
	if err := startSupervisor(e, t.ID, env); err != nil {
		return t, err
	}
	return store.Get(t.ID)
}
