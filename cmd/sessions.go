package cmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/gateway"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/profiles"
)

func sessionsCommand() *cli.Command {
	yes := &cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"}
	return &cli.Command{
		Name:  "sessions",
		Usage: "agent conversations and their transcripts",
		Subcommands: []*cli.Command{
			{
				Name:      "new",
				Usage:     "create a session and print its id",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "title", Usage: "a title, unique in the profile"},
					&cli.StringFlag{Name: "source", Value: "cli", Usage: "where the session comes from"},
					&cli.StringFlag{Name: "model", Usage: "the model it talks to"},
					&cli.StringFlag{Name: "id", Usage: "create with this id (a no-op if it exists)"},
				},
				Action: withEnv(sessionsNew),
			},
			{
				Name:      "append",
				Usage:     "append messages (JSONL on stdin, or --role and --content) and print the message count",
				ArgsUsage: "ID|PREFIX|TITLE",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "role", Usage: "role of a single message: user, assistant, system, tool"},
					&cli.StringFlag{Name: "content", Usage: "text of a single message"},
					&cli.StringFlag{Name: "key", Aliases: []string{"idempotency-key"}, Usage: "an idempotency key (as kanban create's): the messages are stored once for it, however often the command is run"},
				},
				Action: withEnv(sessionsAppend),
			},
			{
				Name:      "save",
				Usage:     "write the whole transcript (JSONL on stdin); refused if it would shorten or rewrite history",
				ArgsUsage: "ID|PREFIX|TITLE",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "force", Usage: "replace a transcript the write does not extend, keeping the old one beside it"},
				},
				Action: withEnv(sessionsSave),
			},
			{
				Name:      "show",
				Usage:     "print a session and its messages",
				ArgsUsage: "ID|PREFIX|TITLE",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "then print each message as it is stored, until the session ends (a sub-agent's, once it has answered) or Ctrl-C"},
				},
				Action: withEnv(sessionsShow),
			},
			{
				Name:      "export",
				Usage:     "stream sessions as JSONL (one session a line), JSON or Markdown",
				ArgsUsage: "ID|PREFIX|TITLE",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "all", Usage: "every session of the profile"},
					&cli.StringFlag{Name: "format", Value: "jsonl", Usage: "jsonl, json or md"},
				},
				Action: withEnv(sessionsExport),
			},
			{
				Name:      "list",
				Usage:     "sessions by most recent activity",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "limit", Value: 20, Usage: "at most this many (0: all)"},
					&cli.StringFlag{Name: "source", Usage: "only this source"},
					&cli.StringFlag{Name: "state", Usage: "only this state: active, ended, suspended, resume_pending"},
					&cli.BoolFlag{Name: "usage", Usage: "add each session's tokens and cost (hermes usage session)"},
					&cli.StringFlag{Name: "sort", Value: "activity", Usage: "activity, or cost: the costliest first (implies --usage)"},
					&cli.StringFlag{Name: "parent", Usage: "only the children of this session (ID, prefix or title): its sub-agents, forks and compressions"},
				},
				Action: withEnv(sessionsList),
			},
			{
				Name:      "tree",
				Usage:     "a session and its descendants (sub-agents, forks, compressions), each under its parent",
				ArgsUsage: "ID|PREFIX|TITLE",
				Action:    withEnv(sessionsTree),
			},
			{
				Name:      "search",
				Usage:     "find messages containing QUERY (case-insensitive)",
				ArgsUsage: "QUERY",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many matches (0: all)"},
				},
				Action: withEnv(sessionsSearch),
			},
			{
				Name:      "rename",
				Usage:     "set a session's title (unique in the profile)",
				ArgsUsage: "ID|PREFIX|TITLE NEW_TITLE",
				Action:    withEnv(sessionsRename),
			},
			{
				Name:      "end",
				Usage:     "end a session (the first reason stays)",
				ArgsUsage: "ID|PREFIX|TITLE",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "reason", Value: "user", Usage: "why it ended"}},
				Action:    withEnv(sessionsEnd),
			},
			{
				Name:      "reopen",
				Usage:     "make an ended session active again",
				ArgsUsage: "ID|PREFIX|TITLE",
				Action:    withEnv(sessionsReopen),
			},
			{
				Name:      "delete",
				Usage:     "delete an ended session and its files",
				ArgsUsage: "ID|PREFIX|TITLE",
				Flags:     []cli.Flag{yes, &cli.BoolFlag{Name: "dry-run", Usage: "say what would be removed, remove nothing"}},
				Action:    withEnv(sessionsDelete),
			},
			{
				Name:      "prune",
				Usage:     "delete ended sessions whose last activity is older than a duration",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "older-than", Usage: "e.g. 90d, 12h (default: retention.sessions in config.yaml)"},
					&cli.StringFlag{Name: "source", Usage: "only this source"},
					&cli.BoolFlag{Name: "dry-run", Usage: "list what would be removed, remove nothing"},
					yes,
				},
				Action: withEnv(sessionsPrune),
			},
			sessionsImportCommand(),
			sessionsBrowseCommand(),
			sessionsForkCommand(),
			sessionsRewindCommand(),
			sessionsCompressCommand(),
			{
				Name:  "stats",
				Usage: "counts by state and source, messages, bytes of the transcripts",
				Description: "The counts come from the activity catalog, one file. bytes is the transcripts' size:\n" +
					"documents, locks and copies kept aside are not counted (du -sb gives those).",
				ArgsUsage: " ",
				Action:    withEnv(sessionsStats),
			},
		},
	}
}

