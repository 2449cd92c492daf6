package cmd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/ergochat/readline"
	"golang.org/x/term"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// lineReader gives line mode its input one message or command at a time.
type lineReader interface {
	// ReadLine returns the next input without its line end, or io.EOF
	// when there is no more.
	ReadLine() (string, error)
	Close() error
}

// plainLines reads lines as they come, for piped stdin: no editing, no
// history, the prompt (if any) written before each read.
type plainLines struct {
	in     *bufio.Reader
	out    io.Writer
	prompt string
}

func (p *plainLines) ReadLine() (string, error) {
	fmt.Fprint(p.out, p.prompt)
	line, err := p.in.ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func (p *plainLines) Close() error { return nil }

// historyFileName is line mode's history in the profile directory: one
// input a line, the newlines of a multi-line input written as newlineMark.
const historyFileName = "chat_history"

// historyLimit is how many inputs Up reaches back; the file is cut back to
// this many when it holds twice as many.
const historyLimit = 1000

// A pasted or continued input is one line in the editor and in the history
// file: its newlines and tabs are shown as these symbols (a tab would also
// start completion) and restored when the input is read.
const (
	newlineMark = '\u2424' // ␤
	tabMark     = '\u2409' // ␉
)

var unmark = strings.NewReplacer(string(newlineMark), "\n", string(tabMark), "\t")

// editor reads line mode's input from a terminal with line editing
// (ergochat/readline): cursor keys, Ctrl-A/E/W/U, history on Up/Down and
// Ctrl-R, Tab completion, bracketed paste, a trailing \ to continue.
type editor struct {
	rl      *readline.Instance
	out     io.Writer
	history string // path of the history file; "" keeps none
	warn    func(string)
}

// newLineReader returns the editor when stdin and stderr (where the
// prompt and the editing are drawn) are terminals, else plain lines.
func (ch *chatter) newLineReader() (lineReader, error) {
	e := ch.e
	stdin, ok1 := e.stdin.(*os.File)
	stderr, ok2 := e.stderr.(*os.File)
	if !ok1 || !ok2 || !isTerminal(stdin) || !isTerminal(stderr) {
		prompt := "> "
		if !e.stdinIsTerminal() {
			prompt = "" // lines come from a pipe: no prompt between them
		}
		return &plainLines{in: ch.in, out: e.stderr, prompt: prompt}, nil
	}
	ed := &editor{out: stderr, history: filepath.Join(e.profile.Dir(), historyFileName), warn: e.warn}
	rl, err := readline.NewFromConfig(&readline.Config{
		Prompt:                 "> ",
		Stdin:                  &pasteFilter{r: stdin},
		Stdout:                 stderr,
		Stderr:                 stderr,
		HistoryLimit:           historyLimit,
		DisableAutoSaveHistory: true,
		HistorySearchFold:      true,
		AutoComplete:           &completer{store: ch.store},
		FuncFilterInputRune:    dropControl,
		FuncIsTerminal:         func() bool { return true },
		FuncGetSize: func() (int, int) {
			w, h, err := term.GetSize(int(stderr.Fd()))
			if err != nil {
				return -1, -1
			}
			return w, h
		},
	})
	if err != nil {
		return nil, err
	}
	ed.rl = rl
	for _, entry := range ed.loadHistory() {
		rl.SaveToHistory(entry)
	}
	return ed, nil
}

// dropControl keeps out of the line the control characters the editor
// does not act on (Ctrl-@, Ctrl-O, Ctrl-Q, Ctrl-V, Ctrl-X, a lone Esc,
// Ctrl-\, Ctrl-], Ctrl-^, and the C1 controls): readline would insert
// them, unseen, and they would reach the transcript. readline's own keys
// (Alt-…, Delete) are negative runes.
func dropControl(r rune) (rune, bool) {
	switch {
	case r == 0, r == 15, r == 17, r == 22, r == 24, r >= 27 && r <= 30, r >= 0x80 && r < 0xa0:
		return r, false
	}
	return r, true
}

// ReadLine reads one input: a line, or several when a line ends in \
// (the \ removed) or a paste held newlines. Ctrl-C drops what was typed.
func (ed *editor) ReadLine() (string, error) {
	var parts []string
	ed.rl.SetPrompt("> ")
	for {
		// Bracketed paste is on only while the editor reads: a paste
		// into a tool's approval prompt stays plain text.
		io.WriteString(ed.out, "\x1b[?2004h")
		line, err := ed.rl.ReadLine()
		io.WriteString(ed.out, "\x1b[?2004l")
		if errors.Is(err, readline.ErrInterrupt) {
			fmt.Fprintln(ed.out, "(Ctrl-D or /exit to quit)")
			return "", nil
		}
		if err != nil {
			if len(parts) > 0 && errors.Is(err, io.EOF) {
				break
			}
			return "", err
		}
		if more, ok := strings.CutSuffix(line, `\`); ok {
			parts = append(parts, more)
			ed.rl.SetPrompt(". ")
			continue
		}
		parts = append(parts, line)
		break
	}
	input := strings.Join(parts, string(newlineMark))
	if strings.TrimSpace(unmark.Replace(input)) != "" {
		ed.rl.SaveToHistory(input)
		ed.appendHistory(input)
	}
	return unmark.Replace(input), nil
}

func (ed *editor) Close() error { return ed.rl.Close() }

// loadHistory returns the last historyLimit inputs of the history file,
// and cuts the file back to them when it has grown to twice as many. The
// history is a convenience: a file it cannot read or cut is reported and
// line mode goes on without it.
func (ed *editor) loadHistory() []string {
	data, err := os.ReadFile(ed.history)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		ed.warn(fmt.Sprintf("history: %v", err))
		return nil
	}
	var entries []string
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > 0 && utf8.Valid(line) {
			entries = append(entries, string(line))
		}
	}
	if len(entries) > 2*historyLimit {
		entries = entries[len(entries)-historyLimit:]
		if err := fsstore.WriteFileAtomic(ed.history, []byte(strings.Join(entries, "\n")+"\n")); err != nil {
			ed.warn(fmt.Sprintf("history: %v", err))
		}
	}
	return entries[max(0, len(entries)-historyLimit):]
}

// appendHistory adds an input to the history file, made 0600 in a 0700
// profile directory (what is typed may be secret). One write with
// O_APPEND keeps the lines of two chats on one profile whole. It is not
// synced: a lost entry costs nothing the transcript does not keep.
func (ed *editor) appendHistory(input string) {
	err := fsstore.EnsureDir(filepath.Dir(ed.history))
	var f *os.File
	if err == nil {
		f, err = os.OpenFile(ed.history, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, fsstore.FileMode)
	}
	if err == nil {
		_, err = f.WriteString(input + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		ed.warn(fmt.Sprintf("history: %v", err))
	}
}

// Bracketed paste: the terminal wraps pasted text in these.
var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// pasteFilter turns a bracketed paste into input the editor keeps on one
// line: the markers are dropped, and the newlines (CR, LF or CRLF) and tabs
// inside become newlineMark and tabMark, so a pasted message of several
// lines is one input, sent when Enter is pressed.
type pasteFilter struct {
	r       io.Reader
	in      []byte // read, not yet filtered
	out     []byte // filtered, not yet returned
	pasting bool
	lastCR  bool
	buf     [4096]byte
}

func (f *pasteFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		n, err := f.r.Read(f.buf[:])
		f.in = append(f.in, f.buf[:n]...)
		f.filter(err != nil)
		if err != nil && len(f.out) == 0 {
			return 0, err
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

// filter moves what it can of f.in to f.out. A tail that may be the start
// of a marker waits for the next read, unless the input has ended.
func (f *pasteFilter) filter(ended bool) {
	in := f.in
	for len(in) > 0 {
		if in[0] == 0x1b {
			switch {
			case bytes.HasPrefix(in, pasteStart):
				f.pasting, f.lastCR = true, false
				in = in[len(pasteStart):]
				continue
			case bytes.HasPrefix(in, pasteEnd):
				f.pasting = false
				in = in[len(pasteEnd):]
				continue
			case !ended && (bytes.HasPrefix(pasteStart, in) || bytes.HasPrefix(pasteEnd, in)):
				f.in = append(f.in[:0], in...)
				return
			}
		}
		b := in[0]
		in = in[1:]
		if !f.pasting {
			f.out = append(f.out, b)
			continue
		}
		switch {
		case b == '\n' && f.lastCR:
		case b == '\r' || b == '\n':
			f.out = utf8.AppendRune(f.out, newlineMark)
		case b == '\t':
			f.out = utf8.AppendRune(f.out, tabMark)
		default:
			f.out = append(f.out, b)
		}
		f.lastCR = b == '\r'
	}
	f.in = f.in[:0]
}

// completer completes slash commands, and their arguments where the
// table gives candidates (session titles after /resume).
type completer struct {
	store *sessions.Store
}

// Do returns the endings of the candidates for the word before the cursor
// (readline's AutoCompleter).
func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	typed := string(line[:pos])
	if !strings.HasPrefix(typed, "/") {
		return nil, 0
	}
	var names []string
	word := typed
	cmds := slashCommands()
	if verb, arg, ok := strings.Cut(typed, " "); ok {
		cmd, found := findSlash(cmds, verb)
		if !found || cmd.complete == nil {
			return nil, 0
		}
		word, names = arg, cmd.complete(c.store)
	} else {
		for _, cmd := range cmds {
			names = append(append(names, cmd.name), cmd.aliases...)
		}
	}
	var endings [][]rune
	for _, name := range names {
		if rest, ok := strings.CutPrefix(name, word); ok {
			endings = append(endings, []rune(rest+" "))
		}
	}
	return endings, utf8.RuneCountInString(word)
}
