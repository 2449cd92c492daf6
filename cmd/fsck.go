package cmd

import (
	"fmt"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/gateway"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/cron"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/hosts"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/skills"
	"github.com/hermes/hermes/fsstore/tasks"
	"github.com/hermes/hermes/profiles"
)

func fsckCommand() *cli.Command {
	return &cli.Command{
		Name:      "fsck",
		Usage:     "check every session, task, board task, gateway document and scheduled job of the profile, and who can write its configuration; exit 0 when clean, 1 when problems remain",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "repair", Usage: "fix what can be fixed without deleting a byte (move aside, never remove)"},
			&cli.BoolFlag{Name: "stats", Usage: "say how many sessions were checked and at what rate (the default on a terminal)"},
		},
		Action: withEnv(fsck),
	}
}

// fsckHalfHeadroomFrom is the size of the activity catalog from which
// fsck gives the collector half its default headroom (about 3,000
// sessions' lines).
const fsckHalfHeadroomFrom = 1 << 20

func fsck(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("fsck takes no arguments")
	}
	repair := e.c.Bool("repair")
	// What the check keeps is small and fixed per session; what it reads
	// and drops (every document decoded, every catalog line) is many
	// times that. Half the default headroom over the kept set holds the
	// peak at 100,000 sessions under 64 MB for a few more collections.
	// A small profile keeps the default: its whole check allocates less
	// than the collector's first goal (4 MB), which half the headroom
	// halves into a collection of its own, a fifth of fsck's processor
	// time on a profile of a few sessions.
	if size, err := e.sessions().CatalogSize(); err != nil || size >= fsckHalfHeadroomFrom {
		debug.SetGCPercent(50)
	}
	lostFound := filepath.Join(e.profile.Dir(), "lost+found")
	findings, err := unsafeFindings(e)
	if err != nil {
		return err
	}
	start := time.Now()
	more, checked, err := e.sessions().CheckSessions(repair, lostFound)
	if err != nil {
		return err
	}
	findings = append(findings, more...)
	took := time.Since(start)
	dir := e.profile.Dir()
	for _, check := range []func(bool, string) ([]fsstore.Finding, error){
		tasks.NewStore(dir, e.lockTimeout, e.warn).Check,
		kanban.NewBoard(dir, e.lockTimeout, e.warn).Check,
		gatewaystate.NewStore(dir, e.lockTimeout, e.warn).Check,
		cron.NewStore(dir, e.lockTimeout, e.warn).Check,
		memory.NewStore(dir, e.lockTimeout, e.warn).Check,
		skills.NewStore(dir, e.lockTimeout, e.warn).Check,
		func(repair bool, _ string) ([]fsstore.Finding, error) { return e.sessions().CheckLocks(repair) },
		func(repair bool, lostFound string) ([]fsstore.Finding, error) {
			return checkpoints.Open(dir).Check(e.sessions(), repair, lostFound)
		},
		e.rollup().Check,
		func(repair bool, lostFound string) ([]fsstore.Finding, error) {
			return hosts.Check(dir, repair, lostFound)
		},
		subagentStore(e).Check,
	} {
		more, err := check(repair, lostFound)
		if err != nil {
			return err
		}
		findings = append(findings, more...)
	}
	if repair {
		// The gateway's history index is a cache written without a sync:
		// entries a power cut lost are written again from the transcripts.
		gs := gatewaystate.NewStore(dir, e.lockTimeout, e.warn)
		n, err := gateway.RebuildHistory(e.sessions(), gs)
		if err != nil {
			return err
		}
		if n > 0 {
			findings = append(findings, fsstore.Finding{Path: filepath.Join(gs.Dir, "history"),
				What: fmt.Sprintf("history index entries written from the transcripts: %d", n), Repaired: true})
		}
		// So are the response documents whose transcript lines carry them,
		// but those evicted: how many are kept is configuration, which
		// fsck otherwise does without (a profile it cannot load is left).
		responses := filepath.Join(gs.Dir, "responses")
		if cfg, err := e.config(); err != nil {
			findings = append(findings, fsstore.Finding{Path: responses,
				What: fmt.Sprintf("response documents not rebuilt from the transcripts: %v", err)})
		} else if n, err = gateway.RebuildResponses(e.sessions(), gs, cfg.Gateway.MaxStoredResponses); err != nil {
			return err
		} else if n > 0 {
			findings = append(findings, fsstore.Finding{Path: responses,
				What: fmt.Sprintf("response documents written from the transcripts: %d", n), Repaired: true})
		}
		// So are the conversations' first mappings, from their sessions.
		if n, err = gateway.LevelConversations(e.sessions(), gs, time.Time{}); err != nil {
			return err
		} else if n > 0 {
			findings = append(findings, fsstore.Finding{Path: filepath.Join(gs.Dir, "conversations"),
				What: fmt.Sprintf("conversation mappings written from their sessions: %d", n), Repaired: true})
		}
	}
	if e.c.Bool("stats") || isTerminalWriter(e.stderr) {
		on := ""
		if fs, ok := fsstore.NetworkFS(dir); ok {
			on = ", on a network filesystem (" + fs.Type + ")"
		}
		fmt.Fprintf(e.stderr, "hermes: fsck: profile %s: %d sessions checked in %.2fs (%.0f sessions/s)%s\n",
			e.profile.Name, checked, took.Seconds(), float64(checked)/max(took.Seconds(), 1e-6), on)
	}
	problems := 0
	for _, f := range findings {
		if f.Problem && !f.Repaired {
			problems++
		}
		if e.json {
			printJSON(e.stdout, f)
			continue
		}
		tag := "note"
		switch {
		case f.Repaired:
			tag = "repaired"
		case f.Problem:
			tag = "problem"
		}
		fmt.Fprintf(e.stdout, "%s: %s: %s\n", tag, f.Path, f.What)
	}
	if problems > 0 {
		fmt.Fprintf(e.stderr, "hermes: fsck: profile %s: problems left: %d\n", e.profile.Name, problems)
		return silentExit{ExitFailed}
	}
	return nil
}

// unsafeFindings are the problems that make every command refuse the
// profile's configuration (profiles.Unsafe), each with its fix. --repair
// leaves them: a profile that others could write may hold what they
// planted, which a chmod would make look like the user's own; the user
// reads it first, then runs the chmod.
func unsafeFindings(e *env) ([]fsstore.Finding, error) {
	unsafe, err := profiles.Unsafe(e.profile)
	if err != nil {
		return nil, err
	}
	var out []fsstore.Finding
	for _, u := range unsafe {
		out = append(out, fsstore.Finding{Path: u.Path, Problem: true,
			What: fmt.Sprintf("%s is %s: hermes refuses to load this profile's configuration (fix with: %s)", u.Role, u.Problem, u.Fix)})
	}
	return out, nil
}
