package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/mcp"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
	"github.com/hermes/hermes/profiles"
)

// providerFlags choose and set up the model provider; chat and the gateway
// share them.
func providerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "provider", Usage: "echo, openai, anthropic or exec (default $HERMES_PROVIDER, else provider: in config.yaml, else echo)"},
		&cli.StringFlag{Name: "model", Usage: "model name (default $HERMES_MODEL, else model: in config.yaml)"},
		&cli.StringFlag{Name: "base-url", Usage: "the provider's base URL, e.g. http://127.0.0.1:8080/v1 for an OpenAI-compatible server (default $HERMES_BASE_URL)"},
		&cli.StringFlag{Name: "exec-command", Usage: "exec provider: the agent command, run with sh -c (default $HERMES_EXEC_COMMAND)"},
		&cli.StringFlag{Name: "timeout", Value: providerTimeout, Usage: "how long one model call may take"},
	}
}

// providerTimeout is how long one model call may take when --timeout is
// not given.
const providerTimeout = "10m"

// givenProviderFlags are the provider flags given on the command line, by
// name, in the order of providerFlags: what chat's options keep (and hand
// to a background chat) and what providerConfig reads.
func givenProviderFlags(c *cli.Context) map[string]string {
	given := map[string]string{}
	for _, f := range providerFlags() {
		if name := f.Names()[0]; c.IsSet(name) {
			given[name] = c.String(name)
		}
	}
	return given
}

// firstSet returns the first non-empty value.
func firstSet(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// providerConfig resolves the provider settings: flag (given, as
// givenProviderFlags reads them), else environment, else config.yaml, else
// the embedded default (echo).
func providerConfig(given map[string]string, cfg profiles.Config) (provider.Config, error) {
	timeout, err := profiles.ParsePeriod(firstSet(given["timeout"], providerTimeout))
	if err != nil {
		return provider.Config{}, fmt.Errorf("--timeout: %w", err)
	}
	name := firstSet(given["provider"], os.Getenv("HERMES_PROVIDER"), cfg.Provider, "echo")
	key, keyFrom := firstEnv("HERMES_API_KEY", "OPENAI_API_KEY")
	if name == "anthropic" {
		key, keyFrom = anthropicKey(cfg)
	}
	a := cfg.Anthropic
	return provider.Config{
		Name:        name,
		Model:       firstSet(given["model"], os.Getenv("HERMES_MODEL"), cfg.Model),
		BaseURL:     firstSet(given["base-url"], os.Getenv("HERMES_BASE_URL"), cfg.BaseURL),
		APIKey:      key,
		KeyFrom:     keyFrom,
		ExecCommand: firstSet(given["exec-command"], os.Getenv("HERMES_EXEC_COMMAND"), cfg.ExecCommand),
		Timeout:     timeout,
		// The gateway runs that many calls at once (0: the default).
		MaxIdlePerHost: cfg.Gateway.MaxConnections,
		// Only config.yaml sets it: it describes the server a profile talks to.
		ReasoningContent: cfg.ReasoningContent,
		Anthropic:        provider.Anthropic{Version: a.Version, Beta: a.Beta, Bearer: a.Bearer, MaxTokens: a.MaxTokens, Thinking: a.Thinking, Cache: a.Cache},
	}, nil
}

// anthropicKey is the anthropic provider's key and the variable it came
// from: $HERMES_API_KEY, else the variable anthropic.api_key_env names,
// else $ANTHROPIC_API_KEY.
func anthropicKey(cfg profiles.Config) (string, string) {
	names := []string{"HERMES_API_KEY"}
	if cfg.Anthropic.APIKeyEnv != "" {
		names = append(names, cfg.Anthropic.APIKeyEnv)
	}
	return firstEnv(append(names, "ANTHROPIC_API_KEY")...)
}

// firstEnv is the first of the variables names that is set and not
// empty, and its name; "" and "" when none is.
func firstEnv(names ...string) (value, name string) {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v, n
		}
	}
	return "", ""
}

// warnNoKey says, before anything is sent, that a provider that speaks to
// a server off this machine has no key, and which variables give one.
func warnNoKey(e *env, pc provider.Config) {
	var vars string
	switch pc.Name {
	case "openai":
		vars = "HERMES_API_KEY or OPENAI_API_KEY"
	case "anthropic":
		vars = "HERMES_API_KEY, the variable anthropic.api_key_env names, or ANTHROPIC_API_KEY"
	default:
		return
	}
	if pc.APIKey != "" || localURL(pc.BaseURL) {
		return
	}
	at := pc.BaseURL
	if at == "" {
		at = "its default server"
	}
	e.warn(fmt.Sprintf("no API key for the %s provider at %s: set %s", pc.Name, at, vars))
}

