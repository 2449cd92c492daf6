package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/profiles"
)

// checkpoints opens the profile's checkpoint store with cfg's bounds.
func (e *env) checkpoints(cfg profiles.Config) *checkpoints.Store {
	s := checkpoints.Open(e.profile.Dir())
	s.MaxFile = cfg.Checkpoints.MaxFile
	s.LockTimeout = e.lockTimeout
	return s
}

func checkpointsCommand() *cli.Command {
	restoreFlags := []cli.Flag{
		&cli.BoolFlag{Name: "force", Usage: "restore files changed since the agent's last change too, after storing their present bytes"},
		&cli.BoolFlag{Name: "dry-run", Usage: "say what would be restored, change nothing"},
	}
	return &cli.Command{
		Name:  "checkpoints",
		Usage: "files as they were before the agent changed them, to see and put back",
		Description: `Before write_file or edit_file changes a file, its bytes are stored under
the profile (checkpoints/), and the tool's message in the session records the
change: a checkpoint's id is SESSION:SEQ, the message that holds it. A restore
puts files back only where they still hold what the agent wrote; a file
changed since is a conflict, listed on stderr and left (exit 4), unless
--force. A restore is itself recorded, in a note of the session, so that it
can be taken back the same way.`,
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "the checkpoints of a session (of every session without one), oldest first",
				ArgsUsage: "[ID|PREFIX|TITLE]",
				Action:    withEnv(checkpointsList),
			},
			{
				Name:      "show",
				Usage:     "the files a checkpoint changed",
				ArgsUsage: "SESSION:SEQ",
				Action:    withEnv(checkpointsShow),
			},
			{
				Name:      "diff",
				Usage:     "the unified diff of each file a checkpoint changed: its bytes before, against the file now",
				ArgsUsage: "SESSION:SEQ [PATH]",
				Action:    withEnv(checkpointsDiff),
			},
			{
				Name:  "prune",
				Usage: "remove the objects no checkpoint refers to, and bound the store by age and size",
				Description: `Objects no checkpoint refers to (a session deleted or pruned took its
checkpoints with it) are removed once an hour old. Then objects whose newest
checkpoint is older than --max-age (checkpoints.max_age, default 30d), then
the oldest until the store is within --max-bytes (checkpoints.max_bytes,
default 1 GiB). The checkpoints that referred to a removed object are kept,
marked unrestorable: a restore names their files and exits 4.`,
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "max-age", Usage: "e.g. 30d (default checkpoints.max_age, else 30d)"},
					&cli.Int64Flag{Name: "max-bytes", Usage: "bytes (default checkpoints.max_bytes, else 1 GiB)"},
					&cli.BoolFlag{Name: "dry-run", Usage: "list what would be removed, remove nothing"},
				},
				Action: withEnv(checkpointsPrune),
			},
			{
				Name:      "restore",
				Usage:     "take back the changes of one checkpoint",
				ArgsUsage: "SESSION:SEQ",
				Flags:     restoreFlags,
				Action:    withEnv(checkpointsRestore),
			},
		},
	}
}

// sessionRecords returns the checkpoint records of session id.
func sessionRecords(st *sessions.Store, id string) ([]checkpoints.Record, []sessions.Message, error) {
	msgs, err := st.Messages(id)
	if err != nil {
		return nil, nil, err
	}
	recs, err := checkpoints.Records(id, msgs)
	return recs, msgs, err
}

func checkpointsList(e *env) error {
	st := e.sessions()
	var ids []string
	switch e.c.NArg() {
	case 0:
		all, err := st.List(sessions.ListOptions{})
		if err != nil {
			return err
		}
		for i := len(all) - 1; i >= 0; i-- {
			ids = append(ids, all[i].ID)
		}
	case 1:
		id, err := e.resolveSession(e.c.Args().First())
		if err != nil {
			return err
		}
		ids = []string{id}
	default:
		return usagef("expected at most one session ID, got %d arguments", e.c.NArg())
	}
	tb := newTable(e.stdout, "ID", "TIME", "FILES", "PATHS")
	for _, id := range ids {
		recs, _, err := sessionRecords(st, id)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if e.json {
				if err := printJSON(e.stdout, recordJSON(r)); err != nil {
					return err
				}
				continue
			}
			tb.row(r.ID(), r.TS, len(r.Changes), strings.Join(checkpoints.Paths(r.Changes), " "))
		}
	}
	if e.json {
		return nil
	}
	return tb.flush()
}

// recordJSON is a record as --json prints it, with its id.
func recordJSON(r checkpoints.Record) any {
	return struct {
		ID string `json:"id"`
		checkpoints.Record
	}{r.ID(), r}
}

// findRecord returns the record ref names (SESSION:SEQ, the session as
// an id, prefix or title) and its session's records.
func findRecord(e *env, ref string) (checkpoints.Record, error) {
	sref, seq, err := checkpoints.ParseID(ref)
	if err != nil {
		return checkpoints.Record{}, err
	}
	id, err := e.resolveSession(sref)
	if err != nil {
		return checkpoints.Record{}, err
	}
	recs, _, err := sessionRecords(e.sessions(), id)
	if err != nil {
		return checkpoints.Record{}, err
	}
	for _, r := range recs {
		if r.Seq == seq {
			return r, nil
		}
	}
	return checkpoints.Record{}, fsstore.NotFoundf("message %d of session %s records no file change (hermes checkpoints list %s)", seq, id, id)
}

