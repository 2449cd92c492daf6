package cmd

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// nearest is the candidate closest to typed by edit distance, when it is
// close enough to be a typing slip (at most a third of its length, and
// at most 2 edits); "" when none is.
func nearest(typed string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := editDistance(typed, c)
		if d > 0 && d < bestD && d*3 <= max(len(c), len(typed)) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes (names
// and flags are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// didYouMean is " (did you mean X?)" for the nearest of candidates, or "".
func didYouMean(typed string, candidates []string) string {
	if n := nearest(typed, candidates); n != "" {
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
// parse, which usageMessage puts in the command line's.
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	invalidValue  = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]*): `)
	missingValue  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// usageMessage words a usage error of urfave/cli's flag parsing as hermes
// words its own: flags with two dashes, the nearest flag for an unknown
// one, and what a value should have been.
func usageMessage(c *cli.Context, err error) error {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		typed := dashed(m[1])
		return usagef("unknown flag %s%s", typed, didYouMean(typed, flagNames(c)))
	}
	if m := missingValue.FindStringSubmatch(msg); m != nil {
		return usagef("%s needs a value", dashed(m[1]))
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
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