// withEnv resolves the global flags before running an action.
func withEnv(fn func(*env) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		e, err := newEnv(c)
		if err != nil {
			return err
		}
		timeout := e.fsTimeout
		if c.App.Metadata[fsWatchedKey] != nil {
			timeout = 0 // the watched child: the whole command is watched (fschild.go)
		}
		return watchFS(e.profile.Dir(), timeout, func() error {
			e.warnNetFS()
			return fn(e)
		})
	}
}

// resolveSession turns what a user typed into a session id.
func (e *env) resolveSession(ref string) (string, error) {
	return e.sessions().Resolve(ref)
}

// sessionArg resolves the one positional argument of a verb that takes
// ID|PREFIX|TITLE.
func (e *env) sessionArg() (string, error) {
	ref, err := oneArg(e.c, "session ID")
	if err != nil {
		return "", err
	}
	return e.resolveSession(ref)
}

func sessionsNew(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("new takes no arguments (use --title)")
	}
	sess, _, err := e.sessions().Create(sessions.Session{
		ID:     e.c.String("id"),
		Title:  e.c.String("title"),
		Source: e.c.String("source"),
		Model:  e.c.String("model"),
	})
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, sess)
	}
	fmt.Fprintln(e.stdout, sess.ID)
	return nil
}

// readMessages reads chat messages as JSONL from r: blank lines skipped,
// every line checked before anything is written.
func readMessages(r io.Reader) ([]sessions.Message, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var msgs []sessions.Message
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			// JSON is UTF-8 (RFC 8259); the decoder would silently turn
			// a bad byte into U+FFFD, so the stored content would not be
			// what was sent.
			if !utf8.Valid(line) {
				return nil, fsstore.Invalidf("stdin line %d is not valid UTF-8", n)
			}
			m, perr := sessions.ParseMessage(line)
			if perr != nil {
				return nil, fmt.Errorf("stdin line %d: %w", n, perr)
			}
			// A raw value keeps the escape as sent, where the decoder
			// reads it as U+FFFD.
			if at := fsstore.LoneSurrogate(line); at >= 0 {
				return nil, fsstore.Invalidf("stdin line %d: %s at offset %d is a lone surrogate escape (half of a UTF-16 pair), which is not Unicode", n, line[at:at+6], at)
			}
			msgs = append(msgs, m)
		}
		if err == io.EOF {
			return msgs, nil
		}
	}
}