// localURL reports whether a base URL names this machine or a private
// network (a local model server, which needs no key); an empty one is
// the provider's public default.
func localURL(raw string) bool {
	u, err := url.Parse(raw)
	if raw == "" || err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate())
}

// newProvider makes the provider providerConfig resolves from the
// command's flags, and returns its settings too.
func newProvider(e *env, cfg profiles.Config) (provider.Provider, provider.Config, error) {
	prov, pc, err := providerFrom(givenProviderFlags(e.c), cfg)
	if err == nil {
		warnNoKey(e, pc)
	}
	return prov, pc, err
}

// providerFrom makes the provider providerConfig resolves from the given
// provider flags.
func providerFrom(given map[string]string, cfg profiles.Config) (provider.Provider, provider.Config, error) {
	pc, err := providerConfig(given, cfg)
	if err != nil {
		return nil, pc, err
	}
	prov, err := provider.New(pc)
	return prov, pc, err
}

func chatCommand() *cli.Command {
	return &cli.Command{
		Name:  "chat",
		Usage: "talk to a model in a session that keeps its whole history",
		Description: `With -q, one turn: the reply goes to stdout. Without -q and with stdin not a
terminal, the prompt is read from stdin; with -q and piped stdin, both are sent
(git diff | hermes chat -q "review this"). With a terminal, or -i, a line mode
with the slash commands below. Ctrl-C cancels the turn in flight.

The user message is stored (and synced) before the provider is called. A new
session's first turn stores the project instructions (AGENTS.md of the profile
and of the repository down to the working directory) before it, unless
--no-instructions. The model may call tools (terminal, process, read_file,
write_file, edit_file, search_files, find_files, session_search; the kanban
tools inside a worker): the message holding its calls is stored before any
runs, each result as its call ends, and the model is called again until it
replies without calls or agent.max_steps is reached. terminal, write_file,
edit_file and process kill need approval (tools.approval: ask, auto or deny;
--yes for auto). --background runs the prompt as a background task in a new
session, with the other options given.

Line mode's commands:
` + indent(slashHelp(slashCommands()), "  "),
		ArgsUsage: "[TITLE with -c]",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "query", Aliases: []string{"q"}, Usage: "the prompt: one turn, reply to stdout"},
			&cli.StringFlag{Name: "resume", Aliases: []string{"r"}, Usage: "continue the session with this id, id prefix or title"},
			&cli.BoolFlag{Name: "continue", Aliases: []string{"c"}, Usage: "continue the most recently active session (or the newest titled TITLE)"},
			&cli.StringFlag{Name: "title", Usage: "title of a new session"},
			&cli.StringFlag{Name: "system", Usage: "a system message to add before the prompt"},
			&cli.BoolFlag{Name: "interactive", Aliases: []string{"i"}, Usage: "line mode even when stdin is not a terminal"},
			&cli.BoolFlag{Name: "background", Usage: "run the prompt as a background task in a new session; print the task and session ids"},
			&cli.BoolFlag{Name: "no-instructions", Usage: "leave out the project instructions (AGENTS.md) that a new session's first turn reads"},
		}, append(providerFlags(), toolFlags()...)...),
		Action: withEnv(chat),
	}
}

// chatter holds one chat: the store, the turn engine and the current
// session ("" until the first turn of a new session creates it).
type chatter struct {
	e       *env
	opts    chatOptions
	mcp     *mcp.Pool // the MCP servers the tools call, closed as the chat ends
	store   *sessions.Store
	engine  *agent.Engine
	toolEnv *agent.Env
	// confine is agent.confine: the file tools keep to the session's
	// working directory.
	confine   bool
	model     string
	sessionID string
	title     string // for the session the first turn creates
	system    string // a system message for the next turn
	cwd       string // --cwd, absolute; "" keeps the session's
	stream    bool   // write the reply as it arrives
	// showThinking is anthropic.show_thinking: a streamed reply's thinking
	// is shown too (thinkingWriter).
	showThinking bool
	in           *bufio.Reader
	maxLine      int64 // sessions.max_line: the longest prompt

	// compress is when a turn compresses the session first.
	compress compressAt
	// numbered are the sessions of the last /sessions listing, which
	// /resume N picks from.
	numbered []string

	// restore is checkpoints.restore: whether /undo and /retry take the
	// files back (ask, always, never); lines is line mode's input, which
	// its questions read.
	restore string
	lines   lineReader

	// started is the session whose SessionStart hooks this chat ran
	// last; forked the last fork it made (their source: fork).
	started, forked string

	// mu guards cancelTurn: in line mode, Ctrl-C cancels the turn in
	// flight through it.
	mu         sync.Mutex
	cancelTurn context.CancelFunc
}

