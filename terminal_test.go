package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The terminal tests drive the real binary in tmux, as a user at a
// terminal would: keys in with send-keys, the screen out with capture-pane.
// The binary is the test binary under the name hermes, which testscript.Main
// put on $PATH.

// watchdog bounds every wait for the screen: far above what a loaded
// machine needs, it only turns a hang into a failure.
const watchdog = 60 * time.Second

// tmuxServers counts the servers started, to name their sockets.
var tmuxServers int

type tmux struct {
	t      *testing.T
	socket string
}

// startTmux runs command (a shell command line) in a tmux server of its
// own, in one 100x30 window. When the command ends, the window shows
// "[exit N]" and stays.
func startTmux(t *testing.T, command string) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: apt-get install tmux (.ci/run installs it)")
	}
	tmuxServers++
	tm := &tmux{t: t, socket: fmt.Sprintf("hermes-test-%d-%d", os.Getpid(), tmuxServers)}
	tm.run("-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30",
		command+`; echo "[exit $?]"; sleep 3600`)
	t.Cleanup(func() { exec.Command("tmux", "-L", tm.socket, "kill-server").Run() })
	return tm
}

func (tm *tmux) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.socket}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys sends tmux key names (Enter, Up, C-d); text sends text as it is.
func (tm *tmux) keys(keys ...string) {
	tm.t.Helper()
	tm.run(append([]string{"send-keys", "-t", "0"}, keys...)...)
}

func (tm *tmux) text(s string) {
	tm.t.Helper()
	tm.run("send-keys", "-t", "0", "-l", s)
}

