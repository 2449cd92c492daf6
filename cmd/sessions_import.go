package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/importer"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

func sessionsImportCommand() *cli.Command {
	return &cli.Command{
		Name:  "import",
		Usage: "bring in transcripts: hermes snapshots and exports, Claude Code, Codex",
		Description: `Reads FILE (or stdin for -) in the format given by --format or detected:
` + strings.Join(importer.Formats, ", ") + `. A session keeps its source's id. Importing
a session that exists obeys the truncation guard: the import must extend the
stored history (only the new messages are appended), else exit 4 and nothing
changes. Malformed input: exit 2, nothing written.`,
		ArgsUsage: "FILE|-",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Usage: "one of " + strings.Join(importer.Formats, ", ") + " (default: detect)"},
			&cli.BoolFlag{Name: "force", Usage: "replace a stored transcript the import does not extend, keeping the old one beside it"},
		},
		Action: withEnv(sessionsImport),
	}
}

// importResult is one imported session.
type importResult struct {
	SessionID    string `json:"session_id"`
	Status       string `json:"status"` // created, extended, unchanged, replaced
	Appended     int    `json:"appended"`
	MessageCount int64  `json:"message_count"`
}

func sessionsImport(e *env) error {
	name, err := oneArg(e.c, "FILE (or - for stdin)")
	if err != nil {
		return err
	}
	var r io.Reader = e.stdin
	if name != "-" {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			return fsstore.NotFoundf("no file %s", name)
		}
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	// Everything is parsed before anything is written.
	parsed, err := importer.Parse(r, e.c.String("format"))
	if err != nil {
		return err
	}
	store := e.sessions()
	var firstErr error
	for _, in := range parsed {
		res, err := importOne(e, store, in)
		if err != nil {
			fmt.Fprintf(e.stderr, "hermes: import %s: %s\n", dash(in.ID), errorText(err))
			if firstErr == nil {
				firstErr = silentExit{exitCode(err)}
			}
			continue
		}
		if e.json {
			printJSON(e.stdout, res)
		} else {
			fmt.Fprintf(e.stdout, "%s  %s  %d messages\n", res.SessionID, res.Status, res.MessageCount)
		}
	}
	return firstErr
}

func importOne(e *env, store *sessions.Store, in importer.Session) (importResult, error) {
	id := in.ID
	if id != "" && fsstore.CheckID("session id", id) != nil {
		e.warn(fmt.Sprintf("source id %q cannot be a session id; the session gets a new one", id))
		id = ""
	}
	if id != "" {
		if _, err := store.Get(id); err == nil {
			return importInto(e, store, id, in.Messages)
		} else if !errors.Is(err, fsstore.ErrNotFound) {
			return importResult{}, err
		}
	}
	// An imported conversation is history, not a chat in progress: it is
	// ended (reason "imported"), and a chat --resume reopens it. It is
	// created with its transcript in one step, so a failure leaves no
	// session behind.
	sess := sessions.Session{ID: id, Title: in.Title, Source: in.Source, Model: in.Model, State: sessions.StateEnded, EndReason: "imported"}
	if !in.CreatedAt.IsZero() {
		sess.CreatedAt = fsstore.TimeOf(in.CreatedAt)
	}
	created, made, err := store.CreateWith(sess, in.Messages)
	if errors.Is(err, fsstore.ErrRefused) && sess.Title != "" {
		e.warn(fmt.Sprintf("title %q is taken; the imported session has none", sess.Title))
		sess.Title = ""
		created, made, err = store.CreateWith(sess, in.Messages)
	}
	if err != nil {
		return importResult{}, err
	}
	if !made {
		// Created by another writer since it was looked up.
		return importInto(e, store, created.ID, in.Messages)
	}
	return importResult{SessionID: created.ID, Status: "created", Appended: len(in.Messages), MessageCount: created.MessageCount}, nil
}

// importInto imports msgs into session id, which exists: the guarded
// whole-transcript write.
func importInto(e *env, store *sessions.Store, id string, msgs []sessions.Message) (importResult, error) {
	res, err := store.Save(id, msgs, e.c.Bool("force"))
	if err != nil {
		return importResult{}, err
	}
	status := "extended"
	switch {
	case res.Replaced != "":
		status = "replaced"
		e.warn(fmt.Sprintf("replaced transcript of session %s; the old one is kept at %s", id, res.Replaced))
	case res.Appended == 0:
		status = "unchanged"
	}
	return importResult{SessionID: id, Status: status, Appended: res.Appended, MessageCount: res.Count}, nil
}