func chat(e *env) error {
	ch, err := newChatter(e)
	if err != nil {
		return err
	}
	defer ch.mcp.Close()
	if err := ch.pickSession(); err != nil {
		return err
	}
	o := ch.opts
	if o.Interactive || (!o.HasQuery && e.stdinIsTerminal()) {
		if o.HasQuery {
			return usagef("-q and -i do not go together")
		}
		if o.Background {
			return usagef("--background takes -q PROMPT (in line mode: /background PROMPT)")
		}
		return ch.exit(ch.lineMode())
	}
	prompt := o.Query
	if !e.stdinIsTerminal() {
		s, err := readPiped(ch.in, ch.maxLine)
		if err != nil {
			return err
		}
		if strings.TrimSpace(s) != "" {
			if strings.TrimSpace(prompt) == "" {
				if verb := slashVerb(s); verb != "" {
					return usagef("%s is a line-mode command, and piped stdin is sent as one message: hermes chat -c -i reads lines from a pipe, slash commands included", verb)
				}
				prompt = s
			} else {
				prompt += "\n\n" + s
			}
		}
	}
	if int64(len(prompt)) > ch.maxLine {
		return promptTooLong(ch.maxLine)
	}
	if strings.TrimSpace(prompt) == "" {
		return usagef("no prompt: give -q PROMPT or pipe it on stdin")
	}
	if !utf8.ValidString(prompt) {
		// Stored as JSON, a bad byte would silently become U+FFFD.
		return usagef("the prompt is not valid UTF-8 (convert it first, e.g. with iconv)")
	}
	if o.Background {
		return ch.background(prompt, o.Title)
	}
	ch.stream = !e.json && isTerminalWriter(e.stdout)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reply, err := ch.turn(ctx, prompt)
	if err == nil {
		// The reply is stored: it is shown even when the session cannot
		// be ended after it (a full disk), which exit then reports.
		return ch.exit(ch.printReply(reply))
	}
	err = ch.exit(err)
	if err != nil {
		if e.json && reply.SessionID != "" {
			// A script learns which session keeps its message.
			printJSON(e.stdout, map[string]string{"session_id": reply.SessionID, "error": err.Error()})
		}
		return err
	}
	return nil
}

// readPiped reads the prompt piped on stdin: the text as it is, but for its
// final line ends (leading indentation, code or a diff's context line, is
// kept). A prompt is one message, one line of the transcript, so
// sessions.max_line (max) bounds it: a longer one is refused once max
// bytes and the line ends after them are read, never held whole.
func readPiped(r io.Reader, max int64) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(b), "\r\n")
	if int64(len(b)) <= max {
		return s, nil
	}
	if int64(len(s)) > max {
		return "", promptTooLong(max)
	}
	// Past the limit only line ends may follow.
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if strings.Trim(string(buf[:n]), "\r\n") != "" {
			return "", promptTooLong(max)
		}
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return "", err
		}
	}
}

func promptTooLong(max int64) error {
	return fsstore.Invalidf("the prompt is longer than sessions.max_line (%d bytes)", max)
}

// Reasons a chat gives when it ends a session.
const (
	// endCLIExit: the chat that used the session exited normally.
	endCLIExit = "cli_exit"
	// endResumedOther: line mode's /resume left it for another session.
	endResumedOther = "resumed_other"
	// endNewSession: line mode's /new left it for a new session.
	endNewSession = "new_session"
)

// exit ends the chat's session with reason cli_exit as the chat exits
// normally (a one-shot turn done, failed or cancelled; line mode's /exit,
// Ctrl-D or end of input), so that prune can bound a profile's size; err
// is what the chat returns otherwise. Only an active session is ended: one
// a restart interrupted (resume_pending, suspended) stays so until a turn
// in it succeeds. A crash leaves the session active; the next turn in it
// (--resume, -c) reopens it.
func (ch *chatter) exit(err error) error {
	if ch.sessionID == "" {
		return err
	}
	sess, gerr := ch.store.Get(ch.sessionID)
	if gerr != nil || sess.State != sessions.StateActive {
		return err
	}
	if eerr := ch.end(ch.sessionID, endCLIExit); eerr != nil {
		return errors.Join(err, fmt.Errorf("ending session %s: %w", ch.sessionID, eerr))
	}
	return err
}

