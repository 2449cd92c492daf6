package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/cron"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
	"github.com/hermes/hermes/profiles"
)

// usageReports are the verbs of usage: each a report of fsstore/usage,
// with the name of its rows' key in --json and the heading of its column.
var usageReports = []struct {
	name, usage, field, heading string
}{
	{"daily", "tokens and cost by day (local time)", "date", "Date"},
	{"monthly", "tokens and cost by month (local time)", "month", "Month"},
	{"session", "tokens and cost by session, the last used last", "session_id", "Session"},
	{"model", "tokens and cost by model as answered", "model", "Model"},
	{"source", "tokens and cost by source: chat, gateway (gateway:<key name>), kanban, cron, import:<format>", "source", "Source"},
}

func usageCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "since", Usage: "only calls from this date (YYYY-MM-DD, local time) or this long ago (30d) on"},
		&cli.StringFlag{Name: "until", Usage: "only calls up to this date, included (YYYY-MM-DD), or until this long ago (7d)"},
		&cli.StringFlag{Name: "model", Usage: "only calls of this model as answered, or a pattern (claude-*)"},
		&cli.StringFlag{Name: "source", Usage: "only calls of sessions of this source (chat, gateway, gateway:<key name>, kanban, cron, import, …)"},
		&cli.StringFlag{Name: "session", Usage: "only calls of this session (ID, prefix or title)"},
	}
	cmd := &cli.Command{
		Name:  "usage",
		Usage: "what the model calls cost: tokens and cost by day, month, session, model or source",
		Description: `Every model call's tokens are stored with the message it produced; a call copied by
a fork or a compression, or imported twice, is counted once. Input is the input read
afresh; cache writes (Cache create) and cache reads are apart, and Total counts each
token once. Cost is computed now from config.yaml's pricing (US dollars per million
tokens, by model or pattern), then from a small shipped table; a call with no price
shows "no price", never a cost of 0.`,
	}
	for _, r := range usageReports {
		cmd.Subcommands = append(cmd.Subcommands, &cli.Command{
			Name:      r.name,
			Usage:     r.usage,
			ArgsUsage: " ",
			Flags:     flags,
			Action: withEnv(func(e *env) error {
				return usageReport(e, r.name, r.field, r.heading)
			}),
		})
	}
	return cmd
}

func usageReport(e *env, by, field, heading string) error {
	if e.c.NArg() > 0 {
		return usagef("%s takes no arguments", by)
	}
	f, err := usageFilter(e, time.Now())
	if err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	rows, total, err := usage.Report(e.rollup(), by, f, usage.Table{Config: cfg.Pricing})
	if err != nil {
		return err
	}
	out := bufferedOut(e.stdout)
	if e.json {
		for _, r := range rows {
			if err := printJSON(out, usageJSON(r, by, field)); err != nil {
				return err
			}
		}
		return out.Flush()
	}
	// A session's row says what it is; a model's needs no list of models.
	header := []string{heading}
	switch by {
	case "session":
		header = append(header, "Title", "Source", "Models")
	case "model":
	default:
		header = append(header, "Models")
	}
	t := newTable(out, append(header, "Input", "Output", "Cache create", "Cache read", "Total", "Cost (USD)")...)
	line := func(r usage.Row) {
		cells := []any{r.Key}
		switch by {
		case "session":
			cells = append(cells, r.Title, r.Source, strings.Join(r.Models, ", "))
		case "model":
		default:
			cells = append(cells, strings.Join(r.Models, ", "))
		}
		cells = append(cells, thousands(r.Input), thousands(r.Output),
			thousands(r.CacheCreate), thousands(r.CacheRead), thousands(r.Total), costText(r))
		t.row(cells...)
	}
	for _, r := range rows {
		line(r)
	}
	if len(rows) > 0 {
		total.Models = nil
		line(total)
	}
	if err := t.flush(); err != nil {
		return err
	}
	return out.Flush()
}

// rollup opens the profile's usage roll-up.
func (e *env) rollup() *usage.Rollup {
	return usage.NewRollup(e.profile.Dir(), e.sessions(), e.lockTimeout, e.warn)
}

// usageFilter reads the flags that pick calls, now being the time
// durations count back from.
func usageFilter(e *env, now time.Time) (usage.Filter, error) {
	var f usage.Filter
	var err error
	if f.Since, err = usageTime(e, "since", now, false); err != nil {
		return f, err
	}
	if f.Until, err = usageTime(e, "until", now, true); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, usagef("--since %s is not before --until %s", e.c.String("since"), e.c.String("until"))
	}
	f.Model, f.Source = e.c.String("model"), e.c.String("source")
	if ref := e.c.String("session"); ref != "" {
		if f.Session, err = e.resolveSession(ref); err != nil {
			return f, err
		}
	}
	return f, nil
}

