package cmd

import (
	"fmt"
	"sort"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/fsstore/kanban"
)

func kanbanStatsCommand() *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "tasks by status and assignee, runs per task and their outcomes, time spent in each status",
		ArgsUsage: " ",
		Action:    withEnv(kanbanStats),
	}
}

// kanbanStatsReport is what kanban stats prints; --json prints it whole.
type kanbanStatsReport struct {
	Tasks      int                       `json:"tasks"`
	ByStatus   map[string]int            `json:"by_status"`
	ByAssignee map[string]map[string]int `json:"by_assignee"`
	Runs       int                       `json:"runs"`
	MaxRuns    int                       `json:"max_runs"`
	Outcomes   map[string]int            `json:"outcomes"`
	// Seconds is the time all tasks spent in each status, from their
	// events, an open task's current status counted up to now.
	Seconds map[string]float64 `json:"seconds"`
}

// statusAfter is the status an event leaves its task in, "" for an event
// that does not move it. A worker's block that waits for its subtasks
// leaves the task todo, as show names it: its "blocked" is followed by
// "waiting" at the same time.
func statusAfter(ev kanban.Event) kanban.Status {
	switch ev.Type {
	case kanban.EventCreated:
		return kanban.Status(ev.Detail)
	case kanban.EventClaimed:
		return kanban.Running
	case kanban.EventCompleted:
		return kanban.Done
	case kanban.EventBlocked, kanban.EventGaveUp, kanban.EventSpawnFailed:
		return kanban.Blocked
	case kanban.EventUnblocked, kanban.EventReadied, kanban.EventCrashed, kanban.EventProtocolViolation, kanban.EventReclaimed:
		return kanban.Ready
	case kanban.EventArchived:
		return kanban.Archived
	case kanban.EventWaiting:
		return kanban.Todo
	}
	return ""
}

func kanbanStats(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("stats takes no arguments")
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	all, err := board.All()
	if err != nil {
		return err
	}
	if all, err = board.ViewAll(all); err != nil {
		return err
	}
	r := kanbanStatsReport{Tasks: len(all), ByStatus: map[string]int{}, ByAssignee: map[string]map[string]int{},
		Outcomes: map[string]int{}, Seconds: map[string]float64{}}
	now := time.Now()
	for _, t := range all {
		r.ByStatus[string(t.Status)]++
		if r.ByAssignee[t.Assignee] == nil {
			r.ByAssignee[t.Assignee] = map[string]int{}
		}
		r.ByAssignee[t.Assignee][string(t.Status)]++
		r.Runs += len(t.Runs)
		r.MaxRuns = max(r.MaxRuns, len(t.Runs))
		for _, run := range t.Runs {
			if run.Outcome != "" {
				r.Outcomes[run.Outcome]++
			}
		}
		events, err := board.Events(t.ID)
		if err != nil {
			return err
		}
		var cur kanban.Status
		var since time.Time
		for _, ev := range events {
			next := statusAfter(ev)
			at, err := ev.TS.Instant()
			if next == "" || err != nil {
				continue
			}
			if cur != "" {
				r.Seconds[string(cur)] += at.Sub(since).Seconds()
			}
			cur, since = next, at
		}
		if cur != "" && cur != kanban.Done && cur != kanban.Archived {
			r.Seconds[string(cur)] += now.Sub(since).Seconds()
		}
	}
	if e.json {
		return printJSON(e.stdout, r)
	}
	statuses := []kanban.Status{kanban.Todo, kanban.Ready, kanban.Running, kanban.Blocked, kanban.Done, kanban.Archived}
	tb := newTable(e.stdout, "ASSIGNEE", "TODO", "READY", "RUNNING", "BLOCKED", "DONE", "ARCHIVED")
	assignees := make([]string, 0, len(r.ByAssignee))
	for a := range r.ByAssignee {
		assignees = append(assignees, a)
	}
	sort.Strings(assignees)
	row := func(name string, counts map[string]int) {
		cells := []any{name}
		for _, s := range statuses {
			cells = append(cells, counts[string(s)])
		}
		tb.row(cells...)
	}
	for _, a := range assignees {
		row(dash(a), r.ByAssignee[a])
	}
	row("(all)", r.ByStatus)
	tb.flush()
	mean := 0.0
	if r.Tasks > 0 {
		mean = float64(r.Runs) / float64(r.Tasks)
	}
	fmt.Fprintf(e.stdout, "\nruns: %d (%.1f a task, at most %d)", r.Runs, mean, r.MaxRuns)
	outcomes := make([]string, 0, len(r.Outcomes))
	for o := range r.Outcomes {
		outcomes = append(outcomes, o)
	}
	sort.Strings(outcomes)
	for _, o := range outcomes {
		fmt.Fprintf(e.stdout, ", %s %d", o, r.Outcomes[o])
	}
	fmt.Fprintln(e.stdout, "\n\ntime in each status (all tasks):")
	for _, s := range statuses {
		if d, ok := r.Seconds[string(s)]; ok {
			fmt.Fprintf(e.stdout, "  %-9s %s\n", s, (time.Duration(d * float64(time.Second))).Round(time.Second))
		}
	}
	return nil
}
