package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/importer"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

func sessionsImportCommand() *cli.Command {
	return &cli.Command{
		Name:  "import",
		Usage: "bring in transcripts: hermes snapshots and exports, Claude Code, Codex",
		Description: `Reads FILE (or stdin for -) in the format given by --format or detected:
` + strings.Join(importer.Formats, ", ") + `. A session keeps its source's id. Importing
a session that exists obeys the truncation guard: the import must extend the
stored history (only the new messages are appended), else exit 4 and nothing
changes. Malformed input: exit 2, nothing written.

DIR (~/.claude/projects, ~/.codex/sessions, ~/.hermes/sessions) is walked:
every .json and .jsonl file below it is imported in turn, a file that is no
transcript is skipped, and a second run changes nothing. One bad file is
reported and the others go on; the exit code is 1 when any file failed, else
4 when any was refused by the guard. The summary counts created, extended,
unchanged, refused, failed and skipped, per format.`,
		ArgsUsage: "FILE|DIR|-",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Usage: "one of " + strings.Join(importer.Formats, ", ") + " (default: detect)"},
			&cli.BoolFlag{Name: "force", Usage: "replace a stored transcript the import does not extend, keeping the old one beside it"},
		},
		Action: withEnv(sessionsImport),
	}
}

// importResult is what became of one imported session, or of a file that
// gave none (skipped, failed).
type importResult struct {
	File         string         `json:"file,omitempty"`   // a directory import's file
	Format       string         `json:"format,omitempty"` // a directory import's file's format
	SessionID    string         `json:"session_id"`
	Status       string         `json:"status"` // created, extended, unchanged, replaced, refused, failed, skipped
	Appended     int            `json:"appended"`
	MessageCount int64          `json:"message_count"`
	Skipped      map[string]int `json:"skipped,omitempty"` // the source's lines or items that hold no message, by type
	Error        string         `json:"error,omitempty"`
}

func (r importResult) print(w io.Writer) {
	fmt.Fprintf(w, "%s  %s  %d messages", r.SessionID, r.Status, r.MessageCount)
	if len(r.Skipped) > 0 {
		var parts []string
		for _, k := range sortedKeys(r.Skipped) {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.Skipped[k]))
		}
		fmt.Fprintf(w, "  (skipped: %s)", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
}

func sessionsImport(e *env) error {
	name, err := oneArg(e.c, "FILE, DIR (or - for stdin)")
	if err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	limit, err := maxLineSetting(cfg)
	if err != nil {
		return err
	}
	r := limitLines(e.stdin, "stdin", limit)
	if name != "-" {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			return fsstore.NotFoundf("no file %s", name)
		}
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return importDir(e, name, limit)
		}
		r = limitLines(f, "", limit)
	}
	// Everything is parsed before anything is written.
	parsed, err := importer.Parse(r, e.c.String("format"))
	if err != nil && name != "-" {
		// Named as a directory import names each file.
		return fmt.Errorf("import %s: %w", name, err)
	}
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
			res.print(e.stdout)
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
	if id != "" && fsstore.CheckNewID("session id", id) != nil {
		meta, err := withSourceID(in.Meta, id)
		if err != nil {
			return importResult{}, err
		}
		safe := fsstore.SafeID(id)
		e.warn(fmt.Sprintf("source id %q cannot be a new session id (a part after a '.' is json, jsonl, lock or log); the session is %s, and its meta keeps source_id", id, safe))
		id, in.Meta = safe, meta
	}
	if id != "" {
		if _, err := store.Get(id); err == nil {
			return importInto(e, store, id, in)
		} else if !errors.Is(err, fsstore.ErrNotFound) {
			return importResult{}, err
		}
	}
	// An imported conversation is history, not a chat in progress: it is
	// ended (with its source's reason, else "imported"), and a chat
	// --resume reopens it. It is created with its transcript in one step,
	// so a failure leaves no session behind. Its times are its history's:
	// it was last active at its last message.
	sess := sessions.Session{
		ID: id, Title: in.Title, Source: in.Source, Model: in.Model,
		ParentSessionID: in.ParentSessionID, SessionKey: in.SessionKey, Meta: sessions.Meta(in.Meta), Cwd: in.Cwd,
		State: sessions.StateEnded, EndReason: in.EndReason,
		CreatedAt: timeOrEmpty(in.CreatedAt), UpdatedAt: timeOrEmpty(in.UpdatedAt), EndedAt: timeOrEmpty(in.EndedAt),
	}
	if sess.EndReason == "" {
		sess.EndReason = sessions.EndImported
	}
	if err := countTotals(id, in.Messages, nil, in.Totals); err != nil {
		return importResult{}, err
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
		return importInto(e, store, created.ID, in)
	}
	return importResult{SessionID: created.ID, Status: "created", Appended: len(in.Messages), MessageCount: created.MessageCount, Skipped: in.Skipped}, nil
}

