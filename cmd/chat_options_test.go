package cmd

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestBackgroundKeepsEveryOption sets every flag of hermes chat and checks
// that the chat --background starts gets each one that applies to its
// turn, so a flag added later cannot be dropped without this failing.
func TestBackgroundKeepsEveryOption(t *testing.T) {
	// How a chat runs, not what its turn does; and what the session made
	// for the background chat holds when it is made.
	notPassed := map[string]bool{"query": true, "resume": true, "continue": true, "interactive": true, "background": true, "title": true, "cwd": true}
	cmd := chatCommand()
	flags := slices.Clone(cmd.Flags) // Run adds --help
	args := []string{"chat"}
	for _, f := range flags {
		name := f.Names()[0]
		if _, ok := f.(*cli.BoolFlag); ok {
			args = append(args, "--"+name)
		} else {
			args = append(args, "--"+name, "v-"+name)
		}
	}
	var got []string
	var opts chatOptions
	cmd.Action = func(c *cli.Context) error {
		opts = readChatOptions(c)
		got = opts.backgroundArgs("S", "P")
		return nil
	}
	app := &cli.App{Commands: []*cli.Command{cmd}}
	if err := app.Run(append([]string{"hermes"}, args...)); err != nil {
		t.Fatal(err)
	}
	if opts.Title != "v-title" || opts.Cwd != "v-cwd" {
		t.Errorf("title %q, cwd %q not read", opts.Title, opts.Cwd)
	}
	if !slices.Equal(got[:5], []string{"chat", "--resume", "S", "-q", "P"}) {
		t.Fatalf("args %q", got)
	}
	passed := got[5:]
	for _, f := range flags {
		name := f.Names()[0]
		i := slices.Index(passed, "--"+name)
		switch {
		case notPassed[name] && i >= 0:
			t.Errorf("--%s handed on: %q", name, passed)
		case notPassed[name]:
		case i < 0:
			t.Errorf("--%s not handed on to the background chat: %q", name, got)
		case !isBool(f) && (i+1 >= len(passed) || passed[i+1] != "v-"+name):
			t.Errorf("--%s handed on without its value: %q", name, passed)
		}
	}
}

func isBool(f cli.Flag) bool {
	_, ok := f.(*cli.BoolFlag)
	return ok
}
