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
	return b.String()
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
		usage := ""
		if d, ok := f.(cli.DocGenerationFlag); ok {
			usage = d.GetUsage()
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
