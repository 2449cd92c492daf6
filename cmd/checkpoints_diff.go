package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/checkpoints"
)

// maxDiffCells bounds the table of the line diff (lines of the old part
// that differ times lines of the new): past it the differing middle is
// shown as removed and added whole, still a correct diff.
const maxDiffCells = 16 << 20

func checkpointsDiff(e *env) error {
	if e.c.NArg() < 1 || e.c.NArg() > 2 {
		return usagef("diff takes a checkpoint SESSION:SEQ and, optionally, one of its paths")
	}
	r, err := findRecord(e, e.c.Args().Get(0))
	if err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	store := e.checkpoints(cfg)
	only := e.c.Args().Get(1)
	shown := false
	for _, c := range r.Changes {
		if only != "" && c.Path != only && !strings.HasSuffix(c.Path, "/"+only) {
			continue
		}
		shown = true
		if err := diffChange(e.stdout, store, c); err != nil {
			return err
		}
	}
	if !shown {
		return fsstore.NotFoundf("checkpoint %s changed no file %s (hermes checkpoints show %s)", r.ID(), only, r.ID())
	}
	return nil
}

// diffChange writes the unified diff of a change: the bytes before it
// against the file as it is now, which is the change itself while the
// file holds what the change wrote (the after bytes are not stored).
func diffChange(w io.Writer, store *checkpoints.Store, c checkpoints.Change) error {
	var old []byte
	switch {
	case c.NotCheckpointed != "":
		fmt.Fprintf(w, "# %s: not checkpointed: %s\n", c.Path, c.NotCheckpointed)
		return nil
	case !c.Created:
		b, err := store.Get(c.Before)
		if err != nil {
			fmt.Fprintf(w, "# %s: %v\n", c.Path, err)
			return nil
		}
		old = b
	}
	now, err := os.ReadFile(c.Path)
	exists := err == nil
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	label := "present, as the change left it"
	if !exists || !checkpoints.Matches(c.After, now) || c.Removed {
		label = "present, changed since"
	}
	if !exists {
		label = "present: absent"
	}
	from := c.Path + " (before)"
	if c.Created {
		from = "/dev/null (before: absent)"
	}
	if bytes.IndexByte(old, 0) >= 0 || bytes.IndexByte(now, 0) >= 0 {
		if bytes.Equal(old, now) {
			return nil
		}
		fmt.Fprintf(w, "Binary files %s and %s (%s) differ\n", from, c.Path, label)
		return nil
	}
	fmt.Fprintf(w, "--- %s\n+++ %s (%s)\n", from, c.Path, label)
	writeUnified(w, splitLines(old), splitLines(now))
	return nil
}

// splitLines cuts b into lines, each with its line end.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b)+"\n\\ No newline at end of file\n")
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

// diffOp is one line of an edit script: ' ', '-' or '+'.
type diffOp struct {
	kind byte
	line string
}

// lineDiff is an edit script from a to b: their common prefix and
// suffix, and between them a longest common subsequence (or, past
// maxDiffCells, the middle replaced whole).
func lineDiff(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) > maxDiffCells {
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
	} else {
		// lcs[i][j]: the longest common subsequence of ma[i:] and mb[j:].
		lcs := make([][]int32, len(ma)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(mb)+1)
		}
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i]})
				i, j = i+1, j+1
			case i < len(ma) && (j == len(mb) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', ma[i]})
				i++
			default:
				ops = append(ops, diffOp{'+', mb[j]})
				j++
			}
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

// writeUnified writes the hunks of the diff of a and b, with three lines
// of context.
func writeUnified(w io.Writer, a, b []string) {
	const context = 3
	ops := lineDiff(a, b)
	for start := 0; start < len(ops); {
		for start < len(ops) && ops[start].kind == ' ' {
			start++
		}
		if start == len(ops) {
			return
		}
		// The hunk: from context lines before the first change to context
		// lines after the last change that is not followed by more than
		// 2*context equal lines.
		lo := max(0, start-context)
		end := start
		for i := start; i < len(ops); i++ {
			if ops[i].kind != ' ' {
				end = i
			} else if i-end > 2*context {
				break
			}
		}
		hi := min(len(ops), end+1+context)
		aLine, bLine := 1, 1
		for _, op := range ops[:lo] {
			if op.kind != '+' {
				aLine++
			}
			if op.kind != '-' {
				bLine++
			}
		}
		var aN, bN int
		var body strings.Builder
		for _, op := range ops[lo:hi] {
			if op.kind != '+' {
				aN++
			}
			if op.kind != '-' {
				bN++
			}
			body.WriteByte(op.kind)
			body.WriteString(op.line)
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n%s", hunkRange(aLine, aN), hunkRange(bLine, bN), body.String())
		start = hi
	}
}

// hunkRange is a hunk header's start,count; an empty range starts at the
// line before it, as diff -u writes it.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
