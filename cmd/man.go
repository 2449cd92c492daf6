package cmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// manPage renders the app as a roff manual page of the given section, from
// the same command tree that --help prints. hermes writes it itself rather
// than through urfave/cli's ToMan, so that a release build can leave out
// cli's Markdown renderer (build tag urfave_cli_no_docs), whose package
// initialisation every command would otherwise pay at start-up.
func manPage(app *cli.App, section int) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s %d %q %q\n", app.Name, section, readBuildInfo().manDate(), app.Name+" "+readBuildInfo().Version)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", app.Name, roff(app.Usage))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n[GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGUMENTS]\n", app.Name)
	if app.Description != "" {
		fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n", roff(app.Description))
	}
	b.WriteString(".SH GLOBAL OPTIONS\n")
	manFlags(&b, app.VisibleFlags())
	b.WriteString(".SH COMMANDS\n")
	for _, c := range app.VisibleCommands() {
		manCommandSection(&b, app.Name, c)
	}
	b.WriteString(".SH EXIT STATUS\n")
	for _, x := range manExitCodes {
		fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", x.code, roff(x.meaning))
	}
	b.WriteString(".SH ENVIRONMENT\n")
	for _, v := range manEnvironment {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roff(v[0]), roff(v[1]))
	}
	fmt.Fprintf(&b, ".SH FILES\n%s\n", roff(manFiles))
	b.WriteString(".SH EXAMPLES\n")
	for _, x := range manExamples {
		fmt.Fprintf(&b, ".PP\n%s\n.RS\n.nf\n%s\n.fi\n.RE\n", roff(x[0]), roff(x[1]))
	}
	return b.String()
}

// manExitCodes is the exit code table (exitCode maps errors to it).
var manExitCodes = []struct {
	code    int
	meaning string
}{
	{0, "done"},
	{1, "failed: an I/O error, a provider error, fsck found problems it did not repair"},
	{2, "bad usage or bad input: an unknown flag, an invalid id, malformed JSON, a bad duration; nothing written"},
	{3, "not found: a session, title, task or job"},
	{4, "refused to lose data or break a rule: the truncation guard, a taken title, the delete of an active record, a stale claim"},
	{5, "timed out waiting for a lock (--lock-timeout)"},
}

// manEnvironment is every variable hermes reads, and those it sets for
// the commands it runs (a test holds it to the sources).
var manEnvironment = [][2]string{
	{"HERMES_HOME", "the root directory, when --home is not given (default ~/.hermes)"},
	{"HERMES_PROFILE", "the profile, when -p is not given (else the root's active_profile, else default)"},
	{"HERMES_PROVIDER", "the model provider: echo (the default), openai or exec"},
	{"HERMES_MODEL", "the model to ask for (--model, else this, else model: in config.yaml)"},
	{"HERMES_BASE_URL", "the openai provider's base URL (default https://api.openai.com/v1)"},
	{"HERMES_API_KEY", "the openai provider's API key (else OPENAI_API_KEY)"},
	{"HERMES_EXEC_COMMAND", "the exec provider's command, run through sh -c"},
	{"HERMES_GATEWAY_API_KEY", "the gateway's and mcp serve --http's API key (the variable gateway.api_key_env names)"},
	{"HERMES_HOST_ID", "this host's name in locks, claims and runs, where hosts share a profile (default the machine's id)"},
	{"HERMES_SESSION_ID", "set for the commands the agent's tools run: the session they run for"},
	{"HERMES_TASK_ID", "set for a background task's command (tasks run): its task id"},
	{"HERMES_FS_CHILD", "set by hermes for the child it runs a command in when the profile is on a network filesystem (--fs-timeout); never set it"},
	{"HERMES_KANBAN_TASK, HERMES_KANBAN_RUN_ID, HERMES_KANBAN_CLAIM_LOCK, HERMES_KANBAN_PROFILE", "set for a kanban worker: its task, run, claim and profile; the worker verbs act for them"},
	{"HERMES_TOOLS, HERMES_PARAMS", "set for the exec provider's command: files holding the tools offered and the request's parameters"},
}

// manFiles is the profile's layout, in brief (README's "On disk" has it
// whole).
const manFiles = `~/.hermes/profiles/NAME/ (or $HERMES_HOME/profiles/NAME/) holds a profile:
config.yaml (settings), sessions/ (a document and a JSONL transcript per
session), kanban/ (board tasks, their comments and events), tasks/
(background tasks and their output), cron/ (scheduled jobs and their runs),
gateway/ (the API gateway's conversations and routing), mcp/ (MCP servers'
tool lists and logs). ~/.hermes/active_profile names the profile used when
none is given.`

// manExamples are a few commands, each with what it does.
var manExamples = [][2]string{
	{"One turn in a new session, then another in the same one:", "hermes chat -q 'plan the release'\nhermes chat --continue -q 'and the changelog?'"},
	{"The ids of the active sessions the gateway made:", "hermes --json sessions list | jq -r 'select(.source==\"gateway\" and .state==\"active\") | .id'"},
	{"A background task, waited for from cron, and its history pruned:", "hermes tasks run --wait --name backup -- ./backup.sh\nhermes tasks prune --older-than 30d"},
	{"The API gateway, for clients that speak OpenAI's API:", "hermes gateway serve --addr 127.0.0.1:8642"},
	{"Check the profile's files, and repair what can be:", "hermes fsck --repair"},
}

func manCommandSection(b *strings.Builder, parent string, c *cli.Command) {
	path := parent + " " + c.Name
	fmt.Fprintf(b, ".SS %s\n", roff(strings.TrimSpace(path+" "+c.ArgsUsage)))
	if len(c.Aliases) > 0 {
		fmt.Fprintf(b, "Also: %s.\n.br\n", roff(strings.Join(c.Aliases, ", ")))
	}
	fmt.Fprintf(b, "%s\n", roff(c.Usage))
	if c.Description != "" {
		fmt.Fprintf(b, ".PP\n%s\n", roff(c.Description))
	}
	manFlags(b, c.VisibleFlags())
	for _, sub := range c.VisibleCommands() {
		manCommandSection(b, path, sub)
	}
}

// manFlags lists flags as tagged paragraphs: the names, then the usage.
func manFlags(b *strings.Builder, flags []cli.Flag) {
	for _, f := range flags {
		var names []string
		for _, n := range f.Names() {
			if n == "help" || n == "h" {
				continue
			}
			dash := "--"
			if len(n) == 1 {
				dash = "-"
			}
			names = append(names, dash+n)
		}
		if len(names) == 0 {
			continue
		}
		value, usage := valueName(f)
		if value != "" {
			names[0] += " " + value
		}
		if d, ok := f.(cli.DocGenerationFlag); ok {
			if v := d.GetValue(); d.TakesValue() && v != "" {
				usage += " (default " + v + ")"
			}
		}
		fmt.Fprintf(b, ".TP\n.B %s\n%s\n", roff(strings.Join(names, ", ")), roff(usage))
	}
}

// roff escapes text for a roff line: backslashes, and a leading dot or
// quote that roff would take for a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			b.WriteString(`\&`)
		}
		b.WriteString(line)
	}
	return b.String()
}
