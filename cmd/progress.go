package cmd

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws a task's progress on one line of a terminal: a bar, the
// count done and the total, redrawn at most every progressEvery and at the
// last step. A nil *progress draws nothing, for output that is not a
// terminal. It is a few lines, not a library: every library tried costs
// each hermes command start-up time in package init, where this costs none.
type progress struct {
	w     io.Writer
	what  string
	total int
	done  int
	drawn time.Time
}

const (
	progressEvery = 100 * time.Millisecond
	progressWidth = 30
)

// step counts one more done.
func (p *progress) step() {
	if p == nil {
		return
	}
	p.done++
	if p.done == p.total || time.Since(p.drawn) >= progressEvery {
		p.draw()
	}
}

func (p *progress) draw() {
	filled := progressWidth
	if p.total > 0 {
		filled = progressWidth * p.done / p.total
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s [%s%s] %d/%d", p.what, strings.Repeat("=", filled), strings.Repeat(" ", progressWidth-filled), p.done, p.total)
	p.drawn = time.Now()
}

// clear erases the line, before a message or at the end; the next step
// draws it again.
func (p *progress) clear() {
	if p == nil {
		return
	}
	io.WriteString(p.w, "\r\x1b[K")
	p.drawn = time.Time{}
}