// newChatter resolves the provider, the tools, their approval and the
// engine's limits. Nothing is written.
func newChatter(e *env) (*chatter, error) {
	opts := readChatOptions(e.c)
	cfg, err := e.config()
	if err != nil {
		return nil, err
	}
	prov, pc, err := providerFrom(opts.Provider, cfg)
	if err != nil {
		return nil, err
	}
	warnNoKey(e, pc)
	tools, pool, err := chatTools(e, opts, cfg)
	if err != nil {
		return nil, err
	}
	steps, err := maxSteps(cfg)
	if err != nil {
		return nil, err
	}
	compress, err := parseCompressAt(cfg)
	if err != nil {
		return nil, err
	}
	maxLine, err := maxLineSetting(cfg)
	if err != nil {
		return nil, err
	}
	ch := &chatter{
		e:       e,
		opts:    opts,
		mcp:     pool,
		store:   e.sessions(),
		model:   pc.Model,
		title:   opts.Title,
		system:  opts.System,
		in:      bufio.NewReader(e.stdin),
		maxLine: maxLine,
	}
	ch.showThinking = cfg.Anthropic.ShowThinking == nil || *cfg.Anthropic.ShowThinking
	ch.compress = compress
	if ch.restore, err = restoreSetting(e, cfg); err != nil {
		return nil, err
	}
	if opts.Cwd != "" {
		if ch.cwd, err = absDir(opts.Cwd); err != nil {
			return nil, err
		}
	}
	approver, err := newApprover(e, cfg, ch.in, opts.Yes)
	if err != nil {
		return nil, err
	}
	approver = withServerApproval(e, approver, askApprover(e, approver, ch.in), tools)
	if ch.toolEnv, err = newToolEnv(e, cfg); err != nil {
		return nil, err
	}
	ch.confine = cfg.Agent.Confine
	if cfg.Agent.MaxSubagents < 0 || cfg.Agent.SubagentDepth < 0 {
		return nil, fsstore.Invalidf("agent.max_subagents and agent.subagent_depth must be positive numbers")
	}
	ch.engine = &agent.Engine{
		Sessions: ch.store,
		Provider: prov,
		Tools:    tools,
		Approver: approver,
		MaxSteps: steps,
		Progress: ch.progress,
		// The delegate tool's children (cmd/agent/delegate.go).
		MaxSubagents:  cfg.Agent.MaxSubagents,
		SubagentDepth: cfg.Agent.SubagentDepth,
		Late: func(sid string, c provider.ToolCall, result string) {
			e.warn(fmt.Sprintf("%s (call %s) ended after its turn was cancelled; its result (%d bytes) was not kept: the call was answered as cancelled", c.Function.Name, c.ID, len(result)))
		},
	}
	if !opts.NoInstructions {
		ch.engine.Instructions = &agent.Instructions{ProfileDir: e.profile.Dir(), Warn: e.warn}
	}
	mem, memoryOn, err := memoryStore(e, cfg)
	if err != nil {
		return nil, err
	}
	if memoryOn {
		ch.engine.Memory, ch.engine.Warn, ch.toolEnv.Memory = mem, e.warn, mem
	}
	ch.engine.Skills = skillsFinder(e)
	ch.toolEnv.Skills = ch.engine.Skills
	if ch.engine.Hooks, err = hooks.New("hooks", cfg.Hooks); err != nil {
		return nil, err
	}
	ch.engine.Warn = e.warn
	return ch, nil
}

// progress tells stderr of each tool call as it starts, and of a memory
// nearly full or a change of it refused as the call ends.
func (ch *chatter) progress(p agent.Progress) {
	if !p.Done {
		fmt.Fprintf(ch.e.stderr, "hermes: %s %s\n", p.Call.Function.Name, agent.Summary(p.Call))
	} else if alert := agent.MemoryAlert(p.Result); p.Call.Function.Name == agent.MemoryToolName && alert != "" {
		ch.e.warn("memory: " + alert)
	}
}

func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// pickSession applies --resume and --continue, following a compressed
// session to the newest of its chain. Neither: a new session, created by
// the first turn.
func (ch *chatter) pickSession() error {
	if err := ch.pickNamed(); err != nil || ch.sessionID == "" {
		return err
	}
	latest, err := ch.latest(ch.sessionID)
	ch.sessionID = latest
	return err
}

// latest is the newest session of id's compression chain, saying so when
// it is not id.
func (ch *chatter) latest(id string) (string, error) {
	latest, err := ch.store.Latest(id)
	if err != nil {
		return "", err
	}
	if latest != id {
		fmt.Fprintf(ch.e.stderr, "hermes: session %s was compressed; going on in %s, the newest of its chain\n", id, latest)
	}
	return latest, nil
}

