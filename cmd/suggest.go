package cmd

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/profiles"
)

// didYouMean is " (did you mean X?)" for the nearest of candidates, or "".
func didYouMean(typed string, candidates []string) string {
	if n := profiles.Nearest(typed, candidates); n != "" {
		return fmt.Sprintf(" (did you mean %s?)", n)
	}
	return ""
}

func commandNames(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	return names
}

// The flag package's words for an unknown flag and a value it could not
// parse, which usageMessage puts in the command line's; compiled on the
// first usage error rather than at every start.
var (
	undefinedFlag = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	})
	invalidValue = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]*): `)
	})
	missingValue = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	})
)

// usageMessage words a usage error of urfave/cli's flag parsing as hermes
// words its own: flags with two dashes, the nearest flag for an unknown
// one, and what a value should have been.
func usageMessage(c *cli.Context, err error) error {
	msg := err.Error()
	if m := undefinedFlag().FindStringSubmatch(msg); m != nil {
		typed := dashed(m[1])
		return usagef("unknown flag %s%s", typed, didYouMean(typed, flagNames(c)))
	}
	if m := missingValue().FindStringSubmatch(msg); m != nil {
		return usagef("%s needs a value", dashed(m[1]))
	}
	if m := invalidValue().FindStringSubmatch(msg); m != nil {
		return usagef("%s: %q is not %s", dashed(m[2]), m[1], expected(c, m[2]))
	}
	return usageError{err}
}

// dashed is a flag's name as it is typed: -p, --profile.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagNames are the flags a command takes, its own and the global ones,
// with their dashes.
func flagNames(c *cli.Context) []string {
	var names []string
	add := func(flags []cli.Flag) {
		for _, f := range flags {
			for _, n := range f.Names() {
				names = append(names, dashed(n))
			}
		}
	}
	if c.Command != nil {
		add(c.Command.Flags)
	}
	add(c.App.Flags)
	return names
}

// expected says what a flag's value must be, by the flag's kind.
func expected(c *cli.Context, name string) string {
	var flags []cli.Flag
	if c.Command != nil {
		flags = c.Command.Flags
	}
	for _, f := range append(flags, c.App.Flags...) {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			switch f.(type) {
			case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
				return "a whole number"
			case *cli.Float64Flag:
				return "a number"
			case *cli.BoolFlag:
				return "true or false"
			case *cli.DurationFlag:
				return "a duration (90s, 10m, 2h)"
			}
		}
	}
	return "a valid " + strings.TrimLeft(name, "-")
}
