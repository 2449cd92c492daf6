package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/profiles"
)

func sessionsForkCommand() *cli.Command {
	return &cli.Command{
		Name:  "fork",
		Usage: "make a new session whose history is the first SEQ messages of ID; ID is not touched",
		Description: `The new session's transcript is a byte-for-byte copy of ID's first SEQ lines
(all of them by default), each keeping its seq and ts; its document has
parent_session_id ID and fork_seq SEQ. It prints the new session's id. A chat
resumes it like any other (hermes chat --resume NEW). --code takes back too the
file changes recorded after message SEQ, as sessions rewind --code does.`,
		ArgsUsage: "ID|PREFIX|TITLE",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "at", Usage: "the fork point: the new session holds messages 1 to `SEQ`", DefaultText: "all"},
			&cli.StringFlag{Name: "title", Usage: "a title for the new session, unique in the profile"},
			&cli.BoolFlag{Name: "code", Usage: "take back too the file changes ID recorded after message SEQ (hermes checkpoints), recorded in ID; exit 4 if a file was left"},
			&cli.BoolFlag{Name: "force", Usage: "with --code: restore files changed since the agent's last change too, after storing their present bytes"},
		},
		Action: withEnv(sessionsFork),
	}
}

func sessionsFork(e *env) error {
	ref, err := oneArg(e.c, "session ID")
	if err != nil {
		return err
	}
	if e.c.IsSet("at") && e.c.Int64("at") < 1 {
		return usagef("--at must be 1 or more (a new session without history: hermes sessions new)")
	}
	id, err := e.resolveSession(ref)
	if err != nil {
		return err
	}
	if e.c.Bool("force") && !e.c.Bool("code") {
		return usagef("--force goes with --code")
	}
	child, err := e.sessions().Fork(id, e.c.Int64("at"), e.c.String("title"))
	if err != nil {
		return err
	}
	if e.json {
		err = printJSON(e.stdout, child)
	} else {
		_, err = fmt.Fprintln(e.stdout, child.ID)
	}
	if err != nil || !e.c.Bool("code") {
		return err
	}
	recs, _, err := sessionRecords(e.sessions(), id)
	if err != nil {
		return err
	}
	text := fmt.Sprintf("The files were restored to their state after message %d (hermes sessions fork --code); the conversation went on in session %s.", child.ForkSeq, child.ID)
	return restoreFiles(e, id, checkpoints.After(recs, child.ForkSeq+1), text, e.c.Bool("force"), false)
}

func sessionsCompressCommand() *cli.Command {
	return &cli.Command{
		Name:  "compress",
		Usage: "continue a session in a new one that starts with a summary of it and keeps its last turns",
		Description: `The provider (the flags of chat) summarises the history but for its last
turns: at least --keep messages, cut where a turn starts, so that a tool call
keeps its result. The new session holds the summary as a system message, then
those turns as they are, with parent_session_id ID; ID ends with reason
compression and names it in compressed_into. It prints the new session's id.
chat -c and chat --resume ID follow the chain to its newest session.`,
		ArgsUsage: "ID|PREFIX|TITLE",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "keep", Value: agent.DefaultKeep, Usage: "how many of the last messages to keep as they are (whole turns)"},
		}, providerFlags()...),
		Action: withEnv(sessionsCompress),
	}
}

func sessionsCompress(e *env) error {
	ref, err := oneArg(e.c, "session ID")
	if err != nil {
		return err
	}
	if e.c.Int("keep") < 1 {
		return usagef("--keep must be 1 or more")
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	prov, _, err := newProvider(e, cfg)
	if err != nil {
		return err
	}
	store := e.sessions()
	id, err := store.Resolve(ref)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hookSet, err := hooks.New("hooks", cfg.Hooks)
	if err != nil {
		return err
	}
	engine := &agent.Engine{Sessions: store, Provider: prov, Hooks: hookSet, Warn: e.warn}
	c, err := engine.Compress(ctx, id, e.c.Int("keep"))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "hermes: %s\n", compressedText(c))
	if e.json {
		return printJSON(e.stdout, c.Child)
	}
	fmt.Fprintln(e.stdout, c.Child.ID)
	return nil
}

// compressedText says what a compression did.
func compressedText(c agent.Compression) string {
	return fmt.Sprintf("session %s compressed into %s: messages 1 to %d summarised, the last %d kept; %s is ended and kept as it was (hermes sessions show %s)",
		c.Parent, c.Child.ID, c.Summarised, c.Kept, c.Parent, c.Parent)
}

// compressAt is agent.compress_at: compress a chat's session before a turn
// once its history reaches messages, or tokens (estimated; see passed).
// Both zero: never.
type compressAt struct {
	messages int64
	tokens   int64
}

// parseCompressAt reads agent.compress_at and agent.context_tokens. A
// number of messages that a compression could never act on is refused.
func parseCompressAt(cfg profiles.Config) (compressAt, error) {
	v := strings.TrimSpace(cfg.Agent.CompressAt)
	if v == "" {
		return compressAt{}, nil
	}
	if cfg.Agent.ContextTokens < 0 {
		return compressAt{}, fsstore.Invalidf("agent.context_tokens must be positive, not %d", cfg.Agent.ContextTokens)
	}
	if !strings.Contains(v, ".") {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return compressAt{}, fsstore.Invalidf("agent.compress_at must be a number of messages (200) or a fraction of agent.context_tokens (0.8), not %q", v)
		}
		if n <= agent.DefaultKeep {
			// A compression keeps that many messages: a history no longer
			// has nothing before them to summarise.
			return compressAt{}, fsstore.Invalidf("agent.compress_at %d is not above the %d messages a compression keeps, so it would never compress: set it above %d", n, agent.DefaultKeep, agent.DefaultKeep)
		}
		return compressAt{messages: n}, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 || f > 1 {
		return compressAt{}, fsstore.Invalidf("agent.compress_at must be a number of messages (200) or a fraction of agent.context_tokens (0.8), not %q", v)
	}
	if cfg.Agent.ContextTokens == 0 {
		return compressAt{}, fsstore.Invalidf("agent.compress_at %s is a fraction of the model's context: set agent.context_tokens", v)
	}
	return compressAt{tokens: int64(f * float64(cfg.Agent.ContextTokens))}, nil
}

