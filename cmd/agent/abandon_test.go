package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/sessions"
)

// stubborn is a tool that ignores its context: it runs until released, as
// a read of a file that never answers does.
type stubborn struct {
	started chan struct{}
	release chan struct{}
}

func newStubborn() *stubborn {
	return &stubborn{started: make(chan struct{}), release: make(chan struct{})}
}

func (s *stubborn) Name() string { return "stubborn" }
func (s *stubborn) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"function","function":{"name":"stubborn","parameters":{"type":"object"}}}`)
}
func (s *stubborn) NeedsApproval(json.RawMessage) bool { return false }
func (s *stubborn) Run(context.Context, *Env, json.RawMessage) (string, error) {
	close(s.started)
	<-s.release
	return "the late result", nil
}

// late records what Engine.Late is told.
type late chan string

func (l late) tell(sid string, c provider.ToolCall, result string) { l <- c.ID + ": " + result }

// A call that does not end when its turn is cancelled is abandoned after
// CancelGrace: the turn ends at once, the call has one result saying it was
// still running, and the result it returns later is never stored (Late is
// told of it): the call is answered once, ever.
func TestAbandonedCallIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	tool := newStubborn()
	told := make(late, 1)
	p := &scripted{t: t, replies: []sessions.Message{calls("stubborn", `{}`)}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{tool}, CancelGrace: 10 * time.Millisecond, Late: told.tell}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-tool.started
		cancel()
	}()
	_, err := e.Run(ctx, Turn{SessionID: id, Input: user("go")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if got := resultOf(t, stored(t, st, id), "call_stubborn_0"); got != abandonedResult {
		t.Fatalf("the call's result is %q, want %q", got, abandonedResult)
	}
	close(tool.release)
	if got := <-told; got != "call_stubborn_0: the late result" {
		t.Fatalf("Late was told %q", got)
	}
	msgs := stored(t, st, id)
	resultOf(t, msgs, "call_stubborn_0") // still exactly one
	if err := validForAPI(msgs); err != nil {
		t.Fatal(err)
	}
}

// A call past ToolTimeout is cancelled and answered as timed out, and the
// turn goes on: the model reads that result. A tool that ends when told
// (its context) gives its own words after the timeout's; one that does not
// is abandoned after CancelGrace, as on a cancelled turn, and its late
// result is not stored.
func TestToolTimeout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		tool func() (Tool, func())
		want string
	}{
		{"ends when told", func() (Tool, func()) {
			return &fakeTool{name: "slow", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			}}, func() {}
		}, "error: timed out after 20ms (tool_timeout): the call was cancelled; it may have taken effect in part: context deadline exceeded"},
		{"does not end", func() (Tool, func()) {
			s := newStubborn()
			return s, func() { close(s.release) }
		}, "error: timed out after 20ms (tool_timeout), and still running 10ms later: hermes stopped waiting for it; whatever it does from now on is not reported; check its effects before repeating it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t)
			id := newSession(t, st)
			tool, release := c.tool()
			defer release()
			p := &scripted{t: t, replies: []sessions.Message{calls(tool.Name(), `{}`), text("ok")}}
			e := &Engine{Sessions: st, Provider: p, Tools: []Tool{tool}, ToolTimeout: 20 * time.Millisecond, CancelGrace: 10 * time.Millisecond, Late: func(string, provider.ToolCall, string) {}}
			res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Text() != "ok" {
				t.Fatalf("reply %q", res.Text())
			}
			msgs := stored(t, st, id)
			if got := resultOf(t, msgs, "call_"+tool.Name()+"_0"); got != c.want {
				t.Fatalf("result %q\nwant   %q", got, c.want)
			}
			if last := p.seen[len(p.seen)-1]; !strings.HasPrefix(last[len(last)-1].Text(), "error: timed out") {
				t.Fatalf("the model did not read the timeout:\n%s", dumpMsgs(last))
			}
		})
	}
}

// lateWriter is write_file that ignores its context: it writes once
// released, as a write stuck behind a slow disk does.
type lateWriter struct{ *stubborn }

func (lateWriter) Name() string                       { return "write_file" }
func (lateWriter) Schema() json.RawMessage            { return writeFileTool{}.Schema() }
func (lateWriter) NeedsApproval(json.RawMessage) bool { return false }
func (w lateWriter) Run(_ context.Context, env *Env, raw json.RawMessage) (string, error) {
	close(w.started)
	<-w.release
	return writeFileTool{}.Run(context.Background(), env, raw)
}

// A write_file abandoned by its cancelled turn that writes afterwards
// has its checkpoint, and its change is recorded in a note of the
// session (its call keeps its one result): the late change can be taken
// back like any other, and no pending record is left.
func TestAbandonedCallsLateWriteIsRecorded(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tool := lateWriter{newStubborn()}
	told := make(late, 1)
	p := &scripted{t: t, replies: []sessions.Message{calls("write_file", args("path", "f.txt", "content", "late\n"))}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{tool}, CancelGrace: 10 * time.Millisecond, Late: told.tell}
	env := &Env{Cwd: dir, Checkpoints: checkpoints.Open(t.TempDir())}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-tool.started
		cancel()
	}()
	if _, err := e.Run(ctx, Turn{SessionID: id, Input: user("go"), Env: env}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	close(tool.release)
	<-told
	if b, _ := os.ReadFile(path); string(b) != "late\n" {
		t.Fatalf("f.txt = %q, want the late write", b)
	}
	msgs := stored(t, st, id)
	if got := resultOf(t, msgs, "call_write_file_0"); got != abandonedResult {
		t.Fatalf("the call's result is %q", got)
	}
	recs, err := checkpoints.Records(id, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || len(recs[0].Changes) != 1 || recs[0].Changes[0].Path != path ||
		recs[0].Changes[0].After != checkpoints.Hash([]byte("late\n")) {
		t.Fatalf("records %+v, want the late write's\n%s", recs, dumpMsgs(msgs))
	}
	if m := msgs[len(msgs)-1]; m.Seq != recs[0].Seq || !IsNote(m) || !strings.Contains(m.Text(), "call_write_file_0") {
		t.Fatalf("the late change is not recorded in a note naming its call:\n%s", dumpMsgs(msgs))
	}
	if b, err := env.Checkpoints.Get(recs[0].Changes[0].Before); err != nil || string(b) != "old\n" {
		t.Fatalf("before-image %q, %v", b, err)
	}
	if p, _ := env.Checkpoints.AllPending(); len(p) != 0 {
		t.Fatalf("pending records left: %v", p)
	}
	if err := validForAPI(msgs); err != nil {
		t.Fatal(err)
	}
}

// A note stored between a turn's calls and their results (an abandoned
// call's late change, recorded while another turn of the session runs
// its calls) reaches the provider after those results, which it reads
// as they are, not as interrupted.
func TestNoteAmidCallsWaitsForTheirResults(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	c := calls("read_file", `{}`)
	lateNote := note(sessions.Message{Role: "system", Content: sessions.TextContent(checkpoints.LateNote + "write_file (call x) changed /f.")})
	result := sessions.Message{Role: "tool", ToolCallID: "call_read_file_0", Content: sessions.TextContent("the result")}
	if _, err := st.Append(id, append(user("go"), c, lateNote, result)); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := (history{store: st, id: id}).Each(func(m sessions.Message) error {
		got = append(got, m.Role+": "+m.Text())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"user: go", "assistant: ", "tool: the result", "system: " + lateNote.Text()}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A transcript that ends with calls left unanswered by a crash and a
// note stored after them (an abandoned call's late change): the next
// turn still stores a result for each of those calls.
func TestCrashedCallsBeforeANoteAreAnswered(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	lateNote := note(sessions.Message{Role: "system", Content: sessions.TextContent(checkpoints.LateNote + "write_file (call x) changed /f.")})
	if _, err := st.Append(id, append(user("go"), calls("read_file", `{}`), lateNote)); err != nil {
		t.Fatal(err)
	}
	e := &Engine{Sessions: st, Provider: &scripted{t: t, replies: []sessions.Message{text("ok")}}}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("next")}); err != nil {
		t.Fatal(err)
	}
	msgs := stored(t, st, id)
	if got := resultOf(t, msgs, "call_read_file_0"); got != interruptedResult {
		t.Fatalf("result %q", got)
	}
}
