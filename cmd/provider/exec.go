package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// defaultStderr is where an exec command's stderr goes: the caller's own,
// so agent programs can log to the terminal.
var defaultStderr io.Writer = os.Stderr

// execWaitDelay bounds the wait for the command's output once it has exited
// (or been killed): a background child that inherited stdout must not hold
// the call open.
const execWaitDelay = 2 * time.Second

// execProvider runs a command for each turn; see the package doc for the
// protocol.
type execProvider struct {
	command string
	timeout time.Duration
	stderr  io.Writer
}

func (p *execProvider) Name() string { return "exec" }

func (p *execProvider) Complete(ctx context.Context, req Request) (Reply, error) {
	ctx, cancel := withTimeout(ctx, p.timeout)
	defer cancel()

	// The transcript streams to the command's stdin as it is read, so a
	// long history is never held whole. MarshalJSON directly, not
	// json.Marshal: the store's own bytes, without json.Marshal's \u003c
	// escaping of < > &, are easier on shell scripts.
	stdin, feed := io.Pipe()
	fed := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(feed, 64<<10)
		err := req.History.Each(func(m sessions.Message) error {
			line, err := m.MarshalJSON()
			if err != nil {
				return err
			}
			w.Write(line)
			return w.WriteByte('\n')
		})
		if err == nil {
			err = w.Flush()
		}
		feed.CloseWithError(err)
		fed <- err
	}()

	out := &execOutput{stream: &streamWriter{w: req.Stream}, start: time.Now()}
	cmd := exec.CommandContext(ctx, "sh", "-c", p.command)
	cmd.Env = append(os.Environ(), "HERMES_SESSION_ID="+req.SessionID)
	if len(req.Tools) > 0 {
		path, err := writeTools(req.Tools)
		if err != nil {
			return Reply{}, &Error{Provider: "exec", Message: "exec provider: " + oneLine(err.Error()), Err: err}
		}
		defer os.Remove(path)
		cmd.Env = append(cmd.Env, "HERMES_TOOLS="+path)
	}
	if params := requestParams(req); params != nil {
		path, err := writeTemp("hermes-params-*.json", params)
		if err != nil {
			return Reply{}, &Error{Provider: "exec", Message: "exec provider: " + oneLine(err.Error()), Err: err}
		}
		defer os.Remove(path)
		cmd.Env = append(cmd.Env, "HERMES_PARAMS="+path)
	}
	cmd.Stdin = stdin
	cmd.Stdout = out
	cmd.Stderr = p.stderr
	// Its own process group, so that a cancel kills what the command
	// started too, not only sh.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = execWaitDelay

	err := cmd.Run()
	// A command that exits without reading all of stdin leaves the feeder
	// blocked: unblock it.
	stdin.CloseWithError(io.ErrClosedPipe)
	if ferr := <-fed; ferr != nil && !errors.Is(ferr, io.ErrClosedPipe) && err == nil {
		return Reply{}, &Error{Provider: "exec", Message: "exec provider: reading the transcript: " + oneLine(ferr.Error()), Err: ferr}
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // exited 0; only a leftover child still held stdout
	}
	if err != nil {
		if ctx.Err() != nil {
			return Reply{}, contextError(ctx, "exec provider", "exec", p.timeout)
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			e := &Error{Provider: "exec", ExitCode: exitErr.ExitCode()}
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				e.Message = fmt.Sprintf("exec provider: command killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
			} else {
				e.Message = fmt.Sprintf("exec provider: command exited with status %d", e.ExitCode)
			}
			return Reply{}, e
		}
		return Reply{}, &Error{Provider: "exec", Message: "exec provider: " + oneLine(err.Error()), Err: err}
	}
	out.flush()
	if out.err != "" {
		return Reply{}, &Error{Provider: "exec", Message: "exec provider: " + out.err}
	}
	if len(out.msgs) == 0 {
		return Reply{}, &Error{Provider: "exec", Message: "exec provider: command printed no messages (want JSONL chat messages on stdout)"}
	}
	return Reply{Messages: out.msgs}, nil
}

// writeTools writes the offered tools' schemas, a JSON array, to a
// temporary file for the command ($HERMES_TOOLS); the caller removes it.
func writeTools(tools []json.RawMessage) (string, error) {
	b, err := json.Marshal(tools)
	if err != nil {
		return "", err
	}
	return writeTemp("hermes-tools-*.json", b)
}

