package cmd

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/profiles"
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

// The chat's provider is made from its options, the one reading of the
// provider flags, which a background chat is handed too: a flag given
// wins over the environment and config.yaml, one not given leaves them
// (and --timeout's default) to decide.
func TestChatProviderFromOptions(t *testing.T) {
	for _, k := range []string{"HERMES_PROVIDER", "HERMES_MODEL", "HERMES_BASE_URL", "HERMES_EXEC_COMMAND"} {
		t.Setenv(k, "")
	}
	t.Setenv("HERMES_MODEL", "env-model")
	cfg := profiles.Config{Provider: "openai", BaseURL: "http://config.example/v1"}
	read := func(args ...string) chatOptions {
		t.Helper()
		var opts chatOptions
		cmd := chatCommand()
		cmd.Action = func(c *cli.Context) error {
			opts = readChatOptions(c)
			return nil
		}
		app := &cli.App{Commands: []*cli.Command{cmd}}
		if err := app.Run(append([]string{"hermes", "chat"}, args...)); err != nil {
			t.Fatal(err)
		}
		return opts
	}

	opts := read("--provider", "exec", "--model", "flag-model", "--timeout", "5s", "--exec-command", "agent")
	pc, err := providerConfig(opts.Provider, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if pc.Name != "exec" || pc.Model != "flag-model" || pc.Timeout != 5*time.Second || pc.ExecCommand != "agent" || pc.BaseURL != "http://config.example/v1" {
		t.Errorf("with flags: %+v", pc)
	}
	if got := opts.backgroundArgs("S", "P"); !slices.Contains(got, "flag-model") || !slices.Contains(got, "5s") {
		t.Errorf("background args %q lack the flags the chat ran with", got)
	}

	if pc, err = providerConfig(read().Provider, cfg); err != nil {
		t.Fatal(err)
	}
	if pc.Name != "openai" || pc.Model != "env-model" || pc.Timeout != 10*time.Minute {
		t.Errorf("without flags: %+v", pc)
	}

	if _, err := providerConfig(read("--timeout", "soon").Provider, cfg); err == nil || !strings.HasPrefix(err.Error(), "--timeout: ") {
		t.Errorf("--timeout soon: %v", err)
	}
}
