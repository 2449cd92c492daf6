package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/profiles"
)

// providerFlags choose and set up the model provider; chat and the gateway
// share them.
func providerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "provider", Usage: "echo, openai or exec (default $HERMES_PROVIDER, else provider: in config.yaml, else echo)"},
		&cli.StringFlag{Name: "model", Usage: "model name (default $HERMES_MODEL, else model: in config.yaml)"},
		&cli.StringFlag{Name: "base-url", Usage: "OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (default $HERMES_BASE_URL)"},
		&cli.StringFlag{Name: "exec-command", Usage: "exec provider: the agent command, run with sh -c (default $HERMES_EXEC_COMMAND)"},
		&cli.StringFlag{Name: "timeout", Value: "10m", Usage: "how long one model call may take"},
	}
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

// providerConfig resolves the provider settings: flag, else environment,
// else config.yaml, else the embedded default (echo).
func providerConfig(e *env, cfg profiles.Config) (provider.Config, error) {
	timeout, err := profiles.ParseDuration(e.c.String("timeout"))
	if err != nil {
		return provider.Config{}, err
	}
	return provider.Config{
		Name:        firstSet(e.c.String("provider"), os.Getenv("HERMES_PROVIDER"), cfg.Provider, "echo"),
		Model:       firstSet(e.c.String("model"), os.Getenv("HERMES_MODEL"), cfg.Model),
		BaseURL:     firstSet(e.c.String("base-url"), os.Getenv("HERMES_BASE_URL"), cfg.BaseURL),
		APIKey:      firstSet(os.Getenv("HERMES_API_KEY"), os.Getenv("OPENAI_API_KEY")),
		ExecCommand: firstSet(e.c.String("exec-command"), os.Getenv("HERMES_EXEC_COMMAND"), cfg.ExecCommand),
		Timeout:     timeout,
	}, nil
}

