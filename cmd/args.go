package cmd

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed rewrites args so that a command's flags may follow its
// positional arguments (`hermes sessions append ID --role user`):
// urfave/cli v2 stops parsing flags at the first positional argument, and
// would take "--role" as one. The flags of the command path found in args
// are moved before its positionals; everything after "--" stays in place.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	flags, cmds := app.Flags, app.Commands
	i := 1
	// Walk the command path: global and noun flags stay where they are.
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if isFlag(a) {
			out = append(out, a)
			if takesValue(flags, a) && i+1 < len(args) {
				out = append(out, args[i+1])
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
		moved = append(moved, a)
		if takesValue(flags, a) && i+1 < len(args) {
			moved = append(moved, args[i+1])
			i++
		}
	}
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

// takesValue reports whether the flag token a needs the next argument as
// its value: a known non-boolean flag written without "=".
func takesValue(flags []cli.Flag, a string) bool {
	name := strings.TrimLeft(a, "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}
