package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/profiles"
)

func hooksCommand() *cli.Command {
	return &cli.Command{
		Name:  "hooks",
		Usage: "the commands config.yaml's hooks run at a turn's events (Claude Code's hooks)",
		Description: `hooks: in config.yaml names, by event, the commands to run: each gets the event's
input as JSON on stdin, as Claude Code gives it; exit 2 blocks (a tool call, a prompt),
other codes warn. gateway.hooks are the gateway's own. The events:
` + strings.Join(hooks.Events, ", ") + `.`,
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "every hook, the profile's (hooks) then the gateway's (gateway.hooks)", ArgsUsage: " ", Action: withEnv(hooksList)},
			{Name: "test", Usage: "run EVENT's hooks that match the input in FILE (- for stdin), as a turn would, and show what each did", ArgsUsage: "EVENT",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "input", Usage: "a JSON `FILE` holding the event's input (its fields as Claude Code names them; hook_event_name is EVENT)"},
					&cli.BoolFlag{Name: "gateway", Usage: "run gateway.hooks instead of hooks"},
				},
				Action: withEnv(hooksTest)},
		},
	}
}

// hookSets are the profile's hooks and the gateway's, checked, by
// setting, from config.yaml.
func hookSets(e *env) (map[string]*hooks.Set, error) {
	cfg, err := e.config()
	if err != nil {
		return nil, err
	}
	sets := map[string]*hooks.Set{}
	for _, c := range []struct {
		setting string
		hooks   profiles.Hooks
	}{{"hooks", cfg.Hooks}, {"gateway.hooks", cfg.Gateway.Hooks}} {
		if sets[c.setting], err = hooks.New(c.setting, c.hooks); err != nil {
			return nil, err
		}
	}
	return sets, nil
}

// hookEntry is one hook as hooks list prints it; Timeout is in seconds,
// as config.yaml and Claude Code write it.
type hookEntry struct {
	Setting string  `json:"setting"`
	Event   string  `json:"event"`
	Matcher string  `json:"matcher"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout"`
}

func hooksList(e *env) error {
	if _, err := verbArgs(e); err != nil {
		return err
	}
	sets, err := hookSets(e)
	if err != nil {
		return err
	}
	var entries []hookEntry
	for _, setting := range []string{"hooks", "gateway.hooks"} {
		for _, h := range sets[setting].List() {
			entries = append(entries, hookEntry{Setting: setting, Event: h.Event, Matcher: h.Matcher, Command: h.Command, Timeout: h.Timeout.Seconds()})
		}
	}
	if len(entries) == 0 {
		fmt.Fprintf(e.stderr, "hermes: no hooks in profile %s (hooks: in config.yaml)\n", e.profile.Name)
		return nil
	}
	if e.json {
		for _, h := range entries {
			if err := printJSON(e.stdout, h); err != nil {
				return err
			}
		}
		return nil
	}
	t := newTable(e.stdout, "SETTING", "EVENT", "MATCHER", "TIMEOUT", "COMMAND")
	for _, h := range entries {
		matcher := h.Matcher
		if matcher == "" {
			matcher = "*"
		}
		t.row(h.Setting, h.Event, matcher, fmt.Sprintf("%gs", h.Timeout), h.Command)
	}
	return t.flush()
}

func hooksTest(e *env) error {
	args, err := verbArgs(e, "EVENT")
	if err != nil {
		return err
	}
	event := args[0]
	if !slices.Contains(hooks.Events, event) {
		return fsstore.Invalidf("unknown event %q (events: %s)", event, strings.Join(hooks.Events, ", "))
	}
	in, err := readHookInput(e, e.c.String("input"))
	if err != nil {
		return err
	}
	sets, err := hookSets(e)
	if err != nil {
		return err
	}
	set := sets["hooks"]
	if e.c.Bool("gateway") {
		set = sets["gateway.hooks"]
	}
	in.HookEventName = event
	if in.ToolName != "" && in.HermesToolName == "" {
		in = hooks.ToolInput(in, event, hooks.HermesName(in.ToolName), in.ToolUseID, in.ToolInput)
	}
	if in.Cwd == "" {
		if in.Cwd, err = os.Getwd(); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ran, o := set.Trial(ctx, in)
	if len(ran) == 0 {
		fmt.Fprintf(e.stderr, "hermes: no %s hook matches this input\n", event)
		return nil
	}
	if e.json {
		return printJSON(e.stdout, struct {
			Event   string       `json:"event"`
			Ran     []hooks.Ran  `json:"ran"`
			Outcome hooks.Record `json:"outcome"`
		}{event, ran, o.Record(event)})
	}
	for _, r := range ran {
		status := fmt.Sprintf("exit %d", r.ExitCode)
		switch {
		case r.TimedOut:
			status = "timed out: killed with its process group"
		case r.Error != "":
			status = r.Error
		case r.ExitCode < 0:
			status = "killed by a signal"
		}
		fmt.Fprintf(e.stdout, "%s hook %q: %s\n", event, r.Command, status)
		for _, s := range []struct{ name, text string }{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
			if t := strings.TrimRight(s.text, "\n"); t != "" {
				fmt.Fprintf(e.stdout, "  %s: %s\n", s.name, strings.ReplaceAll(t, "\n", "\n    "))
			}
		}
	}
	fmt.Fprintf(e.stdout, "outcome: %s\n", outcomeText(o))
	return nil
}

// readHookInput reads a hook's input from path (- for stdin).
func readHookInput(e *env, path string) (hooks.Input, error) {
	var in hooks.Input
	if path == "" {
		return in, usagef("hooks test needs --input FILE (- for stdin): the event's input as JSON")
	}
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(e.stdin, 16<<20))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return in, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return in, fsstore.Invalidf("%s: not a JSON object: %v", path, err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fsstore.Invalidf("%s: %v", path, err)
	}
	return in, nil
}

// outcomeText says what a turn would do with o.
func outcomeText(o hooks.Outcome) string {
	var parts []string
	switch {
	case o.Block:
		parts = append(parts, "block: "+o.Reason)
	case o.Ask:
		parts = append(parts, "ask")
	case o.Allow:
		parts = append(parts, "allow")
	}
	if o.UpdatedInput != nil {
		parts = append(parts, "updated input: "+string(o.UpdatedInput))
	}
	if len(o.Context) > 0 {
		parts = append(parts, "context: "+strings.Join(o.Context, "\n"))
	}
	if o.Stop {
		parts = append(parts, "stop: "+o.StopReason)
	}
	for _, n := range o.Notices {
		parts = append(parts, "notice: "+n)
	}
	if len(parts) == 0 {
		return "go on"
	}
	return strings.Join(parts, "; ")
}