// pickNamed sets the session --resume or --continue names.
func (ch *chatter) pickNamed() error {
	resume, cont, args := ch.opts.Resume, ch.opts.Continue, ch.opts.Args
	switch {
	case resume != "" && cont:
		return usagef("--resume and --continue do not go together")
	case len(args) > 0 && !cont:
		return usagef("unexpected argument %q (a TITLE goes with -c)", args[0])
	case len(args) > 1:
		return usagef("-c takes at most one TITLE")
	case resume != "":
		id, err := ch.store.Resolve(resume)
		if err != nil {
			return err
		}
		ch.sessionID = id
	case cont && len(args) == 1:
		id, err := ch.store.ByTitle(args[0])
		if err != nil {
			return err
		}
		ch.sessionID = id
	case cont:
		list, err := ch.store.List(sessions.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return fsstore.NotFoundf("no session to continue in profile %s: hermes chat -q PROMPT starts one", ch.e.profile.Name)
		}
		ch.sessionID = list[0].ID
	}
	return nil
}

// turnResult is what one turn produced.
type turnResult struct {
	SessionID    string          `json:"session_id"`
	Reply        string          `json:"reply"`
	MessageCount int64           `json:"message_count"`
	Usage        *provider.Usage `json:"usage,omitempty"`
	// SubagentUsage is the usage of the sub-agents the turn's delegate
	// calls ran, apart from the turn's own.
	SubagentUsage *provider.Usage `json:"subagent_usage,omitempty"`
	Steps         int             `json:"steps"`
	StepLimit     bool            `json:"step_limit"`
}

// session returns the chat's session, creating it for the first turn of a
// new one, with its tools' working directory recorded and input as its
// first messages, in one step: a create that fails (a full disk) leaves
// no session, and none without the message it was made for. made says
// that input is stored.
func (ch *chatter) session(ctx context.Context, input []sessions.Message) (_ sessions.Session, made bool, _ error) {
	if ch.sessionID == "" {
		cwd, err := ch.workDir()
		if err != nil {
			return sessions.Session{}, false, err
		}
		sess := sessions.Session{ID: fsstore.NewID(ch.store.Now()), Title: ch.title, Source: "chat", Model: ch.model, Cwd: cwd}
		if input, err = ch.hookInput(ctx, sess, "new", input); err != nil {
			return sessions.Session{}, false, err
		}
		sess, _, err = ch.store.CreateWith(sess, ch.engine.Opening(ctx, cwd, input))
		if err != nil {
			return sessions.Session{}, false, fmt.Errorf("%w (nothing was stored: no session was made)", err)
		}
		ch.sessionID, ch.title = sess.ID, ""
		return sess, true, nil
	}
	sess, err := ch.resumed()
	if err != nil && !errors.Is(err, fsstore.ErrNotFound) && !errors.Is(err, fsstore.ErrInvalid) {
		err = fmt.Errorf("%w (your message was not stored in session %s)", err, ch.sessionID)
	}
	return sess, false, err
}

// resumed returns the chat's session, which exists.
func (ch *chatter) resumed() (sessions.Session, error) {
	sess, err := ch.store.Get(ch.sessionID)
	if err != nil {
		return sess, err
	}
	// --cwd moves a resumed session; one made before sessions kept a
	// directory gets the current one.
	if (ch.cwd != "" && sess.Cwd != ch.cwd) || sess.Cwd == "" {
		cwd, err := ch.workDir()
		if err != nil {
			return sess, err
		}
		return ch.store.SetCwd(sess.ID, cwd)
	}
	// An imported session names the directory it ran in on its own
	// machine.
	if _, err := os.Stat(sess.Cwd); errors.Is(err, fs.ErrNotExist) {
		ch.e.warn(fmt.Sprintf("session %s works in %s, which does not exist here: its tools will fail there; give --cwd DIR to move it", sess.ID, sess.Cwd))
	}
	return sess, nil
}

func (ch *chatter) workDir() (string, error) {
	if ch.cwd != "" {
		return ch.cwd, nil
	}
	return os.Getwd()
}

// turn runs one turn through the engine (cmd/agent): the user message,
// after a system message when there is one, is stored before the first
// model call; see the agent package for the rest.
func (ch *chatter) turn(ctx context.Context, text string) (turnResult, error) {
	var input []sessions.Message
	if ch.system != "" {
		input = append(input, sessions.Message{Role: "system", Content: sessions.TextContent(ch.system)})
	}
	input = append(input, sessions.Message{Role: "user", Content: sessions.TextContent(text)})
	return ch.run(ctx, input)
}

