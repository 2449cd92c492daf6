package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/supervisor"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
)

func toolEnv(t *testing.T) *Env {
	t.Helper()
	dir := t.TempDir()
	warn := func(msg string) { t.Log(msg) }
	return &Env{
		SessionID:       "s1",
		Cwd:             dir,
		Sessions:        sessions.NewStore(filepath.Join(dir, "profile"), "default", time.Second, warn),
		Tasks:           tasks.NewStore(filepath.Join(dir, "profile"), time.Second, warn),
		MaxOutput:       DefaultMaxOutput,
		TerminalTimeout: 30 * time.Second,
	}
}

func run(t *testing.T, tool Tool, env *Env, args string) (string, error) {
	t.Helper()
	return tool.Run(context.Background(), env, json.RawMessage(args))
}

func TestSelect(t *testing.T) {
	t.Parallel()
	names := func(ts []Tool) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name())
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		names    []string
		inWorker bool
		want     string
		err      string
	}{
		{nil, false, "terminal,process,read_file,write_file,edit_file,search_files,find_files,session_search", ""},
		{nil, true, "terminal,process,read_file,write_file,edit_file,search_files,find_files,session_search,kanban_complete,kanban_block,kanban_comment,kanban_heartbeat,kanban_create", ""},
		{[]string{"read_file", "terminal", "read_file"}, false, "read_file,terminal", ""},
		{[]string{}, false, "", ""},
		{[]string{"rm_rf"}, false, "", `unknown tool "rm_rf"`},
		{[]string{"kanban_complete"}, false, "", "only for kanban workers"},
		{[]string{"kanban_complete"}, true, "kanban_complete", ""},
	} {
		got, err := Select(c.names, c.inWorker)
		if c.err != "" {
			if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Select(%q, %v): %v, want ErrInvalid with %q", c.names, c.inWorker, err, c.err)
			}
			continue
		}
		if err != nil || names(got) != c.want {
			t.Errorf("Select(%q, %v) = %s, %v; want %s", c.names, c.inWorker, names(got), err, c.want)
		}
	}
}

func TestSchemas(t *testing.T) {
	t.Parallel()
	for _, tool := range Builtin() {
		var s struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(tool.Schema(), &s); err != nil {
			t.Fatalf("%s: %v", tool.Name(), err)
		}
		if s.Type != "function" || s.Function.Name != tool.Name() || s.Function.Description == "" || !strings.Contains(string(s.Function.Parameters), `"type":"object"`) {
			t.Errorf("%s: schema %s", tool.Name(), tool.Schema())
		}
	}
}

func TestApprovalNeeds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tool Tool
		args string
		want bool
	}{
		{terminalTool{}, `{"command":"ls"}`, true},
		{writeFileTool{}, `{"path":"a","content":""}`, true},
		{processTool{}, `{"action":"kill","task_id":"x"}`, true},
		{processTool{}, `{"action":"status","task_id":"x"}`, false},
		{processTool{}, `{"action":"wait","task_id":"x"}`, false},
		{readFileTool{}, `{"path":"a"}`, false},
		{editFileTool{}, `{"path":"a","old_string":"b","new_string":"c"}`, true},
		{searchFilesTool{}, `{"pattern":"a"}`, false},
		{findFilesTool{}, `{"glob":"*"}`, false},
		{searchTool{}, `{"query":"a"}`, false},
		{kanbanTool{name: "kanban_complete"}, `{"result":"a"}`, false},
	} {
		if got := c.tool.NeedsApproval(json.RawMessage(c.args)); got != c.want {
			t.Errorf("%s %s: needs approval %v, want %v", c.tool.Name(), c.args, got, c.want)
		}
	}
}

func TestCut(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("a", 5000) + strings.Repeat("z", 5000)
	got := cut(s, 1000)
	if len(got) > 1000 || !strings.HasPrefix(got, "aaaa") || !strings.HasSuffix(got, "zzzz") {
		t.Fatalf("cut: %d bytes, %q…%q", len(got), got[:10], got[len(got)-10:])
	}
	kept := strings.Count(got, "a") + strings.Count(got, "z")
	if !strings.Contains(got, fmt.Sprintf("[… %d bytes cut …]", len(s)-kept)) {
		t.Fatalf("the marker does not count the cut bytes (%d kept): %q", kept, got[480:540])
	}
	if cut("short", 1000) != "short" {
		t.Fatal("a short text was cut")
	}
}

func TestTerminalOutput(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	out, err := run(t, terminalTool{}, env, `{"command":"echo out; echo err >&2; exit 3"}`)
	if err != nil {
		t.Fatal(err)
	}
	if out != "exit code: 3\nstdout:\nout\n\nstderr:\nerr\n" {
		t.Fatalf("result %q", out)
	}
	if out, _ := run(t, terminalTool{}, env, `{"command":"pwd"}`); !strings.Contains(out, env.Cwd) {
		t.Fatalf("not run in the working directory: %q", out)
	}
	if out, _ := run(t, terminalTool{}, env, `{"command":"kill -TERM $$"}`); !strings.HasPrefix(out, "killed by signal 15 (SIGTERM)") {
		t.Fatalf("a signal: %q", out)
	}
	if _, err := run(t, terminalTool{}, env, `{"command":" "}`); err == nil {
		t.Fatal("an empty command ran")
	}
	if _, err := run(t, terminalTool{}, env, `{"command":"ls","cwd":"/"}`); err == nil {
		t.Fatal("an unknown argument was accepted")
	}
}

