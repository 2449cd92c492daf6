package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writerAgent is an exec model: "write NAME WORD" writes WORD to NAME
// with write_file, and a tool result is answered "done-N".
const writerAgent = `in=$(cat)
last=$(printf '%s\n' "$in" | grep -v '"role":"system"' | tail -n 1)
n=$(printf '%s\n' "$in" | wc -l)
case "$last" in
*'"role":"tool"'*) echo "{\"role\":\"assistant\",\"content\":\"done-$n\"}" ;;
*'"role":"user"'*)
  set -- $(printf '%s\n' "$last" | sed 's/.*"content":"\([^"]*\)".*/\1/')
  printf '{"role":"assistant","content":null,"tool_calls":[{"id":"call_%s","type":"function","function":{"name":"write_file","arguments":"{\\"path\\":\\"%s\\",\\"content\\":\\"%s\\\\n\\"}"}}]}\n' "$n" "$2" "$3" ;;
esac
`

// Line mode at a terminal: /undo asks whether to take the files back
// (checkpoints.restore: ask), and /rewind N offers both, the
// conversation only, or the files only.
func TestRewindAtATerminal(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(writerAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := exec.LookPath("hermes")
	if err != nil {
		t.Fatal(err)
	}
	tm := startTmux(t, "cd "+shellQuote(dir)+" && env HERMES_PROVIDER=exec HERMES_PROFILE=default HERMES_MODEL= HERMES_EXEC_COMMAND="+
		shellQuote("sh "+agent)+" "+shellQuote(exe)+" --home "+shellQuote(home)+" chat --yes")
	tm.waitFor("Ctrl-D to exit")
	exists := func(name string) bool {
		_, err := os.Lstat(filepath.Join(dir, name))
		return err == nil
	}
	waitFile := func(name string, want bool) {
		t.Helper()
		deadline := time.Now().Add(watchdog)
		for exists(name) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s exists: %v, want %v", name, !want, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, f := range []string{"a", "b", "c", "d"} {
		tm.text("write " + f + ".txt x")
		tm.keys("Enter")
		waitFile(f+".txt", true)
		tm.waitFor("done-")
		tm.waitFor("\n>")
	}
	tm.text("/undo")
	tm.keys("Enter")
	tm.waitFor("[y/N]")
	tm.text("y")
	tm.keys("Enter")
	waitFile("d.txt", false)
	tm.waitFor("d.txt (removed: the agent created it)\n>")

	tm.text("/rewind")
	tm.keys("Enter")
	screen := tm.waitFor("goes back to just before turn N")
	_, table, _ := strings.Cut(screen, "> /rewind\n")
	if !strings.Contains(table, "3  9    write c.txt x") || strings.Contains(table, "d.txt") {
		t.Fatalf("/rewind lists:\n%s", table)
	}
	tm.text("/rewind 3")
	tm.keys("Enter")
	tm.waitFor("or nothing? >")
	tm.text("b")
	tm.keys("Enter")
	waitFile("c.txt", false)
	tm.waitFor("c.txt (removed: the agent created it)\n>")

	tm.text("/rewind 2")
	tm.keys("Enter")
	tm.waitFor("or nothing? >")
	tm.text("c")
	tm.keys("Enter")
	tm.waitFor("forked at message 4")
	tm.waitFor("(hermes chat --resume")

	tm.text("/rewind 1")
	tm.keys("Enter")
	tm.waitFor("or nothing? >")
	tm.text("f")
	tm.keys("Enter")
	waitFile("a.txt", false)
	if !exists("b.txt") {
		t.Fatal("b.txt, which only the conversation rewind passed over, was removed")
	}
	// The prompt first: a Ctrl-D typed before line mode reads again is
	// flushed when it sets the terminal raw.
	tm.waitFor("a.txt (removed: the agent created it)\n>")
	tm.keys("C-d")
	tm.waitFor("[exit 0]")
}