// run runs a turn whose input is input: none for /retry, whose fork ends
// with the user message to answer.
func (ch *chatter) run(ctx context.Context, input []sessions.Message) (turnResult, error) {
	sess, made, err := ch.session(ctx, input)
	if err != nil {
		return turnResult{}, err
	}
	if made {
		ch.system, input = "", nil
	}
	if len(input) > 0 {
		ch.system = ""
		if sess, err = ch.compressIfDue(ctx, sess); err != nil {
			return turnResult{}, err
		}
	}
	if !made {
		if input, err = ch.hookInput(ctx, sess, ch.resumeSource(sess), input); err != nil {
			return turnResult{}, err
		}
	}
	ch.registerWithKanban(sess.ID)
	env := *ch.toolEnv
	env.Cwd = sess.Cwd
	if ch.confine {
		env.Root = sess.Cwd
		if env.Root == "" {
			if env.Root, err = ch.workDir(); err != nil {
				return turnResult{}, err
			}
		}
	}
	t := agent.Turn{SessionID: sess.ID, Input: input, Env: &env}
	if ch.stream {
		t.Stream = thinkingWriter(ch.e.stdout, ch.showThinking, os.Getenv("NO_COLOR") == "")
	}
	res, err := ch.engine.Run(ctx, t)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return turnResult{SessionID: sess.ID}, err
		}
		// The engine stores the input before its first model call; a
		// count of 0 is an input it could not store (a full disk).
		if len(input) > 0 && res.Count == 0 {
			return turnResult{SessionID: sess.ID}, fmt.Errorf("%w (your message was not stored in session %s)", err, sess.ID)
		}
		return turnResult{SessionID: sess.ID}, fmt.Errorf("%w (session %s keeps your message; resume it with hermes chat --resume %s)", err, sess.ID, sess.ID)
	}
	if res.StepLimit {
		ch.e.warn(fmt.Sprintf("the turn stopped after %d steps (agent.max_steps); session %s is consistent and can go on", res.Steps, sess.ID))
	}
	if notice := stopNotice(res.Added); notice != "" {
		ch.e.warn(notice)
	}
	return turnResult{SessionID: sess.ID, Reply: res.Text(), MessageCount: res.Count, Usage: res.Usage, SubagentUsage: res.Subagents, Steps: res.Steps, StepLimit: res.StepLimit}, nil
}

// stopNotice says why a reply ended, when its last assistant message
// stored a stop reason the user should know of (the anthropic
// provider's): cut at max_tokens, refused, out of context; else "".
func stopNotice(added []sessions.Message) string {
	var reason string
	for _, m := range added {
		if m.Role == "assistant" {
			reason = ""
			json.Unmarshal(m.Extra[provider.StopReason], &reason)
		}
	}
	switch reason {
	case "max_tokens":
		return "the reply stopped at its token limit (max_tokens); ask the model to go on to get the rest"
	case "refusal":
		return "the model declined to answer (stop reason refusal)"
	case "model_context_window_exceeded":
		return "the reply stopped at the end of the model's context window; compress the session (/compress) to go on"
	case "pause_turn":
		return "the model paused its turn (pause_turn); send a message to let it go on"
	}
	return ""
}

// compressIfDue compresses sess before a turn when its history has
// reached agent.compress_at, and returns the session the turn goes to. A
// history that holds nothing but the turns a compression keeps goes on as
// it is; so does one whose compression fails (a provider error), with a
// warning: the turn matters more.
func (ch *chatter) compressIfDue(ctx context.Context, sess sessions.Session) (sessions.Session, error) {
	why, err := ch.compress.passed(ch.store, sess)
	if err != nil || why == "" {
		return sess, err
	}
	c, err := ch.engine.CompressBy(ctx, sess.ID, agent.DefaultKeep, agent.TriggerAuto)
	switch {
	case errors.Is(err, fsstore.ErrInvalid):
		return sess, nil
	case err != nil:
		ch.e.warn(fmt.Sprintf("session %s has %s, but compressing it failed: %v; the turn goes on in it", sess.ID, why, err))
		return sess, nil
	}
	fmt.Fprintf(ch.e.stderr, "hermes: %s (it had %s)\n", compressedText(c), why)
	ch.sessionID, ch.started = c.Child.ID, c.Child.ID
	return c.Child, nil
}

