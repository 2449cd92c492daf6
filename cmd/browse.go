package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/hermes/hermes/fsstore/sessions"
)

func sessionsBrowseCommand() *cli.Command {
	return &cli.Command{
		Name:  "browse",
		Usage: "pick a session on the terminal and resume it in line mode",
		Description: `Sessions newest first. Type to filter by title, preview and id (every word
must match), Up/Down (or Ctrl-P/Ctrl-N, PgUp/PgDn) to move, Enter to resume the
session in line mode, Esc or Ctrl-C to quit. Needs a terminal: in scripts,
use hermes sessions list.`,
		ArgsUsage: " ",
		Action:    withEnv(sessionsBrowse),
	}
}

// The picker is drawn with escape sequences on x/term's raw mode rather
// than with a TUI library: those run package init code (terminfo tables,
// width tables) that every hermes command would pay at start-up.
func sessionsBrowse(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("browse takes no arguments")
	}
	in, ok1 := e.stdin.(*os.File)
	out, ok2 := e.stdout.(*os.File)
	if !ok1 || !ok2 || !isTerminal(in) || !isTerminal(out) {
		return usagef("sessions browse needs a terminal; use hermes sessions list")
	}
	list, err := e.sessions().List(sessions.ListOptions{})
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stderr, "hermes: no sessions yet")
		return nil
	}
	id, err := runPicker(in, out, newPicker(list))
	if err != nil || id == "" {
		return err
	}
	args := []string{"hermes", "--home", e.profile.Root, "--profile", e.profile.Name, "--lock-timeout", e.lockTimeout.String(), "chat", "--resume", id}
	if code := Run(args, e.stdin, e.stdout, e.stderr); code != 0 {
		return silentExit{code}
	}
	return nil
}

// picker is the state of the session picker, apart from the terminal.
type picker struct {
	all    []sessions.Session
	query  []rune
	shown  []int // indexes into all of the sessions the query matches
	cursor int   // index into shown of the selected row
	top    int   // index into shown of the first row on screen
	rows   int   // how many rows the screen holds
	titles int   // width of the title column
}

// maxTitleWidth caps the title column, so that previews stay in view.
const maxTitleWidth = 30

func newPicker(list []sessions.Session) *picker {
	p := &picker{all: list, rows: 10, titles: 1}
	for _, s := range list {
		p.titles = max(p.titles, min(maxTitleWidth, utf8.RuneCountInString(s.Title)))
	}
	p.filter()
	return p
}

// filter keeps the sessions whose title, preview or id hold every word of
// the query, ignoring case, in their order (newest first).
func (p *picker) filter() {
	words := strings.Fields(strings.ToLower(string(p.query)))
	p.shown = p.shown[:0]
	for i, s := range p.all {
		hay := strings.ToLower(s.Title + " " + s.Preview + " " + s.ID)
		all := true
		for _, w := range words {
			if !strings.Contains(hay, w) {
				all = false
				break
			}
		}
		if all {
			p.shown = append(p.shown, i)
		}
	}
	p.cursor, p.top = 0, 0
}

// A key is a typed rune, or one of the keys below (negative).
type key rune

const (
	keyUp key = -iota - 1
	keyDown
	keyPageUp
	keyPageDown
	keyEnter
	keyEsc
	keyBackspace
	keyKill // Ctrl-U
	keyQuit // Ctrl-C, Ctrl-D
)

// decodeKeys splits what one read from the terminal returned into keys.
// A lone Esc arrives by itself; an arrow key's sequence arrives whole.
// Sequences the picker has no use for (function keys, Alt-…) are dropped.
func decodeKeys(b []byte) []key {
	var keys []key
	s := string(b)
	for len(s) > 0 {
		if s[0] == 0x1b {
			if len(s) == 1 {
				return append(keys, keyEsc)
			}
			seq, rest := escSequence(s)
			switch seq {
			case "\x1b[A", "\x1bOA":
				keys = append(keys, keyUp)
			case "\x1b[B", "\x1bOB":
				keys = append(keys, keyDown)
			case "\x1b[5~":
				keys = append(keys, keyPageUp)
			case "\x1b[6~":
				keys = append(keys, keyPageDown)
			}
			s = rest
			continue
		}
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch {
		case r == '\r' || r == '\n':
			keys = append(keys, keyEnter)
		case r == 0x7f || r == 0x08:
			keys = append(keys, keyBackspace)
		case r == 0x15:
			keys = append(keys, keyKill)
		case r == 0x03 || r == 0x04:
			keys = append(keys, keyQuit)
		case r == 0x10:
			keys = append(keys, keyUp)
		case r == 0x0e:
			keys = append(keys, keyDown)
		case r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0) && r != utf8.RuneError:
			keys = append(keys, key(r))
		}
	}
	return keys
}

