package cmd

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func sessionsForkCommand() *cli.Command {
	return &cli.Command{
		Name:  "fork",
		Usage: "make a new session whose history is the first SEQ messages of ID; ID is not touched",
		Description: `The new session's transcript is a byte-for-byte copy of ID's first SEQ lines
(all of them by default), each keeping its seq and ts; its document has
parent_session_id ID and fork_seq SEQ. It prints the new session's id. A chat
resumes it like any other (hermes chat --resume NEW).`,
		ArgsUsage: "ID|PREFIX|TITLE",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "at", Usage: "the fork point: the new session holds messages 1 to SEQ (default: all)"},
			&cli.StringFlag{Name: "title", Usage: "a title for the new session, unique in the profile"},
		},
		Action: withEnv(sessionsFork),
	}
}

func sessionsFork(e *env) error {
	ref, err := oneArg(e.c, "session ID")
	if err != nil {
		return err
	}
	if e.c.IsSet("at") && e.c.Int64("at") < 1 {
		return usagef("--at must be 1 or more (a new session without history: hermes sessions new)")
	}
	id, err := e.resolveSession(ref)
	if err != nil {
		return err
	}
	child, err := e.sessions().Fork(id, e.c.Int64("at"), e.c.String("title"))
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, child)
	}
	fmt.Fprintln(e.stdout, child.ID)
	return nil
}
