package cmd

import (
	"github.com/urfave/cli/v2"
)

// chatOptions are hermes chat's flags, read once: the chat runs with them,
// and --background hands them whole to the chat it starts (backgroundArgs).
type chatOptions struct {
	// How this chat runs: not handed on (the background chat runs one
	// turn, -q, in the session made for it).
	Query       string
	HasQuery    bool
	Resume      string
	Continue    bool
	Interactive bool
	Background  bool
	Args        []string // TITLE with -c

	// Applied to the session the background chat runs in, when it is
	// made: its title and its working directory.
	Title string
	Cwd   string

	// Handed on as they were given.
	System         string
	NoInstructions bool
	Tools          string
	HasTools       bool
	NoTools        bool
	Yes            bool
	// The provider flags that were given, by name (givenProviderFlags):
	// the chat's provider is made from them, and a background chat gets
	// them as they were given.
	Provider map[string]string
}

func readChatOptions(c *cli.Context) chatOptions {
	return chatOptions{
		Query:          c.String("query"),
		HasQuery:       c.IsSet("query"),
		Resume:         c.String("resume"),
		Continue:       c.Bool("continue"),
		Interactive:    c.Bool("interactive"),
		Background:     c.Bool("background"),
		Args:           c.Args().Slice(),
		Title:          c.String("title"),
		Cwd:            c.String("cwd"),
		System:         c.String("system"),
		NoInstructions: c.Bool("no-instructions"),
		Tools:          c.String("tools"),
		HasTools:       c.IsSet("tools"),
		NoTools:        c.Bool("no-tools"),
		Yes:            c.Bool("yes"),
		Provider:       givenProviderFlags(c),
	}
}

// backgroundArgs are the arguments of hermes chat (after the global flags)
// that runs prompt in session id, as a background task, with every option
// of o that applies to a turn.
func (o chatOptions) backgroundArgs(id, prompt string) []string {
	argv := []string{"chat", "--resume", id, "-q", prompt}
	if o.System != "" {
		argv = append(argv, "--system", o.System)
	}
	for _, f := range providerFlags() {
		if v, ok := o.Provider[f.Names()[0]]; ok {
			argv = append(argv, "--"+f.Names()[0], v)
		}
	}
	if o.HasTools {
		argv = append(argv, "--tools", o.Tools)
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"no-tools", o.NoTools}, {"yes", o.Yes}, {"no-instructions", o.NoInstructions}} {
		if f.set {
			argv = append(argv, "--"+f.name)
		}
	}
	return argv
}