// escSequence splits s, which starts with Esc, after its escape sequence:
// CSI (Esc [ parameters final), SS3 (Esc O one byte), or Esc and one byte.
func escSequence(s string) (seq, rest string) {
	switch {
	case strings.HasPrefix(s, "\x1b["):
		i := 2
		for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
			i++
		}
		i = min(i+1, len(s))
		return s[:i], s[i:]
	case len(s) >= 3 && s[1] == 'O':
		return s[:3], s[3:]
	}
	return s[:2], s[2:]
}

// press applies a key. It returns the id of the session to resume on
// Enter, and done when the picker ends (an empty id: quit).
func (p *picker) press(k key) (id string, done bool) {
	switch k {
	case keyEnter:
		if len(p.shown) == 0 {
			return "", false
		}
		return p.all[p.shown[p.cursor]].ID, true
	case keyEsc, keyQuit:
		return "", true
	case keyUp:
		p.move(-1)
	case keyDown:
		p.move(1)
	case keyPageUp:
		p.move(-p.rows)
	case keyPageDown:
		p.move(p.rows)
	case keyBackspace:
		if len(p.query) > 0 {
			p.query = p.query[:len(p.query)-1]
			p.filter()
		}
	case keyKill:
		p.query = p.query[:0]
		p.filter()
	default:
		if k >= 0 {
			p.query = append(p.query, rune(k))
			p.filter()
		}
	}
	return "", false
}

// move moves the selection by n rows, within the list, keeping it on screen.
func (p *picker) move(n int) {
	p.cursor = max(0, min(len(p.shown)-1, p.cursor+n))
	if p.cursor < p.top {
		p.top = p.cursor
	}
	if p.cursor >= p.top+p.rows {
		p.top = p.cursor - p.rows + 1
	}
}

// draw writes the screen: the filter line, a help line, then the rows.
func (p *picker) draw(w io.Writer, width, height int) {
	p.rows = max(1, height-2)
	p.move(0)
	var b strings.Builder
	b.WriteString("\x1b[H")
	fmt.Fprintf(&b, "filter: %s\x1b[K\r\n", string(p.query))
	fmt.Fprintf(&b, "\x1b[2m%d of %d · ↑/↓ move · Enter resume · Esc quit\x1b[0m\x1b[K", len(p.shown), len(p.all))
	for i := p.top; i < len(p.shown) && i < p.top+p.rows; i++ {
		s := p.all[p.shown[i]]
		title := []rune(dash(s.Title))
		row := fmt.Sprintf("%s  %-*s  %s", s.ID, p.titles, string(title[:min(len(title), p.titles)]), oneLine(s.Preview))
		row = string([]rune(row)[:min(len([]rune(row)), width-2)])
		if i == p.cursor {
			fmt.Fprintf(&b, "\r\n\x1b[7m> %s\x1b[0m\x1b[K", row)
		} else {
			fmt.Fprintf(&b, "\r\n  %s\x1b[K", row)
		}
	}
	fmt.Fprintf(&b, "\x1b[J\x1b[1;%dH", len("filter: ")+len(p.query)+1)
	io.WriteString(w, b.String())
}

// oneLine keeps a preview on its row: control characters become spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
}

// runPicker runs p on the terminal (raw mode, the alternate screen, no line
// wrap) until Enter or Esc, and puts the terminal back as it was. It reads
// stdin only between its own draws, so nothing typed after it ends is lost
// to it.
func runPicker(in, out *os.File, p *picker) (string, error) {
	state, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return "", err
	}
	io.WriteString(out, "\x1b[?1049h\x1b[?7l")
	defer func() {
		io.WriteString(out, "\x1b[?7h\x1b[?1049l")
		term.Restore(int(in.Fd()), state)
	}()
	buf := make([]byte, 256)
	for {
		width, height, err := term.GetSize(int(out.Fd()))
		if err != nil {
			width, height = 80, 24
		}
		p.draw(out, width, height)
		n, err := in.Read(buf)
		if err != nil {
			return "", err
		}
		for _, k := range decodeKeys(buf[:n]) {
			if id, done := p.press(k); done {
				return id, nil
			}
		}
	}
}