// compressNow is /compress [N]: the current session continues in a
// compressed one, which the chat goes on in.
func (ch *chatter) compressNow(keep int) error {
	if ch.sessionID == "" {
		return errors.New("no session yet: nothing to compress")
	}
	return ch.cancellable(func(ctx context.Context) error {
		c, err := ch.engine.Compress(ctx, ch.sessionID, keep)
		if err != nil {
			return err
		}
		fmt.Fprintf(ch.e.stderr, "hermes: %s\n", compressedText(c))
		ch.sessionID, ch.started = c.Child.ID, c.Child.ID
		return nil
	})
}

// registerWithKanban records the session on the kanban run that started
// this chat as its worker, before the first provider call, so that a
// respawned worker can resume it. A claim that is no longer current is
// reported and the chat goes on.
func (ch *chatter) registerWithKanban(sessionID string) {
	w, ok := workerFromEnv()
	if !ok {
		return
	}
	profile := firstSet(os.Getenv(envKanbanProfile), ch.e.profile.Name)
	if err := profiles.CheckName(profile); err != nil {
		ch.e.warn("kanban: " + err.Error())
		return
	}
	board := kanban.NewBoard(profiles.Dir(ch.e.profile.Root, profile), ch.e.lockTimeout, ch.e.warn)
	if err := board.RegisterSession(w, sessionID); err != nil {
		ch.e.warn("kanban: " + err.Error())
	}
}

func (ch *chatter) printReply(r turnResult) error {
	if ch.e.json {
		return printJSON(ch.e.stdout, r)
	}
	if ch.stream {
		// The text went out as it arrived.
		_, err := fmt.Fprintln(ch.e.stdout)
		return err
	}
	_, err := fmt.Fprintln(ch.e.stdout, r.Reply)
	return err
}

// lineMode is the interactive loop: a prompt on stderr, replies on stdout.
func (ch *chatter) lineMode() error {
	e := ch.e
	ch.stream = !e.json && isTerminalWriter(e.stdout)
	// Ctrl-C cancels the turn in flight, not the program.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
			ch.mu.Lock()
			if ch.cancelTurn != nil {
				ch.cancelTurn()
			} else {
				fmt.Fprintln(e.stderr, "\n(Ctrl-D or /exit to quit)")
			}
			ch.mu.Unlock()
		}
	}()
	if ch.sessionID != "" {
		fmt.Fprintf(e.stderr, "hermes: resuming session %s\n", ch.sessionID)
	}
	fmt.Fprintln(e.stderr, "hermes: type a message; /help for commands, Ctrl-D to exit")
	in, err := ch.newLineReader()
	if err != nil {
		return err
	}
	defer in.Close()
	ch.lines = in
	for {
		line, err := in.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(e.stderr)
				return nil
			}
			return err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") {
			done, err := ch.slash(line)
			if done {
				return nil
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "hermes: %v\n", err)
			}
			continue
		}
		var r turnResult
		err = ch.cancellable(func(ctx context.Context) (err error) {
			r, err = ch.turn(ctx, line)
			return err
		})
		if err != nil {
			fmt.Fprintf(e.stderr, "hermes: %v\n", err)
			continue
		}
		if err := ch.printReply(r); err != nil {
			return err
		}
	}
}

// cancellable runs fn with a context that Ctrl-C cancels (line mode).
func (ch *chatter) cancellable(fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch.mu.Lock()
	ch.cancelTurn = cancel
	ch.mu.Unlock()
	defer func() {
		ch.mu.Lock()
		ch.cancelTurn = nil
		ch.mu.Unlock()
	}()
	return fn(ctx)
}

// endForked is the reason a line-mode fork (/branch, /undo, /retry) ends
// the session it leaves; resuming it reopens it.
const endForked = "forked"

// fork makes a fork of the current session holding its messages 1 to at
// (all when 0), ends the current one (reason forked) and goes on in the
// fork. It says which session is which: nothing is lost, and both stay
// resumable.
func (ch *chatter) fork(at int64, title string) error {
	if ch.sessionID == "" {
		return errors.New("no session yet: nothing to fork")
	}
	old := ch.sessionID
	child, err := ch.store.Fork(old, at, title)
	if err != nil {
		return err
	}
	if err := ch.end(old, endForked); err != nil {
		return err
	}
	ch.sessionID, ch.forked = child.ID, child.ID
	fmt.Fprintf(ch.e.stderr, "hermes: session %s forked at message %d into %s; %s is kept as it was (hermes chat --resume %s)\n",
		old, child.ForkSeq, child.ID, old, old)
	return nil
}

