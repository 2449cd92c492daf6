package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// slashCommand is one of line mode's commands. The table of them
// (slashCommands) is the one list: line mode runs them, and /help, Tab
// completion and chat --help are made from it.
type slashCommand struct {
	name    string
	aliases []string
	args    string // how its arguments are written in the help, "" for none
	help    string
	// complete lists the candidates for its argument (Tab); nil: none.
	complete func(st *sessions.Store) []string
	// run runs it with its argument (trimmed); done ends line mode.
	run func(ch *chatter, arg string) (done bool, err error)
}

// slashCommands is the table, in the order /help lists it.
func slashCommands() []slashCommand {
	return []slashCommand{
		{name: "/resume", args: "ID|TITLE|N", help: "continue another session (N from /sessions); ends this one",
			complete: sessionTitles, run: (*chatter).resumeCmd},
		{name: "/sessions", help: "the 10 most recent sessions, numbered", run: (*chatter).sessionsCmd},
		{name: "/new", help: "start a new session; ends this one", run: (*chatter).newCmd},
		{name: "/title", args: "T", help: "set this session's title", run: (*chatter).titleCmd},
		{name: "/history", args: "[N]", help: "the last N messages (default 10)", run: (*chatter).historyCmd},
		{name: "/branch", args: "[TITLE]", help: "fork this session here and go on in the fork",
			run: func(ch *chatter, arg string) (bool, error) { return false, ch.fork(0, arg) }},
		{name: "/undo", args: "[N]", help: "fork without the last N turns (default 1) and go on in the fork; their file changes as checkpoints.restore says", run: (*chatter).undoCmd},
		{name: "/retry", help: "fork without the last answer and send its message again", run: (*chatter).retryCmd},
		{name: "/rewind", args: "[N [both|conversation|code]]", help: "the turns with the files each changed; go back to just before turn N", run: (*chatter).rewindCmd},
		{name: "/compress", args: "[N]", help: fmt.Sprintf("go on in a new session: a summary, then the last N messages (default %d)", agent.DefaultKeep),
			run: (*chatter).compressCmd},
		{name: "/tools", help: "the tools offered to the model, by where they come from", run: (*chatter).toolsCmd},
		{name: "/mcp", help: "the MCP servers: transport, state (running: started by this chat), tools, last error", run: (*chatter).mcpCmd},
		{name: "/background", args: "PROMPT", help: "run PROMPT as a background task, in a new session whose parent is this one",
			run: (*chatter).backgroundCmd},
		{name: "/tasks", args: "[VERB ARGS]", help: "this session's recent background tasks; with a VERB, hermes tasks VERB ARGS (history, log ID, …)",
			complete: func(*sessions.Store) []string {
				return []string{"history", "kill", "list", "log", "prune", "show", "wait"}
			},
			run: func(ch *chatter, arg string) (bool, error) { return false, ch.tasks(arg) }},
		{name: "/cron", help: "the scheduled jobs, as hermes cron list shows them", run: (*chatter).cronCmd},
		{name: "/help", help: "this list", run: func(ch *chatter, _ string) (bool, error) {
			fmt.Fprintln(ch.e.stdout, slashHelp(slashCommands()))
			return false, nil
		}},
		{name: "/exit", aliases: []string{"/quit"}, help: "quit (or Ctrl-D)", run: func(*chatter, string) (bool, error) { return true, nil }},
	}
}

// slashHelp is the help of cmds, one command a line, the helps aligned.
func slashHelp(cmds []slashCommand) string {
	usage := make([]string, len(cmds))
	width := 0
	for i, c := range cmds {
		usage[i] = strings.TrimSpace(strings.Join(append([]string{c.name}, c.aliases...), ", ") + " " + c.args)
		width = max(width, len(usage[i]))
	}
	var b strings.Builder
	for i, c := range cmds {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%-*s  %s", width, usage[i], c.help)
	}
	return b.String()
}

// indent puts prefix before each line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// findSlash returns the command named verb, or one of its aliases.
func findSlash(cmds []slashCommand, verb string) (slashCommand, bool) {
	for _, c := range cmds {
		if c.name == verb || slices.Contains(c.aliases, verb) {
			return c, true
		}
	}
	return slashCommand{}, false
}

// slash runs a line-mode command. done means the loop should end.
func (ch *chatter) slash(line string) (done bool, err error) {
	verb, arg, _ := strings.Cut(line, " ")
	c, ok := findSlash(slashCommands(), verb)
	if !ok {
		return false, fmt.Errorf("unknown command %s (/help lists them)", verb)
	}
	return c.run(ch, strings.TrimSpace(arg))
}

func sessionTitles(st *sessions.Store) []string {
	list, err := st.List(sessions.ListOptions{})
	if err != nil {
		return nil
	}
	var names []string
	for _, s := range list {
		if s.Title != "" {
			names = append(names, s.Title)
		}
	}
	return names
}

// positiveArg is a slash command's count: def when arg is empty, else a
// positive number, or an error saying what the command takes.
func positiveArg(arg string, def int, takes string) (int, error) {
	if arg == "" {
		return def, nil
	}
	v, err := strconv.Atoi(arg)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("%s, not %q", takes, arg)
	}
	return v, nil
}

func (ch *chatter) sessionsCmd(string) (bool, error) {
	list, err := ch.store.List(sessions.ListOptions{Limit: 10})
	if err != nil {
		return false, err
	}
	ch.numbered = ch.numbered[:0]
	tb := newTable(ch.e.stdout, "N", "ID", "TITLE", "MSGS", "LAST ACTIVITY")
	for i, s := range list {
		ch.numbered = append(ch.numbered, s.ID)
		tb.row(i+1, s.ID, dash(s.Title), s.MessageCount, shortTime(s.UpdatedAt))
	}
	return false, tb.flush()
}