func sessionsAppend(e *env) error {
	ref, err := oneArg(e.c, "session ID")
	if err != nil {
		return err
	}
	var msgs []sessions.Message
	if role := e.c.String("role"); role != "" || e.c.IsSet("content") {
		if !e.c.IsSet("content") {
			return usagef("--role needs --content")
		}
		if role == "" {
			role = "user"
		}
		m := sessions.Message{Role: role, Content: sessions.TextContent(e.c.String("content"))}
		line, _ := m.MarshalJSON()
		if _, err := sessions.ParseMessage(line); err != nil {
			return err
		}
		msgs = append(msgs, m)
	} else {
		if e.stdinIsTerminal() {
			return usagef("append reads JSONL messages on stdin, or takes --role and --content")
		}
		cfg, err := e.config()
		if err != nil {
			return err
		}
		limit, err := maxLineSetting(cfg)
		if err != nil {
			return err
		}
		if msgs, err = readMessages(limitLines(e.stdin, "stdin", limit)); err != nil {
			return err
		}
		if len(msgs) == 0 {
			return usagef("no messages on stdin")
		}
	}
	key := e.c.String("key")
	if e.c.IsSet("key") && (key == "" || len(key) > maxAppendKey) {
		return usagef("--key must be 1 to %d bytes", maxAppendKey)
	}
	id, err := e.resolveSession(ref)
	if err != nil {
		return err
	}
	var n int64
	appended := len(msgs)
	if key != "" {
		var again bool
		n, again, err = e.sessions().AppendKeyed(id, key, msgs, appendKeys{e.gatewayStore()})
		if again {
			appended = 0
		} else if err == nil {
			e.gatewayStore().SweepKeys(gateway.KeyLifetime)
		}
	} else {
		n, err = e.sessions().Append(id, msgs)
	}
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, map[string]any{"session_id": id, "appended": appended, "message_count": n})
	}
	fmt.Fprintln(e.stdout, n)
	return nil
}

// maxAppendKey is the longest key of sessions append --key, as the
// gateway's Idempotency-Key.
const maxAppendKey = 256

// appendKeys keeps the keys of sessions append --key with the gateway's
// Idempotency-Key records (the same record, synced, pruned after a day by
// the gateway), named apart from them by a prefix that no header holds.
type appendKeys struct{ st *gatewaystate.Store }

const appendKeyPrefix = "sessions append\x00"

func (k appendKeys) GetKey(key string) (sessions.KeyRecord, bool, error) {
	rec, err := k.st.GetKey(appendKeyPrefix + key)
	if errors.Is(err, fsstore.ErrNotFound) {
		return sessions.KeyRecord{}, false, nil
	}
	if err != nil {
		return sessions.KeyRecord{}, false, err
	}
	return sessions.KeyRecord{SessionID: rec.SessionID, Digest: rec.RequestSHA256, From: rec.From, To: rec.To}, true, nil
}

func (k appendKeys) PutKey(key string, r sessions.KeyRecord) error {
	return k.st.PutKey(gatewaystate.Key{KeySHA256: gatewaystate.KeyDigest(appendKeyPrefix + key), RequestSHA256: r.Digest,
		SessionID: r.SessionID, From: r.From, To: r.To})
}

func sessionsSave(e *env) error {
	ref, err := oneArg(e.c, "session ID")
	if err != nil {
		return err
	}
	if e.stdinIsTerminal() {
		return usagef("save reads the whole transcript as JSONL on stdin")
	}
	msgs, err := readMessages(e.stdin)
	if err != nil {
		return err
	}
	id, err := e.resolveSession(ref)
	if err != nil {
		return err
	}
	res, err := e.sessions().Save(id, msgs, e.c.Bool("force"))
	if err != nil {
		return err
	}
	if res.Replaced != "" {
		e.warn(fmt.Sprintf("replaced transcript of session %s; the old one is kept at %s", id, res.Replaced))
	}
	if e.json {
		return printJSON(e.stdout, struct {
			SessionID string `json:"session_id"`
			sessions.SaveResult
		}{id, res})
	}
	fmt.Fprintln(e.stdout, res.Count)
	return nil
}