// waitFor polls the screen until it shows want, and returns it. Lines the
// terminal wrapped are joined (-J), so that what is looked for does not
// depend on the width of a path in it.
func (tm *tmux) waitFor(want string) string {
	tm.t.Helper()
	deadline := time.Now().Add(watchdog)
	for {
		screen := tm.run("capture-pane", "-p", "-J", "-t", "0")
		if strings.Contains(screen, want) {
			return screen
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen did not show %q within %v:\n%s", want, watchdog, screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hermesCommand is a shell command line running hermes on home with the
// echo provider, whatever the environment of the test says.
func hermesCommand(t *testing.T, home string, args ...string) string {
	t.Helper()
	exe, err := exec.LookPath("hermes")
	if err != nil {
		t.Fatal(err)
	}
	line := []string{"env", "HERMES_PROVIDER=echo", "HERMES_PROFILE=default", "HERMES_MODEL=", shellQuote(exe), "--home", shellQuote(home)}
	for _, a := range args {
		line = append(line, shellQuote(a))
	}
	return strings.Join(line, " ")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// hermesOut runs hermes on home with the echo provider and returns stdout.
func hermesOut(t *testing.T, home string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("sh", "-c", hermesCommand(t, home, args...))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hermes %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// userMessages returns the text of the user messages of session id.
func userMessages(t *testing.T, home, id string) []string {
	t.Helper()
	var sess struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(hermesOut(t, home, "sessions", "export", id), &sess); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range sess.Messages {
		if m.Role == "user" {
			texts = append(texts, m.Content)
		}
	}
	return texts
}

// sessionIDs returns the ids of home's sessions by title, and the ids in
// the order sessions list gives them.
func sessionIDs(t *testing.T, home string) (byTitle map[string]string, ids []string) {
	t.Helper()
	byTitle = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(hermesOut(t, home, "--json", "sessions", "list", "--limit", "0")))
	for sc.Scan() {
		var s struct{ ID, Title string }
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		byTitle[s.Title] = s.ID
		ids = append(ids, s.ID)
	}
	return byTitle, ids
}

// TestLineEditing is issue 18's report: in a terminal, Up, abc, Left,
// Left, X, Enter after "first line" stored the arrow keys' escape codes.
func TestLineEditing(t *testing.T) {
	home := t.TempDir()
	tm := startTmux(t, hermesCommand(t, home, "chat"))
	tm.waitFor("Ctrl-D to exit")
	tm.text("first line")
	tm.keys("Enter")
	// Keys wait for the next prompt: the editor draws it once the terminal
	// is raw, and a Ctrl-D typed before that is the cooked terminal's
	// end of file, which the editor never sees.
	tm.waitFor("you said: first line\n>")
	tm.keys("Up")
	tm.text("abc")
	tm.keys("Left", "Left")
	tm.text("X")
	tm.keys("Enter")
	// The paste too waits for the prompt: sent before it, the cooked
	// terminal echoed it after the reply and passed it on as three lines.
	tm.waitFor("you said: first lineaXbc\n>")

	// A paste of three lines (tmux sends it bracketed, as the editor asks)
	// is one message, sent by the Enter after it.
	tm.run("set-buffer", "one\ntwo\nthree")
	tm.run("paste-buffer", "-p", "-t", "0")
	tm.waitFor("one␤two␤three")
	tm.keys("Enter")
	tm.waitFor("\nthree\n>")
	tm.keys("C-d")
	tm.waitFor("[exit 0]")

	_, ids := sessionIDs(t, home)
	if len(ids) != 1 {
		t.Fatalf("sessions %v, want one", ids)
	}
	want := []string{"first line", "first lineaXbc", "one\ntwo\nthree"}
	if got := userMessages(t, home, ids[0]); !reflect.DeepEqual(got, want) {
		t.Fatalf("user messages %q, want %q", got, want)
	}
	transcript, err := os.ReadFile(filepath.Join(home, "profiles", "default", "sessions", ids[0]+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(transcript, []byte(`\u001b`)) || bytes.IndexByte(transcript, 0x1b) >= 0 {
		t.Fatalf("an escape code reached the transcript:\n%s", transcript)
	}
	fi, err := os.Stat(filepath.Join(home, "profiles", "default", "chat_history"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("history file mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestBrowse picks a session in the picker, by filter and arrows, and
// goes on with it in line mode; Esc quits and changes nothing.
func TestBrowse(t *testing.T) {
	home := t.TempDir()
	for _, title := range []string{"alpha", "beta", "gamma", "beta two"} {
		hermesOut(t, home, "chat", "--title", title, "-q", "hello "+title)
	}
	byTitle, _ := sessionIDs(t, home)

	tm := startTmux(t, hermesCommand(t, home, "sessions", "browse"))
	tm.waitFor("4 of 4")
	tm.text("beta")
	tm.waitFor("2 of 4")
	tm.keys("Down")
	tm.keys("Enter")
	tm.waitFor("resuming session " + byTitle["beta"])
	tm.waitFor("Ctrl-D to exit")
	tm.text("more")
	tm.keys("Enter")
	tm.waitFor("you said: more\n>")
	tm.keys("C-d")
	tm.waitFor("[exit 0]")
	if got, want := userMessages(t, home, byTitle["beta"]), []string{"hello beta", "more"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("beta's user messages %q, want %q", got, want)
	}

	before := hermesOut(t, home, "sessions", "export", "--all")
	tm = startTmux(t, hermesCommand(t, home, "sessions", "browse"))
	tm.waitFor("4 of 4")
	tm.keys("Down")
	tm.keys("Escape")
	tm.waitFor("[exit 0]")
	if after := hermesOut(t, home, "sessions", "export", "--all"); !bytes.Equal(before, after) {
		t.Fatal("Esc in the picker changed the sessions")
	}
}

// TestBrowseNeedsTerminal: without a terminal the picker is exit 2 and
// points to sessions list.
func TestBrowseNeedsTerminal(t *testing.T) {
	home := t.TempDir()
	hermesOut(t, home, "chat", "-q", "hello")
	cmd := exec.Command("sh", "-c", hermesCommand(t, home, "sessions", "browse")+" </dev/null")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "sessions list") {
		t.Fatalf("browse without a terminal: %v, %q", err, stderr.String())
	}
}