func (ch *chatter) resumeCmd(arg string) (bool, error) {
	if arg == "" {
		return false, errors.New("/resume needs ID, TITLE or N")
	}
	id := ""
	if n, err := strconv.Atoi(arg); err == nil && n < 1000 {
		// A small number is a line of the last /sessions listing, never
		// an id prefix.
		if n < 1 || n > len(ch.numbered) {
			return false, fmt.Errorf("no session %d in the last /sessions listing", n)
		}
		id = ch.numbered[n-1]
	} else if id, err = ch.store.Resolve(arg); err != nil {
		return false, err
	}
	id, err := ch.latest(id)
	if err != nil {
		return false, err
	}
	if ch.sessionID != "" && ch.sessionID != id {
		if err := ch.end(ch.sessionID, endResumedOther); err != nil {
			return false, err
		}
	}
	ch.sessionID = id
	sess, err := ch.store.Get(id)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(ch.e.stderr, "hermes: resumed session %s (%s, %d messages)\n", id, dash(sess.Title), sess.MessageCount)
	return false, nil
}

func (ch *chatter) undoCmd(arg string) (bool, error) {
	n, err := positiveArg(arg, 1, "/undo takes a positive number of turns")
	if err != nil {
		return false, err
	}
	return false, ch.undo(n)
}

func (ch *chatter) compressCmd(arg string) (bool, error) {
	keep, err := positiveArg(arg, agent.DefaultKeep, "/compress takes a positive number of messages to keep")
	if err != nil {
		return false, err
	}
	return false, ch.compressNow(keep)
}

func (ch *chatter) retryCmd(arg string) (bool, error) {
	if arg != "" {
		return false, errors.New("/retry takes no argument")
	}
	return false, ch.retry()
}

func (ch *chatter) backgroundCmd(arg string) (bool, error) {
	if arg == "" {
		return false, errors.New("/background needs a prompt")
	}
	return false, ch.background(arg, "")
}

func (ch *chatter) newCmd(string) (bool, error) {
	if ch.sessionID != "" {
		if err := ch.end(ch.sessionID, endNewSession); err != nil {
			return false, err
		}
	}
	ch.sessionID, ch.title = "", ""
	fmt.Fprintln(ch.e.stderr, "hermes: new session (created by your next message)")
	return false, nil
}

func (ch *chatter) titleCmd(arg string) (bool, error) {
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
}

func (ch *chatter) historyCmd(arg string) (bool, error) {
	n, err := positiveArg(arg, 10, "/history takes a positive number")
	if err != nil {
		return false, err
	}
	if ch.sessionID == "" {
		return false, nil
	}
	msgs, err := ch.store.Messages(ch.sessionID)
	if err != nil {
		return false, err
	}
	for _, m := range msgs[max(0, len(msgs)-n):] {
		fmt.Fprintf(ch.e.stdout, "[%d] %s: ", m.Seq, m.Role)
		writeMessageBody(ch.e.stdout, m)
	}
	return false, nil
}

// toolsCmd is /tools: the tools this chat offers, grouped by source. A
// tool says where it comes from with a Source method; one without is
// built in.
func (ch *chatter) toolsCmd(string) (bool, error) {
	if len(ch.engine.Tools) == 0 {
		fmt.Fprintln(ch.e.stdout, "no tools are offered (--no-tools, or an empty --tools or agent.tools)")
		return false, nil
	}
	var sources []string
	bySource := map[string][]agent.Tool{}
	for _, t := range ch.engine.Tools {
		src := "built-in"
		if s, ok := t.(interface{ Source() string }); ok {
			src = s.Source()
		}
		if _, seen := bySource[src]; !seen {
			sources = append(sources, src)
		}
		bySource[src] = append(bySource[src], t)
	}
	for _, src := range sources {
		fmt.Fprintf(ch.e.stdout, "%s:\n", src)
		tb := newTable(ch.e.stdout, "  TOOL", "DESCRIPTION")
		for _, t := range bySource[src] {
			tb.row("  "+t.Name(), firstSentence(toolDescription(t)))
		}
		if err := tb.flush(); err != nil {
			return false, err
		}
	}
	return false, nil
}

// mcpCmd lists the MCP servers as hermes mcp list does, a server this
// chat has started being "running". It starts none.
func (ch *chatter) mcpCmd(string) (bool, error) {
	if ch.mcp == nil || len(ch.mcp.Specs) == 0 {
		fmt.Fprintln(ch.e.stdout, "no MCP servers in this chat (mcp_servers in config.yaml; hermes mcp add)")
		return false, nil
	}
	tb := newTable(ch.e.stdout, "NAME", "TRANSPORT", "STATE", "TOOLS", "LAST ERROR")
	for _, s := range ch.mcp.Specs {
		st, err := ch.mcp.Status(s)
		if err != nil {
			return false, err
		}
		if ch.mcp.Running(s.Name) {
			st.State = "running"
		}
		tb.row(st.Name, st.Transport, st.State, st.Tools, st.LastError)
	}
	return false, tb.flush()
}

// toolDescription is the description in t's schema.
func toolDescription(t agent.Tool) string {
	var s struct {
		Function struct {
			Description string `json:"description"`
		} `json:"function"`
	}
	json.Unmarshal(t.Schema(), &s)
	return s.Function.Description
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