func sessionsShow(e *env) error {
	id, err := e.sessionArg()
	if err != nil {
		return err
	}
	store := e.sessions()
	sess, err := store.Inspect(id)
	if err != nil {
		return err
	}
	if sess.Damaged != "" {
		e.warn(fmt.Sprintf("session %s: %s", id, sess.Damaged))
	}
	if e.json {
		if e.c.Bool("follow") {
			return usagef("--follow prints for people: without --json")
		}
		return exportSessions(e, []string{id}, "json")
	}
	t, err := store.OpenTranscript(id)
	if err != nil {
		return err
	}
	defer t.Close()
	w := bufferedOut(e.stdout)
	tb := newTable(w)
	tb.row("id:", sess.ID)
	tb.row("title:", sess.Title)
	tb.row("state:", stateWithReason(sess))
	tb.row("source:", sess.Source)
	if sess.Model != "" {
		tb.row("model:", sess.Model)
	}
	if sess.ParentSessionID != "" {
		tb.row("parent:", sess.ParentSessionID)
	}
	if d := sess.Delegation; d != nil {
		tb.row("delegated by:", fmt.Sprintf("task %d of call %s (depth %d)", d.TaskIndex+1, d.ToolCallID, d.Depth))
	}
	if sess.ForkSeq > 0 {
		tb.row("fork point:", fmt.Sprintf("message %d of %s", sess.ForkSeq, sess.ParentSessionID))
	}
	if sess.Damaged == "" {
		if err := showChain(tb, store, id); err != nil {
			return err
		}
	}
	tb.row("created:", sess.CreatedAt)
	tb.row("updated:", sess.UpdatedAt)
	tb.row("messages:", sess.MessageCount)
	if sess.Damaged == "" { // its usage is its document's session's: repaired first
		if err := showUsage(e, tb, store, id); err != nil {
			return err
		}
	}
	tb.flush()
	var last int64
	printMessage := func(m sessions.Message) error {
		fmt.Fprintf(w, "\n[%d] %s  %s\n", m.Seq, m.Role, m.TS)
		writeMessageBody(w, m)
		last = m.Seq
		return nil
	}
	err = t.Each(printMessage)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil || !e.c.Bool("follow") {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = store.Follow(ctx, id, last, func(m sessions.Message) error {
		printMessage(m)
		return w.Flush()
	})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func stateWithReason(s sessions.Session) string {
	switch {
	case s.Damaged != "":
		return "damaged"
	case s.State == sessions.StateEnded && s.EndReason != "":
		return s.State + " (" + s.EndReason + ")"
	case s.State == sessions.StateResumePending && s.ResumeReason != "":
		return s.State + " (" + s.ResumeReason + ")"
	}
	return s.State
}

// writeMessageBody prints a message's text, tool calls and tool call id
// for people.
func writeMessageBody(w io.Writer, m sessions.Message) {
	if text := m.Text(); text != "" {
		fmt.Fprintln(w, text)
	}
	if m.ToolCallID != "" {
		fmt.Fprintf(w, "(result of tool call %s)\n", m.ToolCallID)
	}
	if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
		fmt.Fprintf(w, "tool calls: %s\n", m.ToolCalls)
	}
}

func sessionsExport(e *env) error {
	format := e.c.String("format")
	switch format {
	case "jsonl", "json", "md":
	default:
		return usagef("unknown --format %q (jsonl, json or md)", format)
	}
	var ids []string
	switch {
	case e.c.Bool("all") && e.c.NArg() > 0:
		return usagef("give an ID or --all, not both")
	case e.c.Bool("all"):
		all, err := e.sessions().IDs()
		if err != nil {
			return err
		}
		ids = all
	default:
		ref, err := oneArg(e.c, "session ID (or --all)")
		if err != nil {
			return err
		}
		id, err := e.resolveSession(ref)
		if err != nil {
			return err
		}
		ids = []string{id}
	}
	if format == "json" && e.c.Bool("all") {
		return exportArray(e, ids)
	}
	return exportSessions(e, ids, format)
}

// exportSessions streams each session in format. jsonl and json write the
// document's fields plus "messages", one session a line; md writes
// Markdown. Memory stays at one message whatever the transcript's size.
func exportSessions(e *env, ids []string, format string) error {
	w := bufferedOut(e.stdout)
	store := e.sessions()
	for _, id := range ids {
		var err error
		if format == "md" {
			err = exportMarkdown(w, store, id)
		} else {
			err = exportJSON(w, store, id)
			w.WriteByte('\n')
		}
		if err != nil {
			w.Flush()
			return err
		}
	}
	return w.Flush()
}

// exportArray writes the sessions as one JSON array.
func exportArray(e *env, ids []string) error {
	w := bufferedOut(e.stdout)
	store := e.sessions()
	w.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			w.WriteByte(',')
		}
		if err := exportJSON(w, store, id); err != nil {
			w.Flush()
			return err
		}
	}
	w.WriteString("]\n")
	return w.Flush()
}

