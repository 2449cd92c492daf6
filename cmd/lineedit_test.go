package cmd

import (
	"bufio"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/hermes/hermes/fsstore/sessions"
)

// chunks is a reader that returns each of its strings from one Read, as a
// terminal returns what arrived.
type chunks []string

func (c *chunks) Read(p []byte) (int, error) {
	if len(*c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*c)[0])
	(*c)[0] = (*c)[0][n:]
	if (*c)[0] == "" {
		*c = (*c)[1:]
	}
	return n, nil
}

func TestPasteFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want string
	}{
		{"typed", []string{"ab\r", "\x1b[D"}, "ab\r\x1b[D"},
		{"paste of three lines", []string{"\x1b[200~one\rtwo\rthree\x1b[201~\r"}, "one␤two␤three\r"},
		{"CRLF and LF in a paste", []string{"\x1b[200~a\r\nb\nc\x1b[201~"}, "a␤b␤c"},
		{"a tab in a paste", []string{"\x1b[200~\tx\x1b[201~\t"}, "␉x\t"},
		{"markers split across reads", []string{"x\x1b[2", "00~a\r", "b\x1b", "[201", "~\r"}, "xa␤b\r"},
		{"a lone Esc at the end", []string{"a\x1b"}, "a\x1b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := chunks(slices.Clone(tc.in))
			got, err := io.ReadAll(&pasteFilter{r: &in})
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	// One byte a read: every marker is split.
	in := "\x1b[200~l1\rl2\x1b[201~\r"
	got, err := io.ReadAll(&pasteFilter{r: iotest.OneByteReader(strings.NewReader(in))})
	if err != nil || string(got) != "l1␤l2\r" {
		t.Fatalf("one byte a read: got %q, %v", got, err)
	}
}

func TestDropControl(t *testing.T) {
	for r, keep := range map[rune]bool{
		'a': true, 'é': true, 0x01: true, 0x17: true, 0x12: true, '\r': true, '\t': true, 0x7f: true, -1: true,
		0x00: false, 0x16: false, 0x11: false, 0x1b: false, 0x9b: false,
	} {
		if _, ok := dropControl(r); ok != keep {
			t.Errorf("dropControl(%U) keeps it: %v, want %v", r, ok, keep)
		}
	}
}

func TestCompleter(t *testing.T) {
	store := sessions.NewStore(t.TempDir(), "default", 0, func(string) {})
	for _, title := range []string{"release notes", "refactor", "other"} {
		if _, _, err := store.Create(sessions.Session{Title: title}); err != nil {
			t.Fatal(err)
		}
	}
	c := &completer{store: store}
	for _, tc := range []struct {
		line   string
		want   []string
		length int
	}{
		{"/re", []string{"sume ", "try ", "wind "}, 3},
		{"/t", []string{"asks ", "itle ", "ools "}, 2},
		{"/tasks h", []string{"istory "}, 1},
		{"/qu", []string{"it "}, 3},
		{"/resume re", []string{"factor ", "lease notes "}, 2},
		{"/resume ", []string{"other ", "refactor ", "release notes "}, 0},
		{"hello /re", nil, 0},
		{"/title re", nil, 2},
	} {
		endings, length := c.Do([]rune(tc.line), len([]rune(tc.line)))
		var got []string
		for _, e := range endings {
			got = append(got, string(e))
		}
		slices.Sort(got)
		if !reflect.DeepEqual(got, tc.want) || (got != nil && length != tc.length) {
			t.Errorf("Do(%q) = %q, %d; want %q, %d", tc.line, got, length, tc.want, tc.length)
		}
	}
}

// TestSlashCommandsOneTable checks that /help, Tab completion and chat
// --help each name every command of the table.
func TestSlashCommandsOneTable(t *testing.T) {
	c := &completer{store: sessions.NewStore(t.TempDir(), "default", 0, func(string) {})}
	endings, _ := c.Do([]rune("/"), 1)
	var completed []string
	for _, e := range endings {
		completed = append(completed, "/"+strings.TrimSpace(string(e)))
	}
	help := slashHelp(slashCommands())
	chatHelp := chatCommand().Description
	for _, cmd := range slashCommands() {
		for _, name := range append([]string{cmd.name}, cmd.aliases...) {
			if !slices.Contains(completed, name) {
				t.Errorf("%s is not completed: %q", name, completed)
			}
			if !strings.Contains(help, name) {
				t.Errorf("/help lacks %s", name)
			}
			if !strings.Contains(chatHelp, name+" ") && !strings.Contains(chatHelp, name+",") {
				t.Errorf("chat --help lacks %s", name)
			}
		}
	}
	if len(completed) != len(slashCommands())+1 { // and /quit
		t.Errorf("completed %q", completed)
	}
}

func TestPlainLines(t *testing.T) {
	var prompts strings.Builder
	p := &plainLines{in: bufio.NewReader(strings.NewReader("one\r\ntwo\nlast")), out: &prompts, prompt: "> "}
	var got []string
	for {
		line, err := p.ReadLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line)
	}
	if !reflect.DeepEqual(got, []string{"one", "two", "last"}) || prompts.String() != "> > > > " {
		t.Fatalf("lines %q, prompts %q", got, prompts.String())
	}
}
