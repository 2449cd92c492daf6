// Command genkanban writes a kanban board for benchmarks, in the exact
// formats of kanban.Board (see fsstore/kanban.go), without its fsyncs:
//
//	go run ./scripts/genkanban -home DIR -tasks N -open M
//
// The board goes to DIR/profiles/<profile>/kanban, which must not exist
// yet. Of the N tasks, the oldest N-M are done: each with one completed
// run, a session id, a worker task id and an events log of four lines
// (created, claimed, session_registered, completed), and every tenth with
// a comment. The newest M are ready, with priorities 0 to 4 and no runs,
// and have their open/ markers. Ids are time-ordered, one task a second
// going back from now.
//
// Before it exits it reads a done and a ready task back through
// kanban.Board and checks that re-encoding them gives the bytes written,
// so a drift from the store's formats fails here, not in a benchmark.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/kanban"
)

func main() {
	home := flag.String("home", "", "hermes home (root) directory; required")
	profile := flag.String("profile", "default", "profile name")
	tasks := flag.Int("tasks", 10000, "number of tasks")
	open := flag.Int("open", 100, "how many of them (the newest) are ready; the rest are done")
	flag.Parse()
	if *home == "" || flag.NArg() > 0 || *tasks < 1 || *open < 0 || *open > *tasks {
		flag.Usage()
		os.Exit(2)
	}
	if err := fsstore.CheckID("profile", *profile); err != nil {
		fail(err)
	}
	profileDir := filepath.Join(*home, "profiles", *profile)
	dir := filepath.Join(profileDir, "kanban")
	if _, err := os.Lstat(dir); err == nil {
		fail(fmt.Errorf("%s exists", dir))
	}
	start := time.Now()
	g := gen{dir: dir, profile: *profile}
	for _, d := range []string{filepath.Join(dir, "tasks"), filepath.Join(dir, "open")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			fail(err)
		}
	}
	// Parents made by MkdirAll follow the umask; the store's are 0700.
	for d := dir; ; d = filepath.Dir(d) {
		os.Chmod(d, 0o700)
		if d == profileDir {
			break
		}
	}
	base := start.UTC().Add(-time.Duration(*tasks) * time.Second)
	var doneID, readyID string
	for i := range *tasks {
		created := base.Add(time.Duration(i) * time.Second)
		id := created.Format("20060102_150405") + fmt.Sprintf("_%06x", i)
		var err error
		if i < *tasks-*open {
			err = g.done(id, i, created)
			doneID = firstSet(doneID, id)
		} else {
			err = g.ready(id, i, created)
			readyID = firstSet(readyID, id)
		}
		if err != nil {
			fail(err)
		}
	}
	b := kanban.NewBoard(profileDir, 10*time.Second, func(msg string) { fail(errors.New(msg)) })
	for _, id := range []string{doneID, readyID} {
		if id != "" {
			if err := g.check(b, id); err != nil {
				fail(err)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "genkanban: %d tasks (%d done, %d ready) in %s (%.1fs)\n",
		*tasks, *tasks-*open, *open, dir, time.Since(start).Seconds())
}

type gen struct {
	dir, profile string
}

func (g gen) path(name string) string { return filepath.Join(g.dir, "tasks", name) }

func (g gen) done(id string, i int, created time.Time) error {
	claimed := created.Add(2 * time.Second)
	registered := claimed.Add(300 * time.Millisecond)
	ended := claimed.Add(time.Duration(30+i%90) * time.Second)
	runID := claimed.Format("20060102_150405") + hexTail(i, 1)
	sessionID := claimed.Format("20060102_150405") + hexTail(i, 2)
	result := fmt.Sprintf("finished item %d: 3 files changed, tests pass", i)
	t := kanban.Task{
		ID: id, Title: fmt.Sprintf("task %d: update the handler and its tests", i),
		Body:     fmt.Sprintf("Item %d of the backlog. Change the handler, run the tests, report.", i),
		Assignee: g.profile, Status: kanban.Done, Priority: i % 5,
		CreatedAt: fsstore.TimeOf(created), UpdatedAt: fsstore.TimeOf(ended),
		CurrentRunID: runID, ClaimTTLMS: (15 * time.Minute).Milliseconds(), Result: result,
		Runs: []kanban.Run{{
			ID: runID, Profile: g.profile, SessionID: sessionID, Status: kanban.RunEnded,
			Outcome:      kanban.OutcomeCompleted,
			WorkerTaskID: claimed.Format("20060102_150405") + hexTail(i, 3),
			StartedAt:    fsstore.TimeOf(claimed), EndedAt: fsstore.TimeOf(ended), Summary: result,
		}},
	}
	events := []kanban.Event{
		{TS: t.CreatedAt, Type: kanban.EventCreated, Detail: string(kanban.Ready)},
		{TS: fsstore.TimeOf(claimed), Type: "claimed", RunID: runID},
		{TS: fsstore.TimeOf(registered), Type: "session_registered", RunID: runID, Detail: sessionID},
		{TS: t.UpdatedAt, Type: "completed", RunID: runID, Detail: result},
	}
	if i%10 == 0 {
		c := kanban.Comment{ID: created.Format("20060102_150405") + hexTail(i, 0),
			TS: fsstore.TimeOf(created.Add(time.Second)), Author: "ann", Text: "please keep the old behaviour behind a flag"}
		if err := g.log(id+".comments.jsonl", []any{c}); err != nil {
			return err
		}
		events = append(events[:1], append([]kanban.Event{{TS: c.TS, Type: "commented", Detail: c.Author}}, events[1:]...)...)
	}
	if err := g.doc(id, &t); err != nil {
		return err
	}
	evs := make([]any, len(events))
	for k := range events {
		evs[k] = events[k]
	}
	return g.log(id+".events.jsonl", evs)
}

func (g gen) ready(id string, i int, created time.Time) error {
	t := kanban.Task{
		ID: id, Title: fmt.Sprintf("task %d: waiting for a worker", i),
		Body:     fmt.Sprintf("Item %d of the backlog, not started.", i),
		Assignee: g.profile, Status: kanban.Ready, Priority: i % 5,
		CreatedAt: fsstore.TimeOf(created), UpdatedAt: fsstore.TimeOf(created), Runs: []kanban.Run{},
	}
	// The marker first, as Board.Create writes it.
	if err := os.WriteFile(filepath.Join(g.dir, "open", id), nil, 0o600); err != nil {
		return err
	}
	if err := g.doc(id, &t); err != nil {
		return err
	}
	return g.log(id+".events.jsonl", []any{kanban.Event{TS: t.CreatedAt, Type: kanban.EventCreated, Detail: string(kanban.Ready)}})
}

func (g gen) doc(id string, t *kanban.Task) error {
	b, err := fsstore.EncodeDocument(t)
	if err != nil {
		return err
	}
	return os.WriteFile(g.path(id+".json"), b, 0o600)
}

// log writes a JSONL log as the store appends it: json.Marshal of each
// record and a newline.
func (g gen) log(name string, records []any) error {
	var b bytes.Buffer
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return os.WriteFile(g.path(name), b.Bytes(), 0o600)
}

// check reads task id back through the store and compares.
func (g gen) check(b *kanban.Board, id string) error {
	t, err := b.Get(id)
	if err != nil {
		return err
	}
	again, err := fsstore.EncodeDocument(&t)
	if err != nil {
		return err
	}
	written, err := os.ReadFile(g.path(id + ".json"))
	if err != nil {
		return err
	}
	if !bytes.Equal(again, written) {
		return fmt.Errorf("task %s does not round-trip through kanban.Board", id)
	}
	events, err := b.Events(id)
	if err != nil {
		return err
	}
	if len(events) == 0 || events[0].Type != "created" {
		return fmt.Errorf("task %s: events %+v", id, events)
	}
	return nil
}

// hexTail is the random part of an id, made up: six hex digits from the
// task's number and the kind of record.
func hexTail(i, kind int) string { return fmt.Sprintf("_%06x", (i<<2|kind)&0xffffff) }

func firstSet(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "genkanban:", err)
	os.Exit(1)
}