// usageTime reads flag name: a date (YYYY-MM-DD or YYYYMMDD, local time),
// its start, or the day after it for an end; or a duration back from now.
func usageTime(e *env, name string, now time.Time, end bool) (time.Time, error) {
	s := e.c.String(name)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.DateOnly, "20060102"} {
		if d, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			if end {
				d = d.AddDate(0, 0, 1)
			}
			return d, nil
		}
	}
	d, err := profiles.ParseDuration(s)
	if err != nil {
		return time.Time{}, usagef("--%s: %q is neither a date (YYYY-MM-DD) nor a duration (30d)", name, s)
	}
	return now.Add(-d), nil
}

// usageJSON is a report's row as --json prints it: cost is null when no
// call of the row has a price, and no_price_calls counts the calls left
// out of it.
func usageJSON(r usage.Row, by, field string) map[string]any {
	obj := map[string]any{
		field: r.Key, "models": r.Models, "calls": r.Calls,
		"input": r.Input, "output": r.Output, "cache_create": r.CacheCreate, "cache_read": r.CacheRead,
		"total": r.Total, "reasoning": r.Reasoning, "cost": nil, "no_price_calls": r.Unpriced,
		"price_table": usage.ShippedDate,
	}
	if r.Models == nil {
		obj["models"] = []string{}
	}
	if r.Priced() {
		obj["cost"] = r.Cost
	}
	if by == "session" {
		obj["title"], obj["source"] = r.Title, r.Source
	}
	return obj
}

// costText is a row's cost as the table shows it: "no price" for calls
// that have none, never a cost of 0.
func costText(r usage.Row) string {
	switch {
	case !r.Priced():
		return "no price"
	case r.Unpriced > 0:
		if r.Unpriced == 1 {
			return money(r.Cost) + " + no price (1 call)"
		}
		return fmt.Sprintf("%s + no price (%d calls)", money(r.Cost), r.Unpriced)
	}
	return money(r.Cost)
}

