package cmd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore/sessions"
)

func TestDecodeKeys(t *testing.T) {
	for in, want := range map[string][]key{
		"ab":               {'a', 'b'},
		"é\r":              {'é', keyEnter},
		"\x1b":             {keyEsc},
		"\x1b[A\x1b[B":     {keyUp, keyDown},
		"\x1bOA\x1bOB":     {keyUp, keyDown},
		"\x1b[5~\x1b[6~":   {keyPageUp, keyPageDown},
		"\x1b[15~x":        {'x'},
		"\x1bx":            nil,
		"\x7f\x08\x15":     {keyBackspace, keyBackspace, keyKill},
		"\x03\x04":         {keyQuit, keyQuit},
		"\x10\x0e\x16\xff": {keyUp, keyDown},
		// macOS: Terminal.app's Option-arrows, iTerm2's, and fn-Delete
		// are no keys of the picker, and no Esc either.
		"\x1bb\x1bfx":         {'x'},
		"\x1b[1;3D\x1b[1;3Cx": {'x'},
		"\x1b[3~x":            {'x'},
	} {
		if got := decodeKeys([]byte(in)); !reflect.DeepEqual(got, want) {
			t.Errorf("decodeKeys(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestPicker(t *testing.T) {
	p := newPicker([]sessions.Session{
		{ID: "20261121_000003_cccccc", Title: "release notes", Preview: "draft the notes"},
		{ID: "20261121_000002_bbbbbb", Title: "", Preview: "fix the flaky test"},
		{ID: "20261121_000001_aaaaaa", Title: "Refactor", Preview: "split chat.go"},
	})
	typed := func(s string) {
		for _, r := range s {
			p.press(key(r))
		}
	}
	typed("re")
	if got := len(p.shown); got != 2 {
		t.Fatalf("filter re shows %d sessions, want 2 (title, either case)", got)
	}
	typed(" chat")
	if len(p.shown) != 1 || p.all[p.shown[0]].Title != "Refactor" {
		t.Fatalf("every word must match: shown %v", p.shown)
	}
	p.press(keyKill)
	typed("flaky")
	if id, done := p.press(keyEnter); !done || id != "20261121_000002_bbbbbb" {
		t.Fatalf("Enter on a preview match: %q %v", id, done)
	}
	p.press(keyKill)
	typed("aaaa")
	if len(p.shown) != 1 {
		t.Fatalf("filter by id shows %v", p.shown)
	}
	for range 4 {
		p.press(keyBackspace)
	}
	p.press(keyDown)
	p.press(keyDown)
	p.press(keyDown)
	p.press(keyUp)
	if id, _ := p.press(keyEnter); id != "20261121_000002_bbbbbb" {
		t.Fatalf("Down Down Down Up selects %s, want the second", id)
	}
	typed("nothing matches this")
	if id, done := p.press(keyEnter); done || id != "" {
		t.Fatalf("Enter with nothing shown: %q %v", id, done)
	}
	if id, done := p.press(keyEsc); !done || id != "" {
		t.Fatalf("Esc: %q %v", id, done)
	}
}

func TestPickerScrolls(t *testing.T) {
	var list []sessions.Session
	for i := range 50 {
		list = append(list, sessions.Session{ID: strings.Repeat("x", i+1)})
	}
	p := newPicker(list)
	var screen strings.Builder
	p.draw(&screen, 80, 7) // the filter line, the help line, 5 rows
	for range 7 {
		p.press(keyDown)
	}
	screen.Reset()
	p.draw(&screen, 80, 7)
	if p.top != 3 || !strings.Contains(screen.String(), "> "+strings.Repeat("x", 8)+" ") {
		t.Fatalf("after 7 Downs: top %d, screen %q", p.top, screen.String())
	}
	p.press(keyPageDown)
	p.press(keyPageDown)
	if p.cursor != 17 {
		t.Fatalf("two pages down from 7: row %d, want 17", p.cursor)
	}
}