// bytesPerToken is how a history's tokens are estimated from its
// transcript's size: about four bytes of English text a token, which the
// JSON around each message makes an overestimate, so a compression comes
// early rather than late.
const bytesPerToken = 4

// passed says why sess's history has reached the threshold, or "" if it
// has not.
func (c compressAt) passed(store *sessions.Store, sess sessions.Session) (string, error) {
	if c.messages > 0 && sess.MessageCount >= c.messages {
		return fmt.Sprintf("%d messages, agent.compress_at %d", sess.MessageCount, c.messages), nil
	}
	if c.tokens > 0 {
		size, err := store.TranscriptSize(sess.ID)
		if err != nil {
			return "", err
		}
		if size/bytesPerToken >= c.tokens {
			return fmt.Sprintf("about %d tokens, agent.compress_at %d", size/bytesPerToken, c.tokens), nil
		}
	}
	return "", nil
}

// showChain adds the compression chain of id, oldest first, to a session's
// table, when id is in one.
func showChain(tb *table, store *sessions.Store, id string) error {
	chain, err := store.Chain(id)
	if err != nil || len(chain) < 2 {
		return err
	}
	for i, c := range chain {
		if c == id {
			chain[i] = c + " (this one)"
		}
	}
	tb.row("chain:", strings.Join(chain, " -> "))
	return nil
}

func sessionsRewindCommand() *cli.Command {
	return &cli.Command{
		Name:  "rewind",
		Usage: "take a session back to the state just before one of its user messages: its files, its conversation, or both",
		Description: `--to SEQ is a user message's seq (hermes sessions show ID). --code takes back
the file changes recorded after it (hermes checkpoints), as checkpoints restore
does: a file changed since the agent's last change is a conflict, listed on
stderr and left (exit 4), unless --force; the restore is recorded in a note of
the session. --conversation forks ID before that message (ID is not touched)
and prints the new session's id. --both does both; the restore is recorded in
ID, whose history holds the changes it took back.`,
		ArgsUsage: "ID|PREFIX|TITLE",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "to", Usage: "the seq of the user message to go back to, just before it was sent", Required: true},
			&cli.BoolFlag{Name: "code", Usage: "take back the files"},
			&cli.BoolFlag{Name: "conversation", Usage: "fork the conversation before the message"},
			&cli.BoolFlag{Name: "both", Usage: "--code and --conversation"},
			&cli.BoolFlag{Name: "force", Usage: "restore files changed since the agent's last change too, after storing their present bytes"},
			&cli.BoolFlag{Name: "dry-run", Usage: "say what would be restored, change nothing"},
		},
		Action: withEnv(sessionsRewind),
	}
}

func sessionsRewind(e *env) error {
	ref, err := oneArg(e.c, "session ID")
	if err != nil {
		return err
	}
	code := e.c.Bool("code") || e.c.Bool("both")
	conv := e.c.Bool("conversation") || e.c.Bool("both")
	n := 0
	for _, f := range []string{"code", "conversation", "both"} {
		if e.c.Bool(f) {
			n++
		}
	}
	if n != 1 {
		return usagef("give one of --code, --conversation and --both")
	}
	seq := e.c.Int64("to")
	id, err := e.resolveSession(ref)
	if err != nil {
		return err
	}
	st := e.sessions()
	recs, msgs, err := sessionRecords(st, id)
	if err != nil {
		return err
	}
	if seq < 1 || seq > int64(len(msgs)) {
		return fsstore.NotFoundf("session %s has no message %d (it has %d)", id, seq, len(msgs))
	}
	if m := msgs[seq-1]; m.Role != "user" {
		return usagef("message %d of session %s is a message of role %s, not a user message: --to takes a user message's seq (hermes sessions show %s)", seq, id, m.Role, id)
	}
	if conv && seq == 1 {
		return usagef("message 1 is the session's first: a conversation before it is empty (hermes chat starts a new session)")
	}
	// The restore is recorded in id, whose history holds the changes it
	// takes back: the fork's history ends before them.
	child := ""
	if conv && !e.c.Bool("dry-run") {
		fork, err := st.Fork(id, seq-1, "")
		if err != nil {
			return err
		}
		child = fork.ID
		if e.json {
			if err := printJSON(e.stdout, fork); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(e.stdout, fork.ID)
		}
		fmt.Fprintf(e.stderr, "hermes: session %s holds the conversation of %s before message %d\n", fork.ID, id, seq)
	}
	if !code {
		return nil
	}
	text := fmt.Sprintf("The files were restored to their state before message %d (hermes sessions rewind).", seq)
	if child != "" {
		text = fmt.Sprintf("The files were restored to their state before message %d (hermes sessions rewind); the conversation went on in session %s.", seq, child)
	}
	return restoreFiles(e, id, checkpoints.After(recs, seq), text, e.c.Bool("force"), e.c.Bool("dry-run"))
}
