package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/profiles"
)

func memoryCommand() *cli.Command {
	user := &cli.BoolFlag{Name: "user", Usage: "USER.md (what the agent noted about you) instead of MEMORY.md"}
	return &cli.Command{
		Name:  "memory",
		Usage: "what the agent keeps between sessions: MEMORY.md, USER.md and the log of their changes",
		Subcommands: []*cli.Command{
			{Name: "show", Usage: "print MEMORY.md (--user: USER.md) as every new session gets it; how full it is on stderr", ArgsUsage: " ", Flags: []cli.Flag{user}, Action: withEnv(memoryShow)},
			{Name: "add", Usage: "add TEXT as an entry", ArgsUsage: "TEXT", Flags: []cli.Flag{user}, Action: withEnv(memoryAdd)},
			{Name: "edit", Usage: "put NEW in place of the one entry that contains OLD", ArgsUsage: "OLD NEW", Flags: []cli.Flag{user}, Action: withEnv(memoryEdit)},
			{Name: "remove", Usage: "remove the one entry that contains OLD", ArgsUsage: "OLD", Flags: []cli.Flag{user}, Action: withEnv(memoryRemove)},
			{Name: "log", Usage: "every change of both files, oldest first, numbered", ArgsUsage: " ", Action: withEnv(memoryLog)},
			{Name: "revert", Usage: "undo change N (a new change; nothing is deleted)", ArgsUsage: "N", Action: withEnv(memoryRevert)},
		},
	}
}

// memoryStore is the profile's memory with the bounds of config.yaml,
// and whether sessions use it (memory.enabled).
func memoryStore(e *env, cfg profiles.Config) (*memory.Store, bool, error) {
	s := memory.NewStore(e.profile.Dir(), e.lockTimeout, e.warn)
	for _, b := range []struct {
		name  string
		value int
		into  *int
	}{{"memory.max_chars", cfg.Memory.MaxChars, &s.MaxChars}, {"memory.user_max_chars", cfg.Memory.UserMaxChars, &s.UserMaxChars}} {
		if b.value < 0 {
			return nil, false, fsstore.Invalidf("%s must be a positive number of characters", b.name)
		}
		if b.value > 0 {
			*b.into = b.value
		}
	}
	return s, cfg.Memory.Enabled == nil || *cfg.Memory.Enabled, nil
}

// openMemory is the profile's memory for a memory verb, which works
// whether sessions use it or not.
func openMemory(e *env) (*memory.Store, error) {
	cfg, err := e.config()
	if err != nil {
		return nil, err
	}
	s, _, err := memoryStore(e, cfg)
	return s, err
}

func memoryTarget(e *env) string {
	if e.c.Bool("user") {
		return memory.User
	}
	return memory.Memory
}

// verbArgs returns the positional arguments of a verb that takes
// exactly those names.
func verbArgs(e *env, names ...string) ([]string, error) {
	if e.c.NArg() != len(names) {
		want := strings.Join(names, " ")
		if want == "" {
			want = "no arguments"
		}
		return nil, usagef("%s takes %s, got %d arguments", e.c.Command.FullName(), want, e.c.NArg())
	}
	return e.c.Args().Slice(), nil
}

func memoryShow(e *env) error {
	if _, err := verbArgs(e); err != nil {
		return err
	}
	s, err := openMemory(e)
	if err != nil {
		return err
	}
	st, err := s.Read()
	if err != nil {
		return err
	}
	target := memoryTarget(e)
	entries := st.Entries(target)
	if entries == nil {
		entries = []memory.Entry{}
	}
	if e.json {
		return printJSON(e.stdout, map[string]any{"target": target, "path": s.Path(target), "chars": memory.Chars(entries),
			"max_chars": s.Max(target), "entries": entries})
	}
	fmt.Fprint(e.stdout, memory.Render(entries))
	fmt.Fprintf(e.stderr, "hermes: %s\n", s.Usage(st, target))
	return nil
}

func memoryAdd(e *env) error {
	args, err := verbArgs(e, "TEXT")
	if err != nil {
		return err
	}
	return memoryChange(e, "added", func(s *memory.Store, who memory.Who) (memory.Result, error) {
		return s.Add(memoryTarget(e), args[0], who)
	})
}

func memoryEdit(e *env) error {
	args, err := verbArgs(e, "OLD", "NEW")
	if err != nil {
		return err
	}
	return memoryChange(e, "replaced", func(s *memory.Store, who memory.Who) (memory.Result, error) {
		return s.Replace(memoryTarget(e), args[0], args[1], who)
	})
}

func memoryRemove(e *env) error {
	args, err := verbArgs(e, "OLD")
	if err != nil {
		return err
	}
	return memoryChange(e, "removed", func(s *memory.Store, who memory.Who) (memory.Result, error) {
		return s.Remove(memoryTarget(e), args[0], who)
	})
}

func memoryRevert(e *env) error {
	args, err := verbArgs(e, "N")
	if err != nil {
		return err
	}
	seq, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		return usagef("memory revert: %q is not a change number (hermes memory log lists them)", args[0])
	}
	return memoryChange(e, "reverted", func(s *memory.Store, who memory.Who) (memory.Result, error) {
		return s.Revert(seq, who)
	})
}

// memoryChange makes a change as the user and says what it did: the
// change as JSON with --json, else a line on stderr, and the notice of a
// file nearly full as a warning.
func memoryChange(e *env, did string, change func(*memory.Store, memory.Who) (memory.Result, error)) error {
	s, err := openMemory(e)
	if err != nil {
		return err
	}
	r, err := change(s, memory.Who{By: memory.ByUser})
	if err != nil {
		return err
	}
	if e.json {
		printJSON(e.stdout, r)
	} else if r.Change.Seq == 0 {
		fmt.Fprintf(e.stderr, "hermes: %s already holds that entry; nothing changed\n", memory.FileName(r.Change.Target))
	} else {
		fmt.Fprintf(e.stderr, "hermes: %s %s (change %d); %d of %d characters\n", memory.FileName(r.Change.Target), did, r.Change.Seq, r.Chars, r.Max)
	}
	if n := r.Notice(); n != "" {
		e.warn(n)
	}
	return nil
}

func memoryLog(e *env) error {
	if _, err := verbArgs(e); err != nil {
		return err
	}
	s := memory.NewStore(e.profile.Dir(), e.lockTimeout, e.warn)
	out := bufferedOut(e.stdout)
	defer out.Flush()
	var tb *table
	if !e.json {
		tb = newTable(out, "N", "TIME", "BY", "FILE", "CHANGE")
	}
	err := s.Log(func(c memory.Change) {
		if e.json {
			printJSON(out, c)
			return
		}
		what := c.Op + " " + strconv.Quote(entryPreview(c.New))
		switch c.Op {
		case memory.OpRemove:
			what = c.Op + " " + strconv.Quote(entryPreview(c.Old))
		case memory.OpReplace:
			what = fmt.Sprintf("%s %q with %q", c.Op, entryPreview(c.Old), entryPreview(c.New))
		}
		if c.Reverts > 0 {
			what += fmt.Sprintf(" (reverts %d)", c.Reverts)
		}
		by := c.By
		if c.SessionID != "" {
			by += " " + c.SessionID
		}
		tb.row(c.Seq, shortTime(c.TS), by, memory.FileName(c.Target), what)
	})
	if err != nil {
		return err
	}
	if tb != nil {
		return tb.flush()
	}
	return nil
}

// entryPreview is an entry on one line, cut to 60 characters, for a listing.
func entryPreview(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return text
}
