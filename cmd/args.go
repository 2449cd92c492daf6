package cmd

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed rewrites args so that flags may stand anywhere: a command's
// flags after its positional arguments (`hermes sessions append ID --role
// user`), and the global flags after the noun or the verb (`hermes
// sessions --json list`, `hermes sessions list --json`). urfave/cli v2 stops parsing flags at the first positional
// argument and knows global flags only before the command. The command's
// flags are moved before its positionals, global flags to the front;
// everything after "--" stays in place.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	flags, cmds := app.Flags, app.Commands
	var global []string
	i := 1
	// Walk the command path: a noun's flags stay where they are, global
	// flags given after a noun go to the front.
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if isFlag(a) {
			dst, set := &out, flags
			if len(out) > 1 && !hasFlag(flags, a) && hasFlag(app.Flags, a) {
				dst, set = &global, app.Flags
			}
			*dst = append(*dst, a)
			if takesValue(set, a) && i+1 < len(args) {
				*dst = append(*dst, args[i+1])
				i++
			}
			i++
			continue
		}
		c := findCommand(cmds, a)
		if c == nil {
			break
		}
		out = append(out, a)
		flags, cmds = c.Flags, c.Subcommands
		i++
		if len(cmds) == 0 {
			break
		}
	}
	path := out
	var moved, positional []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i:]...)
			break
		}
		if !isFlag(a) {
			positional = append(positional, a)
			continue
		}
		dst := &moved
		set := flags
		if !hasFlag(flags, a) && hasFlag(app.Flags, a) {
			dst, set = &global, app.Flags
		}
		*dst = append(*dst, a)
		if takesValue(set, a) && i+1 < len(args) {
			*dst = append(*dst, args[i+1])
			i++
		}
	}
	out = append([]string{path[0]}, global...)
	out = append(out, path[1:]...)
	out = append(out, moved...)
	return append(out, positional...)
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func flagName(a string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name
}

// hasFlag reports whether the flag token a is one of flags.
func hasFlag(flags []cli.Flag, a string) bool {
	return lookupFlag(flags, a) != nil
}

func lookupFlag(flags []cli.Flag, a string) cli.Flag {
	name := flagName(a)
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// takesValue reports whether the flag token a needs the next argument as
// its value: a known non-boolean flag written without "=".
func takesValue(flags []cli.Flag, a string) bool {
	if strings.Contains(a, "=") {
		return false
	}
	f := lookupFlag(flags, a)
	if f == nil {
		return false
	}
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}
