package cmd

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/fsstore/cron"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
	"github.com/hermes/hermes/profiles"
)

// The shells' completion scripts ask the binary for candidates: hermes
// __complete -- WORD… CURRENT, where the words are those typed after
// hermes and CURRENT the one being completed (maybe empty). It prints one
// candidate a line. It reads the command tree (nouns, verbs and flags,
// global flags anywhere) and, for an argument, the records the verb takes
// from the profile the words name (--home, -p), as the listings read them
// but with no lock wait: a Tab is never held by a writer.
func completeCommand() *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			words := c.Args().Slice()
			if len(words) > 0 && words[0] == "--" {
				words = words[1:]
			}
			if len(words) == 0 {
				words = []string{""}
			}
			// Global flags before __complete count too; those among the
			// words win.
			global := []string{"--home=" + c.String("home"), "--profile=" + c.String("profile")}
			for _, cand := range completions(c.App, append(global, words[:len(words)-1]...), words[len(words)-1]) {
				fmt.Fprintln(c.App.Writer, cand)
			}
			return nil
		},
	}
}

// completions are the candidates for cur after words, those beginning
// with cur.
func completions(app *cli.App, words []string, cur string) []string {
	var home, profile string
	cmds, flags := app.Commands, app.Flags
	var noun, verb *cli.Command
	for i := 0; i < len(words); i++ {
		w := words[i]
		if strings.HasPrefix(w, "-") {
			name, value, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if takesValue(append(slices.Clone(flags), app.Flags...), w) && i+1 < len(words) {
				i++
				value = words[i]
			}
			switch name {
			case "home":
				home = value
			case "profile", "p":
				profile = value
			}
			continue
		}
		c := findCommand(cmds, w)
		if c == nil {
			continue // an argument
		}
		if noun == nil {
			noun = c
		} else {
			verb = c
		}
		cmds, flags = c.Subcommands, c.Flags
	}
	var out []string
	seen := map[string]bool{}
	add := func(cands ...string) {
		for _, c := range cands {
			if strings.HasPrefix(c, cur) && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	// A flag's value: profile names after -p, sessions after --resume.
	if n := len(words); n > 0 && takesValue(append(slices.Clone(flags), app.Flags...), words[n-1]) {
		switch strings.TrimLeft(words[n-1], "-") {
		case "profile", "p":
			add(profileNames(home)...)
		case "resume", "r", "session":
			add(argCandidates(home, profile, "sessions", cur)...)
		}
		return out
	}
	if strings.HasPrefix(cur, "-") {
		for _, f := range append(slices.Clone(flags), app.Flags...) {
			if noun != nil && f == cli.VersionFlag {
				continue // a flag of hermes alone
			}
			for _, n := range f.Names() {
				add(dashed(n))
			}
		}
		return out
	}
	if len(cmds) > 0 {
		add(commandNames(cmds)...)
		return out
	}
	switch {
	case noun != nil && noun.Name == "completion":
		add("bash", "zsh", "fish")
	case noun != nil && verb != nil && takesRecord(verb):
		add(argCandidates(home, profile, noun.Name, cur)...)
	}
	return out
}

// takesRecord reports whether a verb's arguments name records (an id, a
// title, a name), as its ArgsUsage says.
func takesRecord(verb *cli.Command) bool {
	a := verb.ArgsUsage
	return strings.Contains(a, "ID") || strings.Contains(a, "NAME") || strings.Contains(a, "TITLE")
}

// completionLimit bounds the sessions offered: the most recent ones, and
// those whose id begins with what is typed, from the id index.
const completionLimit = 50

// argCandidates are the records a verb of noun takes, in the profile the
// words named, read as the listings read them.
func argCandidates(home, profile, noun, cur string) []string {
	p, err := completionProfile(home, profile)
	if err != nil {
		return nil
	}
	quiet := func(string) {}
	switch noun {
	case "sessions", "chat":
		st := sessions.NewStore(p.Dir(), p.Name, 0, quiet)
		list, _ := st.List(sessions.ListOptions{Limit: completionLimit})
		var out []string
		for _, s := range list {
			out = append(out, s.ID)
			if s.Title != "" {
				out = append(out, s.Title)
			}
		}
		ids, _ := st.IDsWithPrefix(cur, completionLimit)
		return append(out, ids...)
	case "tasks":
		ids, _ := tasks.NewStore(p.Dir(), 0, quiet).IDs()
		return ids
	case "kanban":
		ids, _ := kanban.NewBoard(p.Dir(), 0, quiet).OpenIDs()
		return ids
	case "cron":
		jobs, _ := cron.NewStore(p.Dir(), 0, quiet).List()
		var out []string
		for _, j := range jobs {
			out = append(out, j.Name, j.ID)
		}
		return out
	case "mcp":
		if cfg, err := profiles.Load(p); err == nil {
			return slices.Sorted(maps.Keys(cfg.MCPServers))
		}
	case "profile":
		return profileNames(home)
	}
	return nil
}

// completionProfile is the profile the words name.
func completionProfile(home, profile string) (profiles.Profile, error) {
	root, err := profiles.Root(home)
	if err != nil {
		return profiles.Profile{}, err
	}
	return profiles.Resolve(root, profile)
}

func profileNames(home string) []string {
	root, err := profiles.Root(home)
	if err != nil {
		return nil
	}
	names, _ := profiles.List(root)
	return names
}