// turnStarts reads the current session backwards to its nth last turn
// (a user message and all that answered it) and returns the seq of the
// user message of each, the nth last first: it reads only those turns.
func (ch *chatter) turnStarts(n int) ([]int64, error) {
	if ch.sessionID == "" {
		return nil, errors.New("no session yet")
	}
	var starts []int64
	_, err := ch.store.Tail(ch.sessionID, func(m sessions.Message) bool {
		if m.Role == "user" {
			starts = append([]int64{m.Seq}, starts...)
		}
		return len(starts) == n
	})
	return starts, err
}

// undo is /undo N: a fork without the last n turns.
func (ch *chatter) undo(n int) error {
	starts, err := ch.turnStarts(n)
	if err != nil {
		return err
	}
	switch {
	case len(starts) < n:
		return fmt.Errorf("session %s has %d turns; /undo %d would leave none (/new starts an empty session)", ch.sessionID, len(starts), n)
	case starts[0] == 1:
		return fmt.Errorf("/undo %d would leave session %s empty (/new starts an empty session)", n, ch.sessionID)
	}
	return ch.forkWithFiles(starts[0], starts[0]-1, ch.restore)
}

// retry is /retry: a fork that ends with the last user message, without
// what answered it, where that message is sent to the model again.
func (ch *chatter) retry() error {
	starts, err := ch.turnStarts(1)
	if err != nil {
		return err
	}
	if len(starts) == 0 {
		return fmt.Errorf("session %s has no message to retry", ch.sessionID)
	}
	if err := ch.forkWithFiles(starts[0], starts[0], ch.restore); err != nil {
		return err
	}
	var r turnResult
	err = ch.cancellable(func(ctx context.Context) (err error) {
		r, err = ch.run(ctx, nil)
		return err
	})
	if err != nil {
		return err
	}
	return ch.printReply(r)
}

// background runs prompt as a background task: hermes chat in a new
// session (titled title, if any) whose parent is the current one (if
// any), under the tasks supervisor, its record carrying the new session's
// id. The chat's options go with it (chatOptions.backgroundArgs); without
// a terminal, ask acts as deny there.
func (ch *chatter) background(prompt, title string) error {
	e := ch.e
	cwd, err := ch.workDir()
	if ch.sessionID != "" && ch.cwd == "" {
		var parent sessions.Session
		if parent, err = ch.store.Get(ch.sessionID); err == nil && parent.Cwd != "" {
			cwd = parent.Cwd
		}
	}
	if err != nil {
		return err
	}
	sess, _, err := ch.store.Create(sessions.Session{Title: title, Source: "chat", Model: ch.model, ParentSessionID: ch.sessionID, Cwd: cwd})
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	argv := append([]string{exe, "--home", e.profile.Root, "--profile", e.profile.Name, "--lock-timeout", e.lockTimeout.String()},
		ch.opts.backgroundArgs(sess.ID, prompt)...)
	t, err := spawnTask(e, ch.toolEnv.Tasks, tasks.Task{Name: "background chat", Command: argv, Cwd: cwd, SessionID: sess.ID}, os.Environ())
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, map[string]string{"task_id": t.ID, "session_id": sess.ID})
	}
	fmt.Fprintf(e.stdout, "%s %s\n", t.ID, sess.ID)
	fmt.Fprintf(e.stderr, "hermes: task %s runs the prompt in session %s; hermes tasks log -f %s follows it\n", t.ID, sess.ID, t.ID)
	return nil
}

// tasks is /tasks: with no verb, the current session's tasks (and those of
// the sessions /background started from it); with one, hermes tasks VERB
// ARGS run in this process, on this profile.
func (ch *chatter) tasks(arg string) error {
	e := ch.e
	args := []string{"hermes", "--home", e.profile.Root, "--profile", e.profile.Name, "--lock-timeout", e.lockTimeout.String()}
	if e.json {
		args = append(args, "--json")
	}
	args = append(args, "tasks")
	if arg == "" {
		if ch.sessionID == "" {
			return errors.New("no session yet: /tasks lists the current session's tasks")
		}
		args = append(args, "list", "--session", ch.sessionID)
	} else {
		args = append(args, strings.Fields(arg)...)
	}
	if code := Run(args, ch.in, e.stdout, e.stderr); code != 0 {
		return fmt.Errorf("/tasks exited with status %d", code)
	}
	return nil
}

// slashVerb is the line-mode command a piped prompt of one line begins
// with ("/history 5": /history), or "" when it is none.
func slashVerb(prompt string) string {
	line := strings.TrimSpace(prompt)
	if strings.Contains(line, "\n") {
		return ""
	}
	verb, _, _ := strings.Cut(line, " ")
	for _, c := range slashCommands() {
		if c.name == verb || slices.Contains(c.aliases, verb) {
			return verb
		}
	}
	return ""
}
