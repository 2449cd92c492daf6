package cmd

import (
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

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
	if e.json {
		return printJSON(e.stdout, map[string]any{
			"name": e.profile.Name, "from": e.profile.From, "root": e.profile.Root,
			"dir": e.profile.Dir(), "config": cfg,
		})
	}
	tb := newTable(e.stdout)
	tb.row("name:", e.profile.Name)
	tb.row("from:", e.profile.From)
	tb.row("root:", e.profile.Root)
	tb.row("dir:", e.profile.Dir())
	tb.row("provider:", dash(cfg.Provider))
	return tb.flush()
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
