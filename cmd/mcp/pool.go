package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes/hermes/profiles"
)

// retryAfter is how long a server that failed to start is answered
// unavailable without another try: a server that hangs at start-up must
// not cost every call its startup_timeout.
const retryAfter = time.Minute

// closeGrace is how long Close waits for a server to exit once its input
// is closed, before its process group is killed.
const closeGrace = time.Second

// baseEnv is the environment a stdio server gets besides its own env
// entries: not hermes's whole environment, which may hold secrets meant
// for other programs.
var baseEnv = []string{"PATH", "HOME", "USER", "LANG", "TMPDIR", "TERM"}

// Pool is the profile's MCP servers as one process uses them: each starts
// when a call (or a listing that is not cached) first needs it, and stays
// until Close.
type Pool struct {
	Cache Cache
	Specs []Spec
	// Version is hermes's, told to servers.
	Version string

	mu    sync.Mutex
	conns map[string]*conn
}

// conn is one server of the pool.
type conn struct {
	spec Spec

	mu       sync.Mutex // held while starting, and to read or change what follows
	cs       *sdk.ClientSession
	ended    chan struct{} // closed when cs ends (the server exited)
	proc     *process      // stdio servers only
	failure  error         // the last start's failure, answered until retryAfter
	failedAt time.Time
}

// NewPool checks cfg's mcp_servers and returns their pool, which starts
// nothing yet. profileDir holds the cache (mcp/).
func NewPool(profileDir string, cfg profiles.Config, version string, warn func(string)) (*Pool, error) {
	specs, err := Specs(cfg)
	if err != nil {
		return nil, err
	}
	return &Pool{Cache: Cache{Dir: filepath.Join(profileDir, "mcp"), Warn: warn}, Specs: specs, Version: version}, nil
}

// Spec returns the server named name.
func (p *Pool) Spec(name string) (Spec, bool) {
	for _, s := range p.Specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

func (p *Pool) conn(s Spec) *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		p.conns = map[string]*conn{}
	}
	c, ok := p.conns[s.Name]
	if !ok {
		c = &conn{spec: s}
		p.conns[s.Name] = c
	}
	return c
}

// Unavailable is a server that could not be used: it failed to start,
// timed out starting, exited or answered garbage.
type Unavailable struct {
	Server string
	Reason string
	// Stderr is the last lines it wrote to stderr.
	Stderr string
}

func (e *Unavailable) Error() string {
	s := fmt.Sprintf("MCP server %s unavailable: %s", e.Server, e.Reason)
	if e.Stderr != "" {
		s += "\nits stderr ended with:\n" + e.Stderr
	}
	return s
}

// session returns the server's session, starting the server if it is not
// running.
func (p *Pool) session(ctx context.Context, s Spec) (*conn, *sdk.ClientSession, error) {
	c := p.conn(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		select {
		case <-c.ended:
			// The server exited between calls: this call starts it again.
			c.cs.Close()
			if c.proc != nil {
				c.proc.close(closeGrace)
			}
			c.cs, c.proc = nil, nil
		default:
			return c, c.cs, nil
		}
	}
	if c.failure != nil && time.Since(c.failedAt) < retryAfter {
		return c, nil, c.failure
	}
	cs, proc, err := p.start(ctx, s)
	if err != nil {
		c.failure, c.failedAt = err, time.Now()
		p.Cache.Failed(s.Name, s.Key, oneLine(err))
		return c, nil, err
	}
	c.cs, c.proc, c.failure = cs, proc, nil
	c.ended = make(chan struct{})
	go func(ended chan struct{}) {
		cs.Wait()
		close(ended)
	}(c.ended)
	return c, cs, nil
}

