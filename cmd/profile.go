package cmd

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/fsstore/hosts"
	"github.com/hermes/hermes/profiles"
)

func profileCommand() *cli.Command {
	return &cli.Command{
		Name:  "profile",
		Usage: "profiles: separate homes for sessions, tasks and boards",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "the profiles that exist; * marks the active one", ArgsUsage: " ", Action: profileList},
			{Name: "show", Usage: "the profile in use, where it came from, its directory and config", ArgsUsage: " ", Action: withEnv(profileShow)},
			{Name: "use", Usage: "make NAME the active profile", ArgsUsage: "NAME", Action: profileUse},
		},
	}
}

func profileList(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("profile list takes no arguments")
	}
	e, err := newEnv(c)
	if err != nil {
		return err
	}
	names, err := profiles.List(e.profile.Root)
	if err != nil {
		return err
	}
	// The profile in use is listed even before its first write makes its
	// directory.
	if !slices.Contains(names, e.profile.Name) {
		names = append(names, e.profile.Name)
		slices.Sort(names)
	}
	for _, n := range names {
		active := n == e.profile.Name
		if e.json {
			printJSON(e.stdout, map[string]any{"name": n, "active": active, "dir": profiles.Dir(e.profile.Root, n)})
			continue
		}
		mark := " "
		if active {
			mark = "*"
		}
		fmt.Fprintf(e.stdout, "%s %s\n", mark, n)
	}
	return nil
}

func profileShow(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("profile show takes no arguments")
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	// Each host's clock as last measured against the filesystem's
	// (package hosts), oldest host id first.
	clocks, err := hosts.All(e.profile.Dir())
	if err != nil {
		return err
	}
	if e.json {
		// Switches left out print their value in force.
		yes := true
		if cfg.Kanban.ResumeOnRespawn == nil {
			cfg.Kanban.ResumeOnRespawn = &yes // a respawned worker resumes the prior session
		}
		if cfg.Memory.Enabled == nil {
			cfg.Memory.Enabled = &yes // the memory is on unless turned off
		}
		if cfg.Anthropic.ShowThinking == nil {
			cfg.Anthropic.ShowThinking = &yes // line mode shows thinking unless told not to
		}
		return printJSON(e.stdout, map[string]any{
			"name": e.profile.Name, "from": e.profile.From, "root": e.profile.Root,
			"dir": e.profile.Dir(), "config": filled(reflect.ValueOf(cfg)).Interface(), "clocks": clockRecords(clocks),
		})
	}
	tb := newTable(e.stdout)
	tb.row("name:", e.profile.Name)
	tb.row("from:", e.profile.From)
	tb.row("root:", e.profile.Root)
	tb.row("dir:", e.profile.Dir())
	tb.row("provider:", dash(cfg.Provider))
	for _, c := range clocks {
		tb.row("clock of "+c.Host+":", clockText(c))
	}
	return tb.flush()
}

// clockText says a host's last skew: "5m0s ahead of the filesystem's
// (measured …)".
func clockText(c hosts.Skew) string {
	return fmt.Sprintf("%s the filesystem's (measured %s)", hosts.Describe(c.Skew()), c.MeasuredAt)
}

// clockRecords are the hosts' last skews as --json prints them: host,
// skew_ms, measured_at.
func clockRecords(clocks []hosts.Skew) []map[string]any {
	out := []map[string]any{}
	for _, c := range clocks {
		out = append(out, map[string]any{"host": c.Host, "skew_ms": c.SkewMS, "measured_at": c.MeasuredAt})
	}
	return out
}

func profileUse(c *cli.Context) error {
	name, err := oneArg(c, "profile NAME")
	if err != nil {
		return err
	}
	root, err := profiles.Root(c.String("home"))
	if err != nil {
		return err
	}
	if err := profiles.Use(root, name); err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "hermes: active profile is now %s\n", name)
	return nil
}

// filled is a copy of v whose nil slices and maps, at any depth, are empty
// ones, so that --json prints [] and {} for a setting left out, never null.
func filled(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if f := out.Field(i); f.CanSet() {
				f.Set(filled(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return reflect.MakeSlice(v.Type(), 0, 0)
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(filled(v.Index(i)))
		}
		return out
	case reflect.Map:
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), filled(it.Value()))
		}
		return out
	}
	return v
}
