package cmd

import (
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/urfave/cli/v2"
)

// TestHelpSaysEachDefaultOnce: a flag's help line names its default at
// most once. urfave/cli adds "(default: V)" of its own to a flag with a
// value, so a usage that says its default must set DefaultText instead.
func TestHelpSaysEachDefaultOnce(t *testing.T) {
	app := NewApp(strings.NewReader(""), io.Discard, io.Discard)
	check := func(where string, flags []cli.Flag) {
		for _, f := range flags {
			if line := f.String(); strings.Count(line, "(default:") > 1 {
				t.Errorf("%s: %s", where, line)
			}
		}
	}
	check("hermes", app.Flags)
	walkCommands(app.Commands, func(c *cli.Command) { check(c.Name, c.Flags) })
}

// TestREADMESessionsVerbs: the README's table of sessions verbs and the
// help are one account: every verb of the help is in the table, every verb
// and flag of the table is in the help, and a default the table writes
// ([--limit 20]) is the flag's.
func TestREADMESessionsVerbs(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "### Sessions verbs\n")
	if !ok {
		t.Fatal("README has no Sessions verbs section")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	app := NewApp(strings.NewReader(""), io.Discard, io.Discard)
	noun := findCommand(app.Commands, "sessions")
	inTable := map[string]bool{}
	spec := regexp.MustCompile("`([^`]+)`")
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, " | ")
		if len(cells) < 2 || !strings.HasPrefix(row, "| `") {
			continue
		}
		for _, m := range spec.FindAllStringSubmatch(cells[0], -1) {
			words := strings.Fields(m[1])
			verb := findCommand(noun.Subcommands, words[0])
			if verb == nil {
				t.Errorf("README names sessions %s, which the help does not have", words[0])
				continue
			}
			inTable[verb.Name] = true
			for i, w := range words {
				w = strings.Trim(w, "[]|")
				if !strings.HasPrefix(w, "--") {
					continue
				}
				f := lookupFlag(verb.Flags, w)
				if f == nil {
					t.Errorf("README: sessions %s %s: no such flag in the help", verb.Name, w)
					continue
				}
				if i+1 < len(words) && strings.HasSuffix(words[i+1], "]") {
					want := strings.TrimSuffix(words[i+1], "]")
					if _, err := strconv.Atoi(want); err != nil {
						continue
					}
					if got := f.(cli.DocGenerationFlag).GetValue(); got != want {
						t.Errorf("README: sessions %s %s %s, but its default is %s", verb.Name, w, want, got)
					}
				}
			}
		}
	}
	for _, c := range noun.Subcommands {
		if !inTable[c.Name] {
			t.Errorf("sessions %s is not in the README's table", c.Name)
		}
	}
}

// TestHelpSaysNothingFalse: no help line contradicts itself or says a
// number for "all": a switch is off unless given, so "(default: false)"
// is noise beside "(the default)", and -1 is no value a user types.
func TestHelpSaysNothingFalse(t *testing.T) {
	app := NewApp(strings.NewReader(""), io.Discard, io.Discard)
	check := func(where string, flags []cli.Flag) {
		for _, f := range flags {
			line := f.String()
			if strings.Contains(line, "(default: false)") || strings.Contains(line, "(default: -1)") || line != strings.TrimRight(line, " ") {
				t.Errorf("%s: %q", where, line)
			}
		}
	}
	check("hermes", app.Flags)
	walkCommands(app.Commands, func(c *cli.Command) { check(c.Name, c.Flags) })
}

// TestPlainHermesIsHelp: hermes alone prints the page hermes --help
// prints.
func TestPlainHermesIsHelp(t *testing.T) {
	var plain, help strings.Builder
	NewApp(strings.NewReader(""), &plain, io.Discard).Run([]string{"hermes"})
	NewApp(strings.NewReader(""), &help, io.Discard).Run([]string{"hermes", "--help"})
	if plain.String() != help.String() || !strings.Contains(help.String(), "COMMANDS:") {
		t.Fatalf("hermes:\n%s\nhermes --help:\n%s", plain.String(), help.String())
	}
}

// TestNounSummaryNamesItsVerbs: hermes --help names every verb of every
// noun, so a user sees them without a second help.
func TestNounSummaryNamesItsVerbs(t *testing.T) {
	var out strings.Builder
	NewApp(strings.NewReader(""), &out, io.Discard).Run([]string{"hermes", "--help"})
	app := NewApp(strings.NewReader(""), io.Discard, io.Discard)
	for _, noun := range app.Commands {
		line := ""
		for _, l := range strings.Split(out.String(), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == noun.Name {
				line = l
			}
		}
		for _, verb := range noun.VisibleCommands() {
			if !regexp.MustCompile(`\b` + verb.Name + `\b`).MatchString(line) {
				t.Errorf("hermes --help's line of %s does not name %s: %q", noun.Name, verb.Name, line)
			}
		}
	}
}

// TestREADMECommandsExist: every hermes command line the README shows
// (in its sh blocks and in inline code) names a noun, a verb and flags the
// help has, so that no noun's examples drift from what the binary takes.
func TestREADMECommandsExist(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	app := NewApp(strings.NewReader(""), io.Discard, io.Discard)
	var lines []string
	inBlock := false
	for _, l := range strings.Split(string(readme), "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			inBlock = strings.TrimPrefix(l, "```") == "sh"
		case inBlock:
			lines = append(lines, l)
		default:
			for _, m := range regexp.MustCompile("`(hermes (?:-|[a-z]+\\b)[^`]*)`").FindAllStringSubmatch(l, -1) {
				if !strings.Contains(m[1], "(commit ") { // the version line, quoted as output
					lines = append(lines, m[1])
				}
			}
		}
	}
	checked := 0
	for _, l := range lines {
		for _, cmdline := range regexp.MustCompile(`(?:^|[|;&(]\s*|\$\(|\s)hermes\s+([^|;&)#]*)`).FindAllStringSubmatch(l, -1) {
			if problem := checkCommandLine(app, strings.Fields(cmdline[1])); problem != "" {
				t.Errorf("README: hermes %s: %s", strings.TrimSpace(cmdline[1]), problem)
			}
			checked++
		}
	}
	t.Logf("%d command lines checked", checked)
	if checked < 100 {
		t.Fatalf("found %d command lines in the README; the scan is broken", checked)
	}
}