// start starts the server and connects to it within its startup_timeout.
func (p *Pool) start(ctx context.Context, s Spec) (*sdk.ClientSession, *process, error) {
	ctx, cancel := context.WithTimeout(ctx, s.StartupTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "hermes", Version: p.Version}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			go p.relist(s)
		},
	})
	var transport sdk.Transport
	var proc *process
	if s.Stdio() {
		var err error
		if proc, err = startProcess(s, p.Cache.LogPath(s.Name)); err != nil {
			return nil, nil, &Unavailable{Server: s.Name, Reason: err.Error()}
		}
		transport = &sdk.IOTransport{Reader: proc.stdout, Writer: proc.stdin}
		// A server that does not answer in time is killed, which ends
		// the connection's wait at once.
		stop := context.AfterFunc(ctx, proc.kill)
		defer stop()
	} else {
		t, err := httpTransport(s)
		if err != nil {
			return nil, nil, &Unavailable{Server: s.Name, Reason: err.Error()}
		}
		transport = t
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, p.failed(ctx, s, proc, err)
	}
	return cs, proc, nil
}

// failed is the Unavailable error of a server whose start or call failed
// with err, after its process (if any) is gone.
func (p *Pool) failed(ctx context.Context, s Spec, proc *process, err error) error {
	reason := err.Error()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = fmt.Sprintf("it did not answer within %s (startup_timeout)", s.StartupTimeout)
	}
	u := &Unavailable{Server: s.Name, Reason: reason}
	if proc != nil {
		if st := proc.close(closeGrace); st != "" && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			u.Reason = fmt.Sprintf("it exited (%s): %s", st, reason)
		}
		u.Stderr = proc.log.Tail()
	}
	return u
}

// lost ends a session that failed under a call and returns why, so that
// the next call starts the server again.
func (p *Pool) lost(ctx context.Context, c *conn, cs *sdk.ClientSession, err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Another call may have started the server again already: only this
	// session's process is ended.
	var proc *process
	if c.cs == cs {
		proc = c.proc
		c.cs, c.proc = nil, nil
	}
	cs.Close()
	u := p.failed(ctx, c.spec, proc, err)
	p.Cache.Failed(c.spec.Name, c.spec.Key, oneLine(u))
	return u
}

// List starts the server if it is not running, lists its tools, and
// records them in the cache.
func (p *Pool) List(ctx context.Context, s Spec) ([]RemoteTool, error) {
	c, cs, err := p.session(ctx, s)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, s.StartupTimeout)
	defer cancel()
	var tools []RemoteTool
	for t, err := range cs.Tools(lctx, nil) {
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, p.lost(lctx, c, cs, fmt.Errorf("listing its tools: %w", err))
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tools = append(tools, RemoteTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if err := p.Cache.Listed(s.Name, s.Key, tools); err != nil {
		return tools, err
	}
	return tools, nil
}

// relist renews a running server's cached tool list (a tools/list_changed
// notification).
func (p *Pool) relist(s Spec) {
	ctx, cancel := context.WithTimeout(context.Background(), s.StartupTimeout)
	defer cancel()
	p.List(ctx, s)
}

// Call calls the server's tool named tool (the server's own name) within
// its tool_timeout. A call past it is cancelled and answered as timed
// out; the server stays in use. A server that fails is *Unavailable.
func (p *Pool) Call(ctx context.Context, s Spec, tool string, args json.RawMessage) (string, error) {
	c, cs, err := p.session(ctx, s)
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, s.ToolTimeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		p.Cache.Answered(s.Name, s.Key) // the state's cache: a failure to write it changes no result
		return resultText(res)
	case ctx.Err() != nil:
		return "", context.Cause(ctx)
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("timed out after %s (tool_timeout of MCP server %s): the call was cancelled; the server stays in use", s.ToolTimeout, s.Name), nil
	case errors.As(err, &rpcErr) && !transportCode(rpcErr.Code):
		if tools, lerr := p.List(ctx, s); lerr == nil && !hasTool(tools, tool) {
			return "", fmt.Errorf("MCP server %s no longer has the tool %s (its tool list is renewed for the next turn)", s.Name, tool)
		}
		return "", fmt.Errorf("MCP server %s: %s", s.Name, rpcErr.Message)
	}
	return "", p.lost(ctx, c, cs, err)
}

