package cmd

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/profiles"
)

// The values of checkpoints.restore: what /undo and /retry do with the
// files the turns they take back changed.
const (
	restoreAsk    = "ask"
	restoreAlways = "always"
	restoreNever  = "never"
)

// notCovered is what /rewind says it does not take back.
const notCovered = "what write_file and edit_file changed is taken back; what terminal commands and MCP servers' tools changed is not"

// restoreSetting is checkpoints.restore, checked: ask (the default) on a
// terminal; without one, ask is never, as there is no one to ask.
func restoreSetting(e *env, cfg profiles.Config) (string, error) {
	v := cfg.Checkpoints.Restore
	switch v {
	case "", restoreAsk:
		if e.stdinIsTerminal() {
			return restoreAsk, nil
		}
		return restoreNever, nil
	case restoreAlways, restoreNever:
		return v, nil
	}
	return "", fsstore.Invalidf("checkpoints.restore must be ask, always or never, not %q", v)
}

// ask puts question to the user and reads the answer from line mode's
// input; end of input is no answer.
func (ch *chatter) ask(question string) (string, error) {
	fmt.Fprint(ch.e.stderr, "hermes: "+question)
	var line string
	var err error
	if ch.lines != nil {
		line, err = ch.lines.ReadLine()
	} else {
		line, err = ch.in.ReadString('\n')
	}
	if err != nil && line == "" {
		fmt.Fprintln(ch.e.stderr)
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		return "", err
	}
	return strings.ToLower(strings.TrimSpace(line)), nil
}

// forkWithFiles is /undo's and /retry's fork: the current session up to
// message at, going on in the fork, then the file changes recorded from
// message from on taken back as policy says (checkpoints.restore). The
// restore is recorded in the session it left, whose history holds the
// changes it took back: the fork's history ends before them, and its
// files are as that history left them.
func (ch *chatter) forkWithFiles(from, at int64, policy string) error {
	old := ch.sessionID
	recs, _, err := sessionRecords(ch.store, old)
	if err != nil {
		return err
	}
	recs = checkpoints.After(recs, from)
	if err := ch.fork(at, ""); err != nil {
		return err
	}
	if len(recs) == 0 {
		return nil
	}
	paths := planPaths(recs)
	switch policy {
	case restoreNever:
		fmt.Fprintf(ch.e.stderr, "hermes: the files those turns changed are left as they are (%s); /rewind takes them back (checkpoints.restore: never)\n", paths)
		return nil
	case restoreAsk:
		a, err := ch.ask(fmt.Sprintf("take back the changes those turns made to %s too? [y/N] ", paths))
		if err != nil {
			return err
		}
		if a != "y" && a != "yes" {
			fmt.Fprintf(ch.e.stderr, "hermes: the files are left as they are; /rewind takes them back\n")
			return nil
		}
	}
	text := fmt.Sprintf("The files were restored to their state before message %d; the conversation went on in session %s.", from, ch.sessionID)
	return restoreFiles(ch.e, old, recs, text, false, false)
}

// planPaths names the files recs change, comma-separated.
func planPaths(recs []checkpoints.Record) string {
	var paths []string
	for _, t := range checkpoints.Plan(recs) {
		paths = append(paths, t.Path)
	}
	return strings.Join(paths, ", ")
}

// rewindTurn is a turn /rewind lists: its user message and the files the
// turn changed.
type rewindTurn struct {
	seq     int64
	preview string
	recs    []checkpoints.Record
}

// rewindTurns returns the current session's turns, oldest first.
func (ch *chatter) rewindTurns() ([]rewindTurn, []checkpoints.Record, error) {
	if ch.sessionID == "" {
		return nil, nil, errors.New("no session yet: nothing to rewind")
	}
	recs, msgs, err := sessionRecords(ch.store, ch.sessionID)
	if err != nil {
		return nil, nil, err
	}
	var turns []rewindTurn
	for _, m := range msgs {
		if m.Role == "user" && !agent.IsNote(m) {
			turns = append(turns, rewindTurn{seq: m.Seq, preview: preview(m.Text(), 40)})
		}
	}
	for i := range turns {
		end := int64(len(msgs) + 1)
		if i+1 < len(turns) {
			end = turns[i+1].seq
		}
		for _, r := range checkpoints.After(recs, turns[i].seq) {
			if r.Seq < end {
				turns[i].recs = append(turns[i].recs, r)
			}
		}
	}
	return turns, recs, nil
}

// preview is the first n characters of s's first line.
func preview(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// rewindCmd is /rewind: without an argument, the turns with the files
// each changed; /rewind N [both|conversation|code] goes back to just
// before turn N, asking which on a terminal when not given.
func (ch *chatter) rewindCmd(arg string) (bool, error) {
	turns, recs, err := ch.rewindTurns()
	if err != nil {
		return false, err
	}
	if len(turns) == 0 {
		return false, fmt.Errorf("session %s has no turn to rewind to", ch.sessionID)
	}
	if arg == "" {
		tb := newTable(ch.e.stdout, "N", "SEQ", "MESSAGE", "FILES")
		for i, t := range turns {
			files := planPaths(t.recs)
			if files == "" {
				files = "-"
			}
			tb.row(i+1, t.seq, t.preview, files)
		}
		if err := tb.flush(); err != nil {
			return false, err
		}
		fmt.Fprintf(ch.e.stderr, "hermes: /rewind N [both|conversation|code] goes back to just before turn N: %s\n", notCovered)
		return false, nil
	}
	nText, mode, _ := strings.Cut(arg, " ")
	n, err := strconv.Atoi(nText)
	if err != nil || n < 1 || n > len(turns) {
		return false, fmt.Errorf("/rewind takes a turn's number, 1 to %d (/rewind lists them), not %q", len(turns), nText)
	}
	seq := turns[n-1].seq
	mode = strings.TrimSpace(mode)
	if mode == "" {
		if !ch.e.stdinIsTerminal() {
			return false, errors.New("/rewind N needs both, conversation or code without a terminal")
		}
		fmt.Fprintf(ch.e.stderr, "hermes: %s\n", notCovered)
		a, err := ch.ask(fmt.Sprintf("rewind to just before turn %d: [b]oth code and conversation, [c]onversation only, [f]iles (code) only, or nothing? ", n))
		if err != nil {
			return false, err
		}
		mode = map[string]string{"b": "both", "both": "both", "c": "conversation", "conversation": "conversation", "f": "code", "code": "code"}[a]
		if mode == "" {
			fmt.Fprintln(ch.e.stderr, "hermes: nothing rewound")
			return false, nil
		}
	}
	after := checkpoints.After(recs, seq)
	old := ch.sessionID
	switch mode {
	case "both", "conversation":
		if seq == 1 {
			return false, errors.New("turn 1 starts the session: a conversation before it is empty (/new starts one)")
		}
		if err := ch.fork(seq-1, ""); err != nil {
			return false, err
		}
		if mode == "conversation" {
			return false, nil
		}
	case "code":
	default:
		return false, fmt.Errorf("/rewind N takes both, conversation or code, not %q", mode)
	}
	if len(after) == 0 {
		fmt.Fprintln(ch.e.stderr, "hermes: no file changes recorded since then")
		return false, nil
	}
	text := fmt.Sprintf("The files were restored to their state before message %d (/rewind).", seq)
	if ch.sessionID != old {
		text = fmt.Sprintf("The files were restored to their state before message %d (/rewind); the conversation went on in session %s.", seq, ch.sessionID)
	}
	return false, restoreFiles(ch.e, old, after, text, false, false)
}
