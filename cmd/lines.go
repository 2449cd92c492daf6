package cmd

import (
	"bytes"
	"fmt"
	"io"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/profiles"
)

// DefaultMaxLine is sessions.max_line when config.yaml does not set it.
const DefaultMaxLine = 64 << 20

// maxLineSetting is config.yaml's sessions.max_line, or its default.
func maxLineSetting(cfg profiles.Config) (int64, error) {
	switch {
	case cfg.Sessions.MaxLine < 0:
		return 0, fsstore.Invalidf("sessions.max_line must be a positive number of bytes")
	case cfg.Sessions.MaxLine > 0:
		return cfg.Sessions.MaxLine, nil
	}
	return DefaultMaxLine, nil
}

// lineLimit is a reader that fails at the first line longer than max
// bytes (its newline not counted), with an error matching
// fsstore.ErrInvalid that names the input, the line and the limit. A
// caller that holds what it reads (the line, or a whole import) then
// holds no more than the lines it was allowed, and one that never ends
// is refused once it passes the limit, not when memory runs out.
type lineLimit struct {
	r    io.Reader
	name string // the input, as messages name it: "stdin", a file; "" when the caller names it
	max  int64
	line int   // the line being read, from 1
	cur  int64 // bytes of that line read so far
	err  error
}

func limitLines(r io.Reader, name string, max int64) *lineLimit {
	return &lineLimit{r: r, name: name, max: max, line: 1}
}

func (l *lineLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			j = n - i
		}
		if l.cur += int64(j); l.cur > l.max {
			l.err = fsstore.Invalidf("line %d is longer than sessions.max_line (%d bytes)", l.line, l.max)
			if l.name != "" {
				l.err = fmt.Errorf("%s: %w", l.name, l.err)
			}
			return 0, l.err
		}
		if i += j; i < n {
			i++
			l.line++
			l.cur = 0
		}
	}
	return n, err
}
