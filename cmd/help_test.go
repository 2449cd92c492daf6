package cmd

import (
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