// withSourceID is meta (a JSON object, or null) with source_id set to id:
// an imported session whose id had to change keeps its source's.
func withSourceID(meta json.RawMessage, id string) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(meta) > 0 && string(meta) != "null" {
		if err := json.Unmarshal(meta, &m); err != nil {
			return nil, fsstore.Invalidf("meta: %v", err)
		}
	}
	m["source_id"], _ = json.Marshal(id)
	return json.Marshal(m)
}

func timeOrEmpty(t time.Time) fsstore.Time {
	if t.IsZero() {
		return ""
	}
	return fsstore.TimeOf(t)
}

// importInto imports in into session id, which exists: the guarded
// whole-transcript write, then what the source now says of the session
// beyond its messages (Adopt).
func importInto(e *env, store *sessions.Store, id string, in importer.Session) (importResult, error) {
	if in.Totals != nil {
		stored, err := store.Messages(id)
		if err != nil {
			return importResult{}, err
		}
		if err := countTotals(id, in.Messages, stored, in.Totals); err != nil {
			return importResult{}, err
		}
	}
	res, err := store.Save(id, in.Messages, e.c.Bool("force"))
	if err != nil {
		return importResult{}, err
	}
	if _, _, err := store.Adopt(id, sessions.Session{ParentSessionID: in.ParentSessionID, SessionKey: in.SessionKey,
		Meta: sessions.Meta(in.Meta), Cwd: in.Cwd, EndReason: in.EndReason, EndedAt: timeOrEmpty(in.EndedAt)}); err != nil {
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
	return importResult{SessionID: id, Status: status, Appended: res.Appended, MessageCount: res.Count, Skipped: in.Skipped}, nil
}

// countTotals puts on msgs, the messages an import writes to session id,
// what a source's running usage totals (the Python agent's: it keeps no
// per-call record) add to the calls of them stored, the session's
// transcript as it is (nil: none yet). The calls stored are carried onto
// the same messages of msgs, so that the import extends the transcript
// rather than diverging from it; what the totals grew since is one call
// on the last message the import adds, its id naming the session and
// that message ("hermes:ID:N"), so that each import that finds them grown
// counts the growth once, and one that finds them as they were counts
// nothing.
func countTotals(id string, msgs, stored []sessions.Message, totals *usage.Call) error {
	if totals == nil || len(msgs) == 0 {
		return nil
	}
	prefix := "hermes:" + id + ":"
	var prior usage.Call
	for i := 0; i < len(stored) && i < len(msgs); i++ {
		calls, err := usage.Others(stored[i])
		if err != nil {
			return err
		}
		var ours []usage.Call
		for _, c := range calls {
			if strings.HasPrefix(c.ID, prefix) {
				ours = append(ours, c)
			}
		}
		a := stored[i]
		a.Extra = maps.Clone(a.Extra)
		delete(a.Extra, usage.OtherField)
		if len(ours) == 0 || !a.SameAs(msgs[i]) {
			continue
		}
		have, err := usage.Others(msgs[i])
		if err != nil {
			return err
		}
		usage.PutOthers(&msgs[i], append(have, ours...))
		for _, c := range ours {
			prior.Input, prior.Output, prior.CacheRead = prior.Input+c.Input, prior.Output+c.Output, prior.CacheRead+c.CacheRead
			prior.CacheWrite5m, prior.Reasoning = prior.CacheWrite5m+c.CacheWrite5m, prior.Reasoning+c.Reasoning
		}
	}
	if len(msgs) <= len(stored) {
		return nil // no message to count a growth on; an unchanged import counts nothing
	}
	grown := *totals
	grown.ID = fmt.Sprintf("%s%d", prefix, len(msgs))
	grown.Input, grown.Output = max(grown.Input-prior.Input, 0), max(grown.Output-prior.Output, 0)
	grown.CacheRead, grown.CacheWrite5m = max(grown.CacheRead-prior.CacheRead, 0), max(grown.CacheWrite5m-prior.CacheWrite5m, 0)
	grown.Reasoning = max(grown.Reasoning-prior.Reasoning, 0)
	if grown.Total() == 0 && grown.Reasoning == 0 {
		return nil
	}
	last := &msgs[len(msgs)-1]
	have, err := usage.Others(*last)
	if err != nil {
		return err
	}
	usage.PutOthers(last, append(have, grown))
	return nil
}

// importStatuses are the statuses a directory import counts, in the order
// its summary names them.
var importStatuses = []string{"created", "extended", "unchanged", "replaced", "refused", "failed", "skipped"}

// importDir imports every .json and .jsonl file below dir, in lexical
// order, each as `import FILE` would, and reports each file that fails
// without stopping. A file whose format is not recognized is no transcript
// (a settings file, an index): it is skipped, which is no failure.
func importDir(e *env, dir string, limit int64) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			// An unreadable directory is reported as a failed file; the
			// walk goes on.
			files = append(files, path)
			return nil
		}
		// Symlinks are not followed: the tree is the user's own history.
		if d.Type().IsRegular() && (strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".json")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var bar *progress
	if f, ok := e.stderr.(*os.File); ok && !e.json && isTerminal(f) {
		bar = &progress{w: f, what: "importing", total: len(files)}
	}
	// A message on stderr clears the bar's line first.
	report := func(format string, args ...any) {
		bar.clear()
		fmt.Fprintf(e.stderr, "hermes: "+format+"\n", args...)
	}
	store := e.sessions()
	counts := map[string]map[string]int{} // format -> status -> sessions
	total := map[string]int{}
	count := func(format, status string) {
		if counts[format] == nil {
			counts[format] = map[string]int{}
		}
		counts[format][status]++
		total[status]++
	}
	code := ExitOK
	for _, path := range files {
		results := importFile(e, store, path, limit)
		for _, res := range results {
			count(res.Format, res.Status)
			switch res.Status {
			case "failed":
				code = ExitFailed
				report("import %s: %s", path, res.Error)
			case "refused":
				if code == ExitOK {
					code = ExitRefused
				}
				report("import %s: %s", path, res.Error)
			}
			if e.json {
				printJSON(e.stdout, res)
			}
		}
		bar.step()
	}
	bar.clear()
	out := e.stdout
	if e.json {
		out = e.stderr // stdout holds the results, one a line
	}
	var parts []string
	for _, st := range importStatuses {
		if st != "replaced" || total[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", total[st], st))
		}
	}
	fmt.Fprintf(out, "%s: %d files: %s\n", dir, len(files), strings.Join(parts, ", "))
	formats := sortedKeys(counts)
	formats = slices.DeleteFunc(formats, func(f string) bool { return f == "" })
	for _, f := range formats {
		parts = parts[:0]
		for _, st := range importStatuses {
			if n := counts[f][st]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, st))
			}
		}
		fmt.Fprintf(out, "  %s: %s\n", f, strings.Join(parts, ", "))
	}
	if code != ExitOK {
		return silentExit{code}
	}
	return nil
}