// newProvider makes the provider providerConfig resolves, and returns its
// settings too.
func newProvider(e *env, cfg profiles.Config) (provider.Provider, provider.Config, error) {
	pc, err := providerConfig(e, cfg)
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
with slash commands: /resume ID|TITLE|N, /sessions, /new, /title T,
/history [N], /exit (or Ctrl-D). Ctrl-C cancels the turn in flight.

The user message is stored (and synced) before the provider is called and the
reply after it: a crash or a provider error loses at most the reply.`,
		ArgsUsage: "[TITLE with -c]",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "query", Aliases: []string{"q"}, Usage: "the prompt: one turn, reply to stdout"},
			&cli.StringFlag{Name: "resume", Aliases: []string{"r"}, Usage: "continue the session with this id, id prefix or title"},
			&cli.BoolFlag{Name: "continue", Aliases: []string{"c"}, Usage: "continue the most recently active session (or the newest titled TITLE)"},
			&cli.StringFlag{Name: "title", Usage: "title of a new session"},
			&cli.StringFlag{Name: "system", Usage: "a system message to add before the prompt"},
			&cli.BoolFlag{Name: "interactive", Aliases: []string{"i"}, Usage: "line mode even when stdin is not a terminal"},
		}, providerFlags()...),
		Action: withEnv(chat),
	}
}

// chatter holds one chat: the store, the provider and the current session
// ("" until the first turn of a new session creates it).
type chatter struct {
	e         *env
	store     *fsstore.SessionStore
	prov      provider.Provider
	model     string
	sessionID string
	title     string // for the session the first turn creates
	system    string // a system message for the next turn
	stream    bool   // write the reply as it arrives
}

func chat(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	prov, pc, err := newProvider(e, cfg)
	if err != nil {
		return err
	}
	ch := &chatter{
		e:      e,
		store:  e.sessions(),
		prov:   prov,
		model:  pc.Model,
		title:  e.c.String("title"),
		system: e.c.String("system"),
	}
	if err := ch.pickSession(); err != nil {
		return err
	}
	interactive := e.c.Bool("interactive") || (!e.c.IsSet("query") && e.stdinIsTerminal())
	if interactive {
		if e.c.IsSet("query") {
			return usagef("-q and -i do not go together")
		}
		return ch.lineMode()
	}
	prompt := e.c.String("query")
	if !e.stdinIsTerminal() {
		piped, err := io.ReadAll(e.stdin)
		if err != nil {
			return err
		}
		// The piped text is sent as it is, but for its final line end:
		// leading indentation (code, a diff's context line) is kept.
		if s := strings.TrimRight(string(piped), "\r\n"); strings.TrimSpace(s) != "" {
			if strings.TrimSpace(prompt) == "" {
				prompt = s
			} else {
				prompt += "\n\n" + s
			}
		}
	}
	if strings.TrimSpace(prompt) == "" {
		return usagef("no prompt: give -q PROMPT or pipe it on stdin")
	}
	if !utf8.ValidString(prompt) {
		// Stored as JSON, a bad byte would silently become U+FFFD.
		return usagef("the prompt is not valid UTF-8 (convert it first, e.g. with iconv)")
	}
	ch.stream = !e.json && isTerminalWriter(e.stdout)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reply, err := ch.turn(ctx, prompt)
	if err != nil {
		if e.json && reply.SessionID != "" {
			// A script learns which session keeps its message.
			printJSON(e.stdout, map[string]string{"session_id": reply.SessionID, "error": err.Error()})
		}
		return err
	}
	return ch.printReply(reply)
}

func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// pickSession applies --resume and --continue. Neither: a new session,
// created by the first turn.
func (ch *chatter) pickSession() error {
	c := ch.e.c
	resume, cont := c.String("resume"), c.Bool("continue")
	switch {
	case resume != "" && cont:
		return usagef("--resume and --continue do not go together")
	case c.NArg() > 0 && !cont:
		return usagef("unexpected argument %q (a TITLE goes with -c)", c.Args().First())
	case c.NArg() > 1:
		return usagef("-c takes at most one TITLE")
	case resume != "":
		id, err := ch.store.Resolve(resume)
		if err != nil {
			return err
		}
		ch.sessionID = id
	case cont && c.NArg() == 1:
		title := c.Args().First()
		list, err := ch.store.List(fsstore.ListOptions{})
		if err != nil {
			return err
		}
		for _, s := range list {
			if s.Title == title {
				ch.sessionID = s.ID
				return nil
			}
		}
		return fmt.Errorf("%w: no session titled %q", fsstore.ErrNotFound, title)
	case cont:
		list, err := ch.store.List(fsstore.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return fmt.Errorf("%w: no session to continue", fsstore.ErrNotFound)
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
}

// turn stores the user message, calls the provider with the whole history,
// and stores the reply. An ended session is reopened first; a session
// interrupted by a restart gets a system note naming the reason before the
// user message, and becomes active again when the turn succeeds.
func (ch *chatter) turn(ctx context.Context, text string) (turnResult, error) {
	var pre []fsstore.Message
	if ch.sessionID == "" {
		sess, _, err := ch.store.Create(fsstore.Session{Title: ch.title, Source: "chat", Model: ch.model})
		if err != nil {
			return turnResult{}, err
		}
		ch.sessionID, ch.title = sess.ID, ""
	}
	sess, err := ch.store.Get(ch.sessionID)
	if err != nil {
		return turnResult{}, err
	}
	interrupted := sess.State == fsstore.StateResumePending || sess.State == fsstore.StateSuspended
	switch {
	case sess.State == fsstore.StateEnded:
		if _, err := ch.store.Reopen(sess.ID); err != nil {
			return turnResult{}, err
		}
	case interrupted:
		note := fsstore.ResumeNote(sess.ResumeReason)
		// A turn that failed after the note was stored left it there.
		noted, err := ch.notedSinceReply(sess.ID, note)
		if err != nil {
			return turnResult{}, err
		}
		if !noted {
			pre = append(pre, fsstore.Message{Role: "system", Content: fsstore.TextContent(note)})
		}
	}
	if ch.system != "" {
		pre = append(pre, fsstore.Message{Role: "system", Content: fsstore.TextContent(ch.system)})
		ch.system = ""
	}
	turn := append(pre, fsstore.Message{Role: "user", Content: fsstore.TextContent(text)})
	if _, err := ch.store.Append(sess.ID, turn); err != nil {
		return turnResult{}, err
	}
	ch.registerWithKanban(sess.ID)
	// The provider reads the history as a stream, from the transcript as
	// it stands now: a resume of a long session reaches the provider
	// without first reading all of it.
	req := provider.Request{SessionID: sess.ID, History: transcriptHistory{ch.store, sess.ID}}
	if ch.stream {
		req.Stream = ch.e.stdout
	}
	reply, err := ch.prov.Complete(ctx, req)
	if err != nil {
		return turnResult{SessionID: sess.ID}, fmt.Errorf("%w (session %s keeps your message; resume it with hermes chat --resume %s)", err, sess.ID, sess.ID)
	}
	n, err := ch.store.Append(sess.ID, reply.Messages)
	if err != nil {
		return turnResult{}, err
	}
	if interrupted {
		if _, err := ch.store.SetState(sess.ID, fsstore.StateActive, ""); err != nil {
			return turnResult{}, err
		}
	}
	return turnResult{SessionID: sess.ID, Reply: replyText(reply.Messages), MessageCount: n, Usage: reply.Usage}, nil
}

// transcriptHistory is a session's transcript as a provider.History: each
// walk reads the transcript as it stands, a line at a time.
type transcriptHistory struct {
	store *fsstore.SessionStore
	id    string
}

func (h transcriptHistory) Each(fn func(fsstore.Message) error) error {
	t, err := h.store.OpenTranscript(h.id)
	if err != nil {
		return err
	}
	defer t.Close()
	return t.Each(fn)
}

// notedSinceReply reports whether a system message saying note follows
// the last assistant message of session id.
func (ch *chatter) notedSinceReply(id, note string) (bool, error) {
	noted := false
	err := transcriptHistory{ch.store, id}.Each(func(m fsstore.Message) error {
		switch {
		case m.Role == "assistant":
			noted = false
		case m.Role == "system" && m.Text() == note:
			noted = true
		}
		return nil
	})
	return noted, err
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
	board := fsstore.NewBoard(profiles.Dir(ch.e.profile.Root, profile), ch.e.lockTimeout, ch.e.warn)
	if err := registerSession(board, w, sessionID); err != nil {
		ch.e.warn("kanban: " + err.Error())
	}
}

// replyText is the text of the last assistant message that has text.
func replyText(msgs []fsstore.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			if t := msgs[i].Text(); t != "" {
				return t
			}
		}
	}
	return ""
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
	var mu sync.Mutex
	var cancelTurn context.CancelFunc
	go func() {
		for range sigs {
			mu.Lock()
			if cancelTurn != nil {
				cancelTurn()
			} else {
				fmt.Fprintln(e.stderr, "\n(Ctrl-D or /exit to quit)")
			}
			mu.Unlock()
		}
	}()
	if ch.sessionID != "" {
		fmt.Fprintf(e.stderr, "hermes: resuming session %s\n", ch.sessionID)
	}
	fmt.Fprintln(e.stderr, "hermes: type a message; /help for commands, Ctrl-D to exit")
	in := bufio.NewReader(e.stdin)
	prompt := "> "
	if !e.stdinIsTerminal() {
		prompt = "" // lines come from a pipe: no prompt between them
	}
	var numbered []string
	for {
		fmt.Fprint(e.stderr, prompt)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
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
			done, err := ch.slash(line, &numbered)
			if done {
				return nil
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "hermes: %v\n", err)
			}
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		cancelTurn = cancel
		mu.Unlock()
		r, err := ch.turn(ctx, line)
		mu.Lock()
		cancelTurn = nil
		mu.Unlock()
		cancel()
		if err != nil {
			fmt.Fprintf(e.stderr, "hermes: %v\n", err)
			continue
		}
		if err := ch.printReply(r); err != nil {
			return err
		}
	}
}

const lineModeHelp = `/resume ID|TITLE|N  continue another session (N from /sessions); ends this one
/sessions           the 10 most recent sessions, numbered
/new                start a new session
/title T            set this session's title
/history [N]        the last N messages (default 10)
/exit               quit (or Ctrl-D)`

// slash runs a line-mode command. done means the loop should end.
func (ch *chatter) slash(line string, numbered *[]string) (done bool, err error) {
	e := ch.e
	verb, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch verb {
	case "/exit", "/quit":
		return true, nil
	case "/help":
		fmt.Fprintln(e.stdout, lineModeHelp)
	case "/sessions":
		list, err := ch.store.List(fsstore.ListOptions{Limit: 10})
		if err != nil {
			return false, err
		}
		*numbered = (*numbered)[:0]
		tb := newTable(e.stdout, "N", "ID", "TITLE", "MSGS", "LAST ACTIVITY")
		for i, s := range list {
			*numbered = append(*numbered, s.ID)
			tb.row(i+1, s.ID, dash(s.Title), s.MessageCount, shortTime(s.UpdatedAt))
		}
		return false, tb.flush()
	case "/resume":
		if arg == "" {
			return false, errors.New("/resume needs ID, TITLE or N")
		}
		id := ""
		if n, err := strconv.Atoi(arg); err == nil && n < 1000 {
			// A small number is a line of the last /sessions listing, never
			// an id prefix.
			if n < 1 || n > len(*numbered) {
				return false, fmt.Errorf("no session %d in the last /sessions listing", n)
			}
			id = (*numbered)[n-1]
		} else if id, err = ch.store.Resolve(arg); err != nil {
			return false, err
		}
		if ch.sessionID != "" && ch.sessionID != id {
			if _, err := ch.store.End(ch.sessionID, "resumed_other"); err != nil {
				return false, err
			}
		}
		ch.sessionID = id
		sess, err := ch.store.Get(id)
		if err != nil {
			return false, err
		}
		fmt.Fprintf(e.stderr, "hermes: resumed session %s (%s, %d messages)\n", id, dash(sess.Title), sess.MessageCount)
	case "/new":
		ch.sessionID, ch.title = "", ""
		fmt.Fprintln(e.stderr, "hermes: new session (created by your next message)")
	case "/title":
		if arg == "" {
			return false, errors.New("/title needs a title")
		}
		if ch.sessionID == "" {
			if err := fsstore.CheckTitle(arg); err != nil {
				return false, err
			}
			ch.title = arg
			return false, nil
		}
		_, err := ch.store.Rename(ch.sessionID, arg)
		return false, err
	case "/history":
		n := 10
		if arg != "" {
			v, err := strconv.Atoi(arg)
			if err != nil || v < 1 {
				return false, fmt.Errorf("/history takes a positive number, not %q", arg)
			}
			n = v
		}
		if ch.sessionID == "" {
			return false, nil
		}
		msgs, err := ch.store.Messages(ch.sessionID)
		if err != nil {
			return false, err
		}
		for _, m := range msgs[max(0, len(msgs)-n):] {
			fmt.Fprintf(e.stdout, "[%d] %s: ", m.Seq, m.Role)
			writeMessageBody(e.stdout, m)
		}
	default:
		return false, fmt.Errorf("unknown command %s (/help lists them)", verb)
	}
	return false, nil
}