// money is a cost in dollars and cents; a cost above 0 that rounds to
// 0.00 is "<0.01", never a cost of 0.
func money(c float64) string {
	if c > 0 && c < 0.005 {
		return "<0.01"
	}
	return fmt.Sprintf("%.2f", c)
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// showUsage adds to sessions show the tokens and cost of the session's
// own calls (usage.SessionRow), when it has any. A config.yaml that
// cannot be read leaves the cost unknown, saying why; show still works,
// as listings do.
func showUsage(e *env, tb *table, st *sessions.Store, id string) error {
	cfg, cerr := e.config()
	r, err := usage.SessionRow(st, id, usage.Table{Config: cfg.Pricing})
	if err != nil || r.Calls == 0 {
		return err
	}
	tb.row("tokens:", fmt.Sprintf("%s input, %s output, %s cache create, %s cache read, %s total (%d calls)",
		thousands(r.Input), thousands(r.Output), thousands(r.CacheCreate), thousands(r.CacheRead), thousands(r.Total), r.Calls))
	if cerr != nil {
		tb.row("cost:", "unknown: "+cerr.Error())
	} else {
		tb.row("cost:", costText(r))
	}
	return nil
}

// sessionsListUsage is sessions list with each session's tokens and cost
// (--usage), in order of activity or, with --sort cost, the costliest
// first (a session with no price last, then by tokens). Both come from
// the session report: a call copied by a fork or a compression is its
// oldest holder's. --json adds "usage", the report's row ({} for a
// session with no call), to each session.
func sessionsListUsage(e *env) error {
	by := e.c.String("sort")
	if by != "activity" && by != "cost" {
		return usagef("unknown --sort %q (activity, cost)", by)
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	st := e.sessions()
	rows, _, err := usage.Report(e.rollup(), "session", usage.Filter{}, usage.Table{Config: cfg.Pricing})
	if err != nil {
		return err
	}
	byID := map[string]usage.Row{}
	for _, r := range rows {
		byID[r.Key] = r
	}
	limit := e.c.Int("limit")
	parent, err := listParent(e)
	if err != nil {
		return err
	}
	opts := sessions.ListOptions{Limit: limit, Source: e.c.String("source"), State: e.c.String("state"), Parent: parent}
	if by == "cost" {
		opts.Limit = 0
	}
	list, err := st.List(opts)
	if err != nil {
		return err
	}
	if by == "cost" {
		sort.SliceStable(list, func(i, j int) bool {
			a, b := byID[list[i].ID], byID[list[j].ID]
			if a.Priced() != b.Priced() {
				return a.Priced()
			}
			if a.Cost != b.Cost {
				return a.Cost > b.Cost
			}
			return a.Total > b.Total
		})
		if limit > 0 && len(list) > limit {
			list = list[:limit]
		}
	}
	out := bufferedOut(e.stdout)
	if e.json {
		for _, s := range list {
			if err := withUsage(out, s, byID[s.ID], "session", "session_id"); err != nil {
				return err
			}
		}
		return out.Flush()
	}
	tb := newTable(out, "ID", "TITLE", "STATE", "MSGS", "LAST ACTIVITY", "TOKENS", "COST", "PREVIEW")
	for _, s := range list {
		tokens, cost := "-", "-"
		if r, ok := byID[s.ID]; ok {
			tokens, cost = thousands(r.Total), costText(r)
		}
		tb.row(s.ID, dash(s.Title), s.State, s.MessageCount, shortTime(s.UpdatedAt), tokens, cost, dash(s.Preview))
	}
	if err := tb.flush(); err != nil {
		return err
	}
	return out.Flush()
}

// runsUsage sums what the sessions a kanban task's runs ran in spent,
// each session once (a resumed worker's runs share one): each one's own
// calls (usage.SessionRow), in the profile that ran it, priced by this
// profile's table. A session removed since counts nothing.
func runsUsage(e *env, runs []kanban.Run, t usage.Table) (usage.Row, error) {
	var sum usage.Row
	seen := map[string]bool{}
	for _, run := range runs {
		key := run.Profile + "/" + run.SessionID
		if run.SessionID == "" || seen[key] || profiles.CheckName(run.Profile) != nil {
			continue
		}
		seen[key] = true
		p := profiles.Profile{Root: e.profile.Root, Name: run.Profile}
		st := sessions.NewStore(p.Dir(), p.Name, e.lockTimeout, e.warn)
		r, err := usage.SessionRow(st, run.SessionID, t)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return sum, err
		}
		sum.Add(r)
	}
	return sum, nil
}

// showRunsUsage adds a kanban task's tokens and cost over its runs to
// kanban show, when they made any call.
func showRunsUsage(e *env, tb *table, runs []kanban.Run) error {
	cfg, cerr := e.config()
	r, err := runsUsage(e, runs, usage.Table{Config: cfg.Pricing})
	if err != nil || r.Calls == 0 {
		return err
	}
	tb.row("tokens:", fmt.Sprintf("%s input, %s output, %s cache create, %s cache read, %s total (%d calls)",
		thousands(r.Input), thousands(r.Output), thousands(r.CacheCreate), thousands(r.CacheRead), thousands(r.Total), r.Calls))
	if cerr != nil {
		tb.row("cost:", "unknown: "+cerr.Error())
	} else {
		tb.row("cost:", costText(r))
	}
	return nil
}

// cronRunsUsage returns what each of runs spent: the calls of its session
// made between its start and its end (now, for a run still going), so that
// the runs of a job whose runs share one session (--session continue) each
// count their own; an entry of a run with no session or no call is a Row
// of no call. A listing works without the configuration: when it cannot
// be read, no call has a price.
func cronRunsUsage(e *env, runs []cron.RunRecord) ([]usage.Row, error) {
	cfg, cerr := e.config()
	t := usage.Table{Config: cfg.Pricing}
	st := e.sessions()
	out := make([]usage.Row, len(runs))
	for i, r := range runs {
		from, err := r.StartedAt.Instant()
		if r.SessionID == "" || err != nil {
			continue
		}
		f := usage.Filter{Since: from}
		if to, err := r.FinishedAt.Instant(); err == nil {
			f.Until = to.Add(time.Millisecond)
		}
		row, err := usage.SessionRowIn(st, r.SessionID, f, t)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if cerr != nil {
			row.Cost, row.Unpriced = 0, row.Calls
		}
		out[i] = row
	}
	return out, nil
}

// withUsage writes v, a JSON object, with "usage" added: r as a report
// row, or {} for no call (--json prints no null where a record is
// absent).
func withUsage(w io.Writer, v any, r usage.Row, by, field string) error {
	head, err := jsonObjectOpen(v)
	if err != nil {
		return err
	}
	var u any = struct{}{}
	if r.Calls > 0 {
		u = usageJSON(r, by, field)
	}
	tail, err := json.Marshal(u)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s,\"usage\":%s}\n", head, tail)
	return err
}