// changeKind says what a change did, for a table.
func changeKind(c checkpoints.Change) string {
	switch {
	case c.NotCheckpointed != "":
		return "not checkpointed: " + c.NotCheckpointed
	case c.Created:
		return "created"
	case c.Removed:
		return "removed"
	}
	return "changed"
}

func checkpointsShow(e *env) error {
	ref, err := oneArg(e.c, "checkpoint SESSION:SEQ")
	if err != nil {
		return err
	}
	r, err := findRecord(e, ref)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, recordJSON(r))
	}
	tb := newTable(e.stdout, "PATH", "CHANGE", "MODE", "BEFORE", "AFTER")
	short := func(h string) string {
		if h == "" {
			return "-"
		}
		return checkpoints.ShortHash(h)
	}
	for _, c := range r.Changes {
		mode := c.Mode
		if mode == "" {
			mode = "-"
		}
		tb.row(c.Path, changeKind(c), mode, short(c.Before), short(c.After))
	}
	return tb.flush()
}

func checkpointsRestore(e *env) error {
	ref, err := oneArg(e.c, "checkpoint SESSION:SEQ")
	if err != nil {
		return err
	}
	r, err := findRecord(e, ref)
	if err != nil {
		return err
	}
	text := fmt.Sprintf("The files changed by message %d were restored to their state before it (hermes checkpoints restore %s).", r.Seq, r.ID())
	return restoreFiles(e, r.SessionID, []checkpoints.Record{r}, text, e.c.Bool("force"), e.c.Bool("dry-run"))
}

// restoreFiles takes back the changes of recs for session sid, where the
// restore is recorded with a note saying text; it prints what it did, the
// conflicts and the files it could not restore on stderr, and refuses
// (exit 4) when it left any.
func restoreFiles(e *env, sid string, recs []checkpoints.Record, text string, force, dry bool) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := agent.Restore(ctx, e.sessions(), e.checkpoints(cfg), sid, checkpoints.Plan(recs), force, dry, text)
	if err != nil {
		return err
	}
	if e.json {
		if err := printJSON(e.stdout, res); err != nil {
			return err
		}
	} else {
		verb := "restored"
		if dry {
			verb = "would restore"
		}
		for _, c := range res.Changes {
			what := c.Path
			if c.Removed {
				what += " (removed: the agent created it)"
			}
			fmt.Fprintf(e.stdout, "%s %s\n", verb, what)
		}
	}
	for _, s := range res.Conflicts {
		fmt.Fprintf(e.stderr, "hermes: conflict: %s: %s\n", s.Path, s.Reason)
	}
	for _, s := range res.Lost {
		fmt.Fprintf(e.stderr, "hermes: cannot restore %s: %s\n", s.Path, s.Reason)
	}
	if left := len(res.Conflicts) + len(res.Lost); left > 0 {
		return fsstore.Refusedf("%d files restored, %d left as they are", len(res.Changes), left)
	}
	return nil
}

func checkpointsPrune(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("prune takes no arguments")
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	age := cfg.Checkpoints.MaxAge
	if e.c.IsSet("max-age") {
		age = e.c.String("max-age")
	}
	maxAge, err := durationSetting("checkpoints.max_age", age, checkpoints.DefaultMaxAge, profiles.ParsePeriod)
	if err != nil {
		return err
	}
	maxBytes := cfg.Checkpoints.MaxBytes
	if e.c.IsSet("max-bytes") {
		maxBytes = e.c.Int64("max-bytes")
	}
	switch {
	case maxBytes < 0:
		return fsstore.Invalidf("checkpoints.max_bytes must be a positive number of bytes, not %d", maxBytes)
	case maxBytes == 0:
		maxBytes = checkpoints.DefaultMaxBytes
	}
	dry := e.c.Bool("dry-run")
	out, err := e.checkpoints(cfg).Prune(e.sessions(), checkpoints.PruneOptions{MaxAge: maxAge, MaxBytes: maxBytes, Now: time.Now(), DryRun: dry})
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	var bytes int64
	for _, p := range out {
		bytes += p.Size
		if e.json {
			printJSON(e.stdout, p)
			continue
		}
		fmt.Fprintf(e.stdout, "%s %s (%d bytes): %s\n", verb, p.Hash, p.Size, p.Why)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "hermes: %s %d checkpoint objects, %d bytes\n", verb, len(out), bytes)
	return nil
}

// pruneOrphans removes the checkpoint objects no session refers to any
// more, after a session delete or prune: a session takes its checkpoints
// with it. A profile without checkpoints costs nothing; a failure is a
// warning (checkpoints prune, or the next delete, removes them).
func pruneOrphans(e *env) {
	store := checkpoints.Open(e.profile.Dir())
	if _, err := os.Stat(filepath.Join(store.Dir, "objects")); err != nil {
		return
	}
	out, err := store.Prune(e.sessions(), checkpoints.PruneOptions{Now: time.Now()})
	if err != nil {
		e.warn(fmt.Sprintf("checkpoint objects of removed sessions are left: %v (hermes checkpoints prune removes them)", err))
		return
	}
	if len(out) > 0 {
		fmt.Fprintf(e.stderr, "hermes: removed %d checkpoint objects no session refers to any more\n", len(out))
	}
}