func exportJSON(w *bufio.Writer, store *sessions.Store, id string) error {
	sess, err := store.Inspect(id)
	if err != nil {
		return err
	}
	t, err := store.OpenTranscript(id)
	if err != nil {
		return err
	}
	defer t.Close()
	head, err := jsonObjectOpen(sess)
	if err != nil {
		return err
	}
	w.Write(head)
	w.WriteString(`,"messages":[`)
	first := true
	err = t.EachLine(func(line []byte) error {
		if !first {
			w.WriteByte(',')
		}
		first = false
		_, err := w.Write(line)
		return err
	})
	w.WriteString("]}")
	return err
}

func exportMarkdown(w *bufio.Writer, store *sessions.Store, id string) error {
	sess, err := store.Get(id)
	if err != nil {
		return err
	}
	t, err := store.OpenTranscript(id)
	if err != nil {
		return err
	}
	defer t.Close()
	title := sess.Title
	if title == "" {
		title = sess.ID
	}
	fmt.Fprintf(w, "# %s\n\n- id: `%s`\n- source: %s\n- state: %s\n- created: %s\n- updated: %s\n- messages: %d\n",
		title, sess.ID, sess.Source, stateWithReason(sess), sess.CreatedAt, sess.UpdatedAt, sess.MessageCount)
	err = t.Each(func(m sessions.Message) error {
		fmt.Fprintf(w, "\n## %d. %s\n\n", m.Seq, m.Role)
		if m.ToolCallID != "" {
			fmt.Fprintf(w, "_result of tool call `%s`_\n\n", m.ToolCallID)
		}
		if text := m.Text(); text != "" {
			fmt.Fprintf(w, "%s\n", text)
		}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			fmt.Fprintf(w, "\n```json\n%s\n```\n", m.ToolCalls)
		}
		return nil
	})
	w.WriteString("\n")
	return err
}

func sessionsList(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("list takes no arguments")
	}
	if st := e.c.String("state"); st != "" && !validState(st) {
		return usagef("unknown --state %q (active, ended, suspended, resume_pending)", st)
	}
	if e.c.Int("limit") < 0 {
		return usagef("--limit must be 0 or more")
	}
	if e.c.Bool("usage") || e.c.String("sort") != "activity" {
		return sessionsListUsage(e)
	}
	parent, err := listParent(e)
	if err != nil {
		return err
	}
	list, err := e.sessions().List(sessions.ListOptions{
		Limit:  e.c.Int("limit"),
		Source: e.c.String("source"),
		State:  e.c.String("state"),
		Parent: parent,
	})
	if err != nil {
		return err
	}
	if e.json {
		w := bufferedOut(e.stdout)
		for _, s := range list {
			printJSON(w, s)
		}
		return w.Flush()
	}
	tb := newTable(e.stdout, "ID", "TITLE", "STATE", "MSGS", "LAST ACTIVITY", "PREVIEW")
	for _, s := range list {
		state := s.State
		if s.Damaged != "" {
			state = "damaged"
		}
		tb.row(s.ID, dash(s.Title), state, s.MessageCount, shortTime(s.UpdatedAt), dash(s.Preview))
	}
	return tb.flush()
}