// transportCode reports whether a JSON-RPC error code is the SDK's own
// word that the request never got an answer (the connection closed, or
// the HTTP transport failed), not the server's.
func transportCode(code int64) bool {
	switch code {
	case -32003, -32004, -32005: // client closing, server closing, rejected by transport
		return true
	}
	return false
}

func hasTool(tools []RemoteTool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// resultText is what the model reads of a call's result: the text
// content joined by newlines; structured content as JSON when there is no
// text; any other content as one line naming its type and size. An
// isError result is an error with that text.
func resultText(res *sdk.CallToolResult) (string, error) {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", c.URI))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Text)+len(r.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[content of type %T]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", err
		}
		parts = append(parts, string(b))
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return "", errors.New(text)
	}
	return text, nil
}

// Close ends every server the pool started: their input is closed, and
// what is left of each process group after closeGrace is killed.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		c.mu.Lock()
		cs, proc := c.cs, c.proc
		c.cs, c.proc = nil, nil
		c.mu.Unlock()
		wg.Go(func() {
			if cs != nil {
				cs.Close()
			}
			if proc != nil {
				proc.close(closeGrace)
			}
		})
	}
	wg.Wait()
}

// Running reports whether the pool has the server started.
func (p *Pool) Running(name string) bool {
	p.mu.Lock()
	c := p.conns[name]
	p.mu.Unlock()
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == nil {
		return false
	}
	select {
	case <-c.ended:
		return false
	default:
		return true
	}
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// varRef is compiled when a server's settings are first expanded, not at
// every start of hermes.
var varRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// expand replaces each ${VAR} of s with hermes's variable VAR; one that
// is not set is an error naming it, rather than an empty value a server
// would misread.
func expand(what, s string) (string, error) {
	var missing string
	out := varRef().ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := os.LookupEnv(name)
		if !ok && missing == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("%s: ${%s} is not set", what, missing)
	}
	return out, nil
}

// process is a stdio server's process, in its own process group.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	log    *stderrLog
	exited chan struct{}
	status string // what cmd.Wait said, once exited is closed
}

// startProcess starts the server's command with its environment, in its
// own process group (see procattr_*.go) which the guard kills if hermes
// is killed, with stderr going to its log.
func startProcess(s Spec, logPath string) (*process, error) {
	env := make([]string, 0, len(baseEnv)+len(s.Config.Env))
	for _, k := range baseEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range s.Config.Env {
		v, err := expand("env "+k, v)
		if err != nil {
			return nil, err
		}
		env = append(env, k+"="+v)
	}
	cmd := exec.Command(s.Config.Command, s.Config.Args...)
	cmd.Env, cmd.Dir = env, s.Config.Cwd
	cmd.SysProcAttr = procAttr()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	procGuard.watch(cmd.Process.Pid)
	proc := &process{cmd: cmd, stdin: inW, stdout: outR, log: openStderrLog(logPath), exited: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := errR.Read(buf)
			proc.log.Write(buf[:n])
			if err != nil {
				break
			}
		}
		errR.Close()
		close(copied)
	}()
	go func() {
		err := cmd.Wait()
		proc.status = cmd.ProcessState.String()
		if err != nil && cmd.ProcessState == nil {
			proc.status = err.Error()
		}
		// The stderr of a server that exits is read to its end, unless a
		// child it left holds the pipe.
		select {
		case <-copied:
		case <-time.After(100 * time.Millisecond):
		}
		close(proc.exited)
	}()
	return proc, nil
}

// kill kills the server's process group.
func (pr *process) kill() {
	syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGKILL)
}

// close closes the server's input, waits up to grace for it to exit,
// then kills its process group (what its children left too), and returns
// how it exited.
func (pr *process) close(grace time.Duration) string {
	pr.stdin.Close()
	select {
	case <-pr.exited:
	case <-time.After(grace):
	}
	pr.kill()
	procGuard.forget(pr.cmd.Process.Pid)
	<-pr.exited
	pr.stdout.Close()
	pr.log.Close()
	return pr.status
}
