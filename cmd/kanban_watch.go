package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/profiles"
)

func kanbanWatchCommand() *cli.Command {
	return &cli.Command{
		Name:      "watch",
		Usage:     "print the board's events (or one task's) as they are committed, a line each, until interrupted",
		ArgsUsage: "[ID]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "since", Usage: "first the events later than this time (an event's ts)"},
			&cli.StringFlag{Name: "after", Usage: "first the events after this cursor (an event's cursor, with --json: resume exactly where a watch stopped)"},
			&cli.BoolFlag{Name: "once", Usage: "print the events since --since or after --after (else the last --last), then exit"},
			&cli.IntFlag{Name: "last", Value: 20, Usage: "with --once and neither --since nor --after: how many of the board's last events"},
			&cli.StringFlag{Name: "interval", Value: "200ms", Usage: "how often the events logs are looked at"},
		},
		Action: withEnv(kanbanWatch),
	}
}

// kanbanWatch prints committed events: TS TASK TYPE [run RUN] [DETAIL],
// or with --json each event with its task_id and cursor. Without --since
// or --after it starts now, but --once prints the board's last --last
// events.
func kanbanWatch(e *env) error {
	if e.c.NArg() > 1 {
		return usagef("watch takes at most one task ID")
	}
	id := e.c.Args().First()
	if id != "" {
		if err := fsstore.CheckID("task id", id); err != nil {
			return err
		}
	}
	since := fsstore.TimeOf(time.Now())
	var after *kanban.Cursor
	switch s, a := e.c.String("since"), e.c.String("after"); {
	case s != "" && a != "":
		return usagef("--since and --after cannot be used together")
	case s != "":
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return usagef("--since %q is not an RFC 3339 time (an event's ts)", s)
		}
		since = fsstore.TimeOf(at)
	case a != "":
		c, err := kanban.ParseCursor(a)
		if err != nil {
			return err
		}
		after = &c
	case e.c.Bool("once"):
		// The board's last events: all read, the last --last printed.
		since = ""
	}
	last := 0
	if e.c.IsSet("last") {
		if !e.c.Bool("once") || e.c.IsSet("since") || e.c.IsSet("after") {
			return usagef("--last goes with --once and neither --since nor --after")
		}
	}
	if e.c.Bool("once") && since == "" {
		if last = e.c.Int("last"); last < 1 {
			return usagef("--last must be 1 or more, not %d", last)
		}
	}
	interval, err := durationFlag(e.c, "interval", profiles.ParsePeriod)
	if err != nil {
		return err
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	var w *kanban.Watcher
	if after != nil {
		w, err = board.WatchAfter(id, *after)
	} else {
		w, err = board.Watch(id, since)
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		events, err := w.Poll()
		if last > 0 && len(events) > last {
			events = events[len(events)-last:]
		}
		for _, ev := range events {
			printWatched(e, ev)
		}
		if err != nil {
			return err
		}
		if e.c.Bool("once") {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func printWatched(e *env, ev kanban.TaskEvent) {
	if e.json {
		printJSON(e.stdout, ev)
		return
	}
	line := fmt.Sprintf("%s %s %s", ev.TS, ev.TaskID, ev.Type)
	if ev.RunID != "" {
		line += " run " + ev.RunID
	}
	if ev.Detail != "" {
		line += " " + ev.Detail
	}
	fmt.Fprintln(e.stdout, line)
}