// checkCommandLine says what in args (after "hermes") the help does not
// have, or "" when every noun, verb and flag is known.
func checkCommandLine(app *cli.App, args []string) string {
	flags := app.Flags
	cmds := app.Commands
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || strings.ContainsAny(a, "<>…\"'$=") && !isFlag(a) {
			return ""
		}
		if isFlag(a) {
			if a == "-" || a == "--help" || a == "-h" || a == "--version" && i == 0 {
				continue
			}
			if lookupFlag(flags, a) == nil && lookupFlag(app.Flags, a) == nil {
				return "no flag " + a
			}
			if takesValue(flags, a) || (lookupFlag(flags, a) == nil && takesValue(app.Flags, a)) {
				i++
			}
			continue
		}
		if len(cmds) == 0 {
			continue
		}
		c := findCommand(cmds, a)
		if c == nil {
			if strings.ToUpper(a) == a || strings.ContainsAny(a, "./") {
				return ""
			}
			return "no command " + a
		}
		flags, cmds = c.Flags, c.Subcommands
	}
	return ""
}

// TestHelpOneCapitalisation: every command's and flag's one-line usage
// starts in lower case, as hermes's own do, the help command's included
// (a name written in capitals, MCP or USER.md, is a name).
func TestHelpOneCapitalisation(t *testing.T) {
	var out strings.Builder
	NewApp(strings.NewReader(""), &out, io.Discard).Run([]string{"hermes", "--help"})
	app := NewApp(strings.NewReader(""), io.Discard, io.Discard)
	lower := func(where, s string) {
		if len(s) > 1 && unicode.IsUpper(rune(s[0])) && unicode.IsLower(rune(s[1])) {
			t.Errorf("%s: %q", where, s)
		}
	}
	walkCommands(app.Commands, func(c *cli.Command) {
		lower(c.Name, c.Usage)
		for _, f := range c.Flags {
			if u, ok := f.(cli.DocGenerationFlag); ok {
				lower(c.Name+" "+f.Names()[0], u.GetUsage())
			}
		}
	})
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "help," {
			lower("help", strings.Join(f[2:], " "))
		}
	}
}

// TestFlagsNameTheirValue: no help line says "--flag value": each names
// what it takes (--limit N, --since WHEN), and the man page says the same.
func TestFlagsNameTheirValue(t *testing.T) {
	app := NewApp(strings.NewReader(""), io.Discard, io.Discard)
	check := func(where string, flags []cli.Flag) {
		for _, f := range flags {
			if line := f.String(); strings.Contains(strings.Split(line, "\t")[0], " value") {
				t.Errorf("%s: %q", where, line)
			}
		}
	}
	check("hermes", app.Flags)
	walkCommands(app.Commands, func(c *cli.Command) { check(c.Name, c.Flags) })
	if man := manPage(app, 1); !strings.Contains(man, `\-\-limit N`) {
		t.Errorf("the man page does not say --limit N")
	}
}

// TestREADMENamesEveryVerb: each verb of each noun is in the README, in
// the noun's section (`hermes NOUN VERB …`, or `NOUN VERB`, `VERB …` or
// `V1|VERB` in code there), so no verb is left for a user to find by
// accident.
func TestREADMENamesEveryVerb(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string][]string{
		"sessions": {"### Sessions verbs"}, "tasks": {"### Background tasks"}, "cron": {"### Scheduled jobs"},
		"kanban": {"### Kanban"}, "gateway": {"### Gateway"}, "mcp": {"### Tools from MCP servers", "### hermes as an MCP server"},
		"memory": {"### Memory"}, "skills": {"### Skills"}, "checkpoints": {"### Checkpoints"}, "usage": {"### Usage and cost"},
		"hooks":   {"### Hooks"},
		"profile": {""}, // a line of the whole README
	}
	app := NewApp(strings.NewReader(""), io.Discard, io.Discard)
	for _, noun := range app.VisibleCommands() {
		if len(noun.VisibleCommands()) <= 1 { // chat, fsck, completion, man, version: no verbs
			continue
		}
		heads, ok := sections[noun.Name]
		if !ok {
			t.Errorf("%s: no README section known for it (add it here)", noun.Name)
			continue
		}
		var text string
		for _, h := range heads {
			sec := string(readme)
			if h != "" {
				_, sec, ok = strings.Cut(sec, "\n"+h+"\n")
				if !ok {
					t.Errorf("README has no section %q", h)
				}
				sec, _, _ = strings.Cut(sec, "\n### ")
			}
			text += sec
		}
		for _, verb := range noun.VisibleCommands() {
			if verb.Name == "help" {
				continue
			}
			named := regexp.MustCompile("(?:hermes (?:[-a-z]+ )*|`)(?:" + noun.Name + " )?(?:[a-z-]+\\|)*" + verb.Name + "\\b")
			if !named.MatchString(text) {
				t.Errorf("the README's %s section does not name %s %s", heads[0], noun.Name, verb.Name)
			}
		}
	}
}