func validState(s string) bool {
	switch s {
	case sessions.StateActive, sessions.StateEnded, sessions.StateSuspended, sessions.StateResumePending:
		return true
	}
	return false
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortTime shows a record timestamp to the second, in UTC.
func shortTime(ts fsstore.Time) string {
	t, err := ts.Instant()
	if err != nil {
		return string(ts)
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func sessionsSearch(e *env) error {
	query, err := oneArg(e.c, "QUERY")
	if err != nil {
		return err
	}
	if e.c.Int("limit") < 0 {
		return usagef("--limit must be 0 or more")
	}
	hits, err := e.sessions().Search(query, e.c.Int("limit"))
	if err != nil {
		return err
	}
	if e.json {
		w := bufferedOut(e.stdout)
		for _, h := range hits {
			printJSON(w, h)
		}
		return w.Flush()
	}
	tb := newTable(e.stdout, "SESSION", "TITLE", "SEQ", "SNIPPET")
	for _, h := range hits {
		tb.row(h.SessionID, dash(h.Title), h.Seq, h.Snippet)
	}
	return tb.flush()
}

func sessionsRename(e *env) error {
	if e.c.NArg() != 2 {
		return usagef("rename takes ID and TITLE")
	}
	id, err := e.resolveSession(e.c.Args().Get(0))
	if err != nil {
		return err
	}
	sess, err := e.sessions().Rename(id, e.c.Args().Get(1))
	return printSession(e, sess, err)
}

func printSession(e *env, sess sessions.Session, err error) error {
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, sess)
	}
	fmt.Fprintln(e.stdout, sess.ID)
	return nil
}

func sessionsEnd(e *env) error {
	id, err := e.sessionArg()
	if err != nil {
		return err
	}
	sess, err := e.sessions().End(id, e.c.String("reason"))
	return printSession(e, sess, err)
}

func sessionsReopen(e *env) error {
	id, err := e.sessionArg()
	if err != nil {
		return err
	}
	sess, err := e.sessions().Reopen(id)
	return printSession(e, sess, err)
}

func sessionsDelete(e *env) error {
	id, err := e.sessionArg()
	if err != nil {
		return err
	}
	store := e.sessions()
	dry := e.c.Bool("dry-run")
	if !dry {
		// Check the session's state before asking, so that a refusal is not
		// preceded by a question.
		if _, err := store.Delete(id, true); err != nil {
			return err
		}
		if err := e.confirm(e.c.Bool("yes"), fmt.Sprintf("delete session %s", id)); err != nil {
			return err
		}
	}
	r, err := store.Delete(id, dry)
	if err != nil {
		return err
	}
	if !dry {
		pruneOrphans(e)
		forgetClaims(e, []sessions.Removal{r})
	}
	return printRemovals(e, []sessions.Removal{r}, dry)
}

// forgetClaims removes the sub-agent claims of the sessions removed
// (subagents.Store.Forget); one that cannot be removed is warned of.
func forgetClaims(e *env, rs []sessions.Removal) {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.SessionID
	}
	if err := subagentStore(e).Forget(ids...); err != nil {
		e.warn(fmt.Sprintf("sub-agent claims of removed sessions are left: %v", err))
	}
}

func printRemovals(e *env, rs []sessions.Removal, dry bool) error {
	if e.json {
		for _, r := range rs {
			if err := printJSON(e.stdout, r); err != nil {
				return err
			}
		}
		return nil
	}
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	for _, r := range rs {
		fmt.Fprintf(e.stdout, "%s %s  %s  %s  (%d files, %d bytes)\n", verb, r.SessionID, dash(r.Title), shortTime(r.UpdatedAt), len(r.Files), r.Bytes)
	}
	return nil
}

func sessionsPrune(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("prune takes no arguments")
	}
	olderThan := e.c.String("older-than")
	var d time.Duration
	var err error
	if olderThan != "" {
		d, err = durationFlag(e.c, "older-than", profiles.ParseDuration)
	} else {
		cfg, cerr := e.config()
		if cerr != nil {
			return cerr
		}
		if olderThan = cfg.Retention.Sessions; olderThan == "" {
			return usagef("prune needs --older-than (or retention.sessions in config.yaml)")
		}
		d, err = durationSetting("retention.sessions", olderThan, 0, profiles.ParseDuration)
	}
	if err != nil {
		return err
	}
	cutoff := time.Now().Add(-d)
	store := e.sessions()
	dry := e.c.Bool("dry-run")
	if !dry && !e.c.Bool("yes") {
		candidates, err := store.Prune(cutoff, e.c.String("source"), true)
		if err != nil {
			return err
		}
		if len(candidates) == 0 {
			return nil
		}
		if err := e.confirm(false, fmt.Sprintf("delete %d ended sessions older than %s", len(candidates), olderThan)); err != nil {
			return err
		}
	}
	rs, err := store.Prune(cutoff, e.c.String("source"), dry)
	if !dry && len(rs) > 0 {
		pruneOrphans(e)
		forgetClaims(e, rs)
	}
	if perr := printRemovals(e, rs, dry); err == nil {
		err = perr
	}
	return err
}

func sessionsStats(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("stats takes no arguments")
	}
	st, err := e.sessions().Stats()
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, st)
	}
	tb := newTable(e.stdout)
	tb.row("sessions:", st.Sessions)
	for _, s := range sortedKeys(st.ByState) {
		tb.row("  "+s+":", st.ByState[s])
	}
	tb.row("sources:", "")
	for _, s := range sortedKeys(st.BySource) {
		tb.row("  "+dash(s)+":", st.BySource[s])
	}
	tb.row("messages:", st.Messages)
	tb.row("bytes:", st.Bytes)
	return tb.flush()
}