// importFile imports one file of a directory import: a result for each
// session it holds, or one saying why it gave none.
func importFile(e *env, store *sessions.Store, path string, limit int64) []importResult {
	fail := func(format string, err error) []importResult {
		status := "failed"
		if errors.Is(err, importer.ErrUnrecognized) {
			status = "skipped"
		}
		return []importResult{{File: path, Format: format, Status: status, Error: errorText(err)}}
	}
	f, err := os.Open(path)
	if err != nil {
		return fail("", err)
	}
	defer f.Close()
	// The format is detected here, from the prefix Parse would read, so
	// that the result can name it.
	r := limitLines(f, "", limit)
	head, err := io.ReadAll(io.LimitReader(r, importer.DetectLimit))
	if err != nil {
		return fail("", err)
	}
	format := e.c.String("format")
	if format == "" {
		if format, err = importer.Detect(head); err != nil {
			return fail("", err)
		}
	}
	parsed, err := importer.Parse(io.MultiReader(bytes.NewReader(head), r), format)
	if err != nil {
		return fail(format, err)
	}
	var out []importResult
	for _, in := range parsed {
		res, err := importOne(e, store, in)
		if err != nil {
			res = importResult{SessionID: in.ID, Status: "failed", Error: errorText(err)}
			if errors.Is(err, fsstore.ErrRefused) {
				res.Status = "refused"
			}
		}
		res.File, res.Format = path, format
		out = append(out, res)
	}
	return out
}