func TestTerminalOutputCut(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	env.MaxOutput = 1024
	out, err := run(t, terminalTool{}, env, `{"command":"echo BEGIN; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END; echo small >&2"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 1024 || !strings.Contains(out, "BEGIN") || !strings.Contains(out, "END") ||
		!strings.Contains(out, "bytes cut") || !strings.Contains(out, "stderr:\nsmall\n") {
		t.Fatalf("%d bytes: %q", len(out), out)
	}
}

// A timeout kills the whole process group, a grandchild included, and the
// call returns long before the grandchild would have ended.
func TestTerminalTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	start := time.Now()
	out, err := run(t, terminalTool{}, env, `{"command":"sleep 300 & echo $! > gc.pid; echo started; wait","timeout":1}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "timed out after 1s") || !strings.Contains(out, "started") {
		t.Fatalf("result %q", out)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("took %v", d)
	}
	waitGone(t, readPID(t, filepath.Join(env.Cwd, "gc.pid")))
}

// Ctrl-C (a cancelled context) kills the group and fails the call.
func TestTerminalCancel(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(env.Cwd, "gc.pid")); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	_, err := terminalTool{}.Run(ctx, env, json.RawMessage(`{"command":"sleep 300 & echo $! > gc.tmp; mv gc.tmp gc.pid; wait"}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	waitGone(t, readPID(t, filepath.Join(env.Cwd, "gc.pid")))
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitGone fails the test unless pid is gone within a generous bound.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 600 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		// A zombie not yet reaped by its parent (the dead shell's init)
		// counts as gone: it has no start time.
		if supervisor.ProcStart(pid) == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d still runs", pid)
}

func TestTerminalBackground(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	var got []string
	env.StartTask = func(_ context.Context, name string, argv []string, cwd, sessionID string) (tasks.Task, error) {
		got = append(got, name, strings.Join(argv, " "), cwd, sessionID)
		return tasks.Task{ID: "t1", PID: 42}, nil
	}
	out, err := run(t, terminalTool{}, env, `{"command":"make all","background":true}`)
	if err != nil || !strings.Contains(out, "started background task t1") {
		t.Fatalf("%q, %v", out, err)
	}
	if strings.Join(got, "|") != "agent|sh -c make all|"+env.Cwd+"|s1" {
		t.Fatalf("StartTask got %q", got)
	}
}

// finishedTask makes a finished task record of session sid with a log.
func finishedTask(t *testing.T, env *Env, sid, log string) string {
	t.Helper()
	task, err := env.Tasks.Create(tasks.Task{Name: "agent", Command: []string{"sh", "-c", "build"}, SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(env.Tasks.LogPath(task.ID), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	code := 0
	if _, _, err := env.Tasks.Finish(task.ID, func(r *tasks.Task) { r.Status, r.ExitCode = tasks.Succeeded, &code }); err != nil {
		t.Fatal(err)
	}
	return task.ID
}

func TestProcess(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	mine := finishedTask(t, env, "s1", "line 1\nline 2\n")
	theirs := finishedTask(t, env, "other", "secret\n")
	if out, err := run(t, processTool{}, env, `{"action":"status","task_id":"`+mine+`"}`); err != nil || !strings.Contains(out, "succeeded, exit code 0") {
		t.Fatalf("status: %q, %v", out, err)
	}
	if out, err := run(t, processTool{}, env, `{"action":"log","task_id":"`+mine+`"}`); err != nil || out != "line 1\nline 2\n" {
		t.Fatalf("log: %q, %v", out, err)
	}
	if out, err := run(t, processTool{}, env, `{"action":"wait","task_id":"`+mine+`"}`); err != nil || !strings.Contains(out, "log:\nline 1") {
		t.Fatalf("wait: %q, %v", out, err)
	}
	if _, err := run(t, processTool{}, env, `{"action":"log","task_id":"`+theirs+`"}`); err == nil || !strings.Contains(err.Error(), "does not belong to this session") {
		t.Fatalf("another session's task: %v", err)
	}
	if _, err := run(t, processTool{}, env, `{"action":"status","task_id":"20260101_000000_abcdef"}`); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
	if _, err := run(t, processTool{}, env, `{"action":"kill","task_id":"`+mine+`"}`); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("kill of a finished task: %v", err)
	}
	if _, err := run(t, processTool{}, env, `{"action":"explode","task_id":"`+mine+`"}`); err == nil {
		t.Fatal("an unknown action was accepted")
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	os.WriteFile(filepath.Join(env.Cwd, "f.txt"), []byte("one\ntwo\nthree\nfour\n"), 0o644)
	for args, want := range map[string]string{
		`{"path":"f.txt"}`:                      "one\ntwo\nthree\nfour\n",
		`{"path":"f.txt","offset":2,"limit":2}`: "two\nthree\n",
		`{"path":"f.txt","offset":4}`:           "four\n",
		`{"path":"f.txt","offset":9}`:           "",
	} {
		if got, err := run(t, readFileTool{}, env, args); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", args, got, err, want)
		}
	}
	os.WriteFile(filepath.Join(env.Cwd, "bin"), []byte("ELF\x00\x01"), 0o644)
	if _, err := run(t, readFileTool{}, env, `{"path":"bin"}`); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Fatalf("binary file: %v", err)
	}
	if _, err := run(t, readFileTool{}, env, `{"path":"."}`); err == nil {
		t.Fatal("a directory was read")
	}
	if _, err := run(t, readFileTool{}, env, `{"path":"missing"}`); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	out, err := run(t, writeFileTool{}, env, `{"path":"a/b/new.txt","content":"hello\n"}`)
	path := filepath.Join(env.Cwd, "a", "b", "new.txt")
	if err != nil || out != "wrote 6 bytes to "+path {
		t.Fatalf("%q, %v", out, err)
	}
	if got, _ := run(t, readFileTool{}, env, `{"path":"a/b/new.txt"}`); got != "hello\n" {
		t.Fatalf("read back %q", got)
	}
	os.Chmod(path, 0o750)
	if _, err := run(t, writeFileTool{}, env, `{"path":"a/b/new.txt","content":"again"}`); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o750 {
		t.Fatalf("mode %v, want the existing 0750 kept", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("left beside the file: %v", entries)
	}
	os.Symlink(path, filepath.Join(env.Cwd, "link"))
	if _, err := run(t, writeFileTool{}, env, `{"path":"link","content":"x"}`); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "again" {
		t.Fatalf("written through the link: %q", b)
	}
	if _, err := run(t, writeFileTool{}, env, `{"path":"x"}`); err == nil {
		t.Fatal("a write without content was accepted")
	}
}

func TestSessionSearch(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	s, _, err := env.Sessions.Create(sessions.Session{Title: "plans"})
	if err != nil {
		t.Fatal(err)
	}
	env.Sessions.Append(s.ID, []sessions.Message{{Role: "user", Content: sessions.TextContent("the rollback needs a flag")}})
	out, err := run(t, searchTool{}, env, `{"query":"ROLLBACK"}`)
	if err != nil || !strings.Contains(out, s.ID+"  plans  #1 user:") || !strings.Contains(out, "rollback needs") {
		t.Fatalf("%q, %v", out, err)
	}
	if out, _ := run(t, searchTool{}, env, `{"query":"nowhere"}`); out != "no matches" {
		t.Fatalf("%q", out)
	}
}

// fakeWorker records the kanban calls and refuses when told to.
type fakeWorker struct {
	calls  []string
	refuse error
}

func (w *fakeWorker) Complete(_ context.Context, r string) error {
	w.calls = append(w.calls, "complete "+r)
	return w.refuse
}
func (w *fakeWorker) Block(_ context.Context, r string) (bool, error) {
	w.calls = append(w.calls, "block "+r)
	return false, w.refuse
}
func (w *fakeWorker) Comment(_ context.Context, s string) error {
	w.calls = append(w.calls, "comment "+s)
	return w.refuse
}
func (w *fakeWorker) Heartbeat(context.Context) error {
	w.calls = append(w.calls, "heartbeat")
	return w.refuse
}
func (w *fakeWorker) Create(_ context.Context, title, body, assignee string, subtask bool) (string, error) {
	w.calls = append(w.calls, fmt.Sprintf("create %s/%s/%s/%v", title, body, assignee, subtask))
	return "t9", w.refuse
}

func TestKanbanTools(t *testing.T) {
	t.Parallel()
	env := toolEnv(t)
	w := &fakeWorker{}
	env.Kanban = w
	for name, args := range map[string]string{
		"kanban_complete": `{"result":"shipped"}`, "kanban_block": `{"reason":"no data"}`,
		"kanban_comment": `{"text":"half way"}`, "kanban_heartbeat": `{}`,
		"kanban_create": `{"title":"part one","body":"do it","subtask":true}`,
	} {
		if _, err := run(t, kanbanTool{name: name}, env, args); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if len(w.calls) != 5 || !slices.Contains(w.calls, "create part one/do it//true") {
		t.Fatalf("calls %q", w.calls)
	}
	if _, err := run(t, kanbanTool{name: "kanban_block"}, env, `{"reason":" "}`); err == nil {
		t.Fatal("a blank reason was accepted")
	}
	w.refuse = fsstore.Refusedf("run r1 does not hold the claim")
	if _, err := run(t, kanbanTool{name: "kanban_complete"}, env, `{"result":"late"}`); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("a stale worker's refusal: %v", err)
	}
	env.Kanban = nil
	if _, err := run(t, kanbanTool{name: "kanban_complete"}, env, `{"result":"x"}`); err == nil {
		t.Fatal("outside a worker")
	}
}