// requestParams is the request's model, when it names one, and its
// parameters, as one JSON object in the chat completions API's names
// ($HERMES_PARAMS); nil when there are none.
func requestParams(req Request) []byte {
	b, _ := json.Marshal(struct {
		Model string `json:"model,omitempty"`
		Params
	}{req.Model, req.Params}) // raw values that came from decoded JSON always encode
	if string(b) == "{}" {
		return nil
	}
	return b
}

// writeTemp writes b and a newline to a new temporary file named by
// pattern, and returns its path; the caller removes it.
func writeTemp(pattern string, b []byte) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// execOutput parses the command's stdout a line at a time as it arrives,
// so the reply's text reaches the stream while the command still runs.
type execOutput struct {
	stream *streamWriter
	buf    []byte // an unfinished line
	line   int    // lines seen
	msgs   []sessions.Message
	err    string // the first bad line; later lines are ignored
	texts  int    // assistant texts written to stream
	start  time.Time
}

// execUsage reads the usage a command's message holds (see the package
// doc): a usage.Call's token counts, model and request id, on an
// assistant message.
func execUsage(role string, raw json.RawMessage) (usage.Call, error) {
	if role != "assistant" {
		return usage.Call{}, fmt.Errorf("usage on a %s message (only an assistant message holds one)", role)
	}
	var in struct {
		Input         int64  `json:"input"`
		Output        int64  `json:"output"`
		CacheRead     int64  `json:"cache_read"`
		CacheWrite5m  int64  `json:"cache_write_5m"`
		CacheWrite1h  int64  `json:"cache_write_1h"`
		Reasoning     int64  `json:"reasoning"`
		InputHasCache bool   `json:"input_includes_cache"`
		Model         string `json:"model"`
		RequestID     string `json:"request_id"`
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&in); err != nil {
		return usage.Call{}, fmt.Errorf("usage: %v", err)
	}
	c := usage.Call{ID: "-", Input: in.Input, Output: in.Output, CacheRead: in.CacheRead, CacheWrite5m: in.CacheWrite5m,
		CacheWrite1h: in.CacheWrite1h, Reasoning: in.Reasoning, InputHasCache: in.InputHasCache, Model: in.Model, RequestID: in.RequestID}
	if err := c.Check(); err != nil {
		return usage.Call{}, err
	}
	return c, nil
}

func (o *execOutput) Write(p []byte) (int, error) {
	o.buf = append(o.buf, p...)
	rest := o.buf
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		o.parse(rest[:i])
		rest = rest[i+1:]
	}
	o.buf = o.buf[:copy(o.buf, rest)]
	return len(p), nil
}

// flush parses a last line that has no newline.
func (o *execOutput) flush() {
	if len(o.buf) > 0 {
		o.parse(o.buf)
		o.buf = o.buf[:0]
	}
}

func (o *execOutput) parse(line []byte) {
	o.line++
	if o.err != "" || len(bytes.TrimSpace(line)) == 0 {
		return
	}
	m, err := sessions.ParseMessage(line)
	if err != nil {
		// Not wrapped: a bad reply is the provider's failure, not the
		// caller's bad input that fsstore.ErrInvalid would mean.
		o.err = fmt.Sprintf("output line %d: %v", o.line, err)
		return
	}
	if field, esc := m.LoneSurrogate(); field != "" {
		o.err = fmt.Sprintf("output line %d: %s holds %s, a lone surrogate escape (half of a UTF-16 pair), which is not Unicode", o.line, field, esc)
		return
	}
	if m.Role != "assistant" && m.Role != "tool" {
		o.err = fmt.Sprintf("output line %d: role %q is not allowed (want assistant or tool)", o.line, m.Role)
		return
	}
	if raw, ok := m.Extra[usage.Field]; ok {
		c, err := execUsage(m.Role, raw)
		if err != nil {
			o.err = fmt.Sprintf("output line %d: %v", o.line, err)
			return
		}
		stamp(&c, "exec", o.start)
		usage.Put(&m, c)
	}
	m.Seq, m.TS = 0, ""
	o.msgs = append(o.msgs, m)
	if text := m.Text(); m.Role == "assistant" && text != "" {
		if o.texts > 0 {
			o.stream.WriteString("\n")
		}
		o.stream.WriteString(text)
		o.texts++
	}
}
