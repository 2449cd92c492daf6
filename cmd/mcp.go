package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/gateway"
	"github.com/hermes/hermes/cmd/mcp"
	"github.com/hermes/hermes/cmd/mcpserve"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/profiles"
)

func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "MCP servers: those whose tools the agent is offered, and hermes as one",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "each server: transport, state, tool count, last error (starts nothing)", ArgsUsage: " ", Action: withEnv(mcpList)},
			{Name: "tools", Usage: "the tools offered, by name, with descriptions (--json: with their input schemas)", ArgsUsage: "[NAME]", Action: withEnv(mcpTools)},
			{Name: "test", Usage: "start a server, list its tools, close it: exit 0, or 1 with the reason", ArgsUsage: "NAME", Action: withEnv(mcpTest)},
			{Name: "refresh", Usage: "list the tools of NAME (default: every enabled server) again, renewing the cache", ArgsUsage: "[NAME]", Action: withEnv(mcpRefresh)},
			{
				Name: "add", Usage: "add a server to mcp_servers in config.yaml: a command (NAME -- CMD ARGS…) or --url URL",
				ArgsUsage: "NAME [-- CMD ARGS…]", Action: withEnv(mcpAdd),
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "url", Usage: "a streamable HTTP server's endpoint"},
					&cli.StringSliceFlag{Name: "env", Usage: "KEY=VALUE for a command's environment (repeatable; ${VAR} is hermes's VAR when the server starts)"},
					&cli.StringFlag{Name: "cwd", Usage: "the command's working directory"},
					&cli.StringSliceFlag{Name: "header", Usage: "KEY=VALUE sent with each request to --url (repeatable)"},
					&cli.StringFlag{Name: "bearer-token-env", Usage: "the variable holding a bearer token for --url"},
					&cli.StringFlag{Name: "approval", Usage: "ask, auto or deny for the server's tools (default tools.approval)"},
					&cli.StringFlag{Name: "startup-timeout", Usage: "how long a start may take (default 10s)"},
					&cli.StringFlag{Name: "tool-timeout", Usage: "how long a call may take (default 60s)"},
				},
			},
			{Name: "remove", Usage: "remove a server from mcp_servers in config.yaml", ArgsUsage: "NAME", Action: withEnv(mcpRemove)},
			{
				Name: "serve", Usage: "offer this profile's sessions and kanban board to other agents as an MCP server (stdio, or --http)",
				ArgsUsage: " ", Action: withEnv(mcpServe),
				Description: `Tools: session_search, session_list, session_show, kanban_list, kanban_show,
kanban_create, kanban_comment; inside a kanban worker also kanban_complete and
kanban_block, for the worker's own task. Each call keeps the stores' rules
(--lock-timeout bounds its waits); a failure is a tool error that says what
the command line would: "not found: …", "refused: …", "lock timeout: …".

Without --http it serves MCP over stdin and stdout until its input ends
(claude mcp add hermes -- hermes mcp serve), and every call read by then
is answered before it exits. With --http ADDR it serves
streamable HTTP at http://ADDR/mcp with the gateway's checks: a Host that is
not a loopback name, the address or one of gateway.allowed_hosts is refused,
as is an Origin not in gateway.allowed_origins; and every request needs
"Authorization: Bearer <key>", the key in the variable gateway.api_key_env
names (default HERMES_GATEWAY_API_KEY): without one it does not start. A
session that gets no request for --idle-timeout is closed and forgotten; a
client that comes back after it is answered 404 and starts a new session.`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "http", Usage: "serve streamable HTTP on `ADDR` (host:port) instead of stdio"},
					&cli.StringFlag{Name: "idle-timeout", Value: mcpserve.DefaultIdleTimeout.String(), Usage: "with --http, close a session that gets no request for this long"},
				},
			},
		},
	}
}

// mcpPool is the profile's pool, or a usage error when config.yaml names
// no servers.
func mcpPool(e *env) (*mcp.Pool, error) {
	cfg, err := e.config()
	if err != nil {
		return nil, err
	}
	return newMCPPool(e, cfg)
}

// mcpSpecs are the servers args name (NAME or none: all, or only the
// enabled ones when enabledOnly). An unknown NAME is not found.
func mcpSpecs(e *env, pool *mcp.Pool, enabledOnly bool) ([]mcp.Spec, error) {
	switch e.c.NArg() {
	case 0:
		var out []mcp.Spec
		for _, s := range pool.Specs {
			if s.Enabled || !enabledOnly {
				out = append(out, s)
			}
		}
		return out, nil
	case 1:
		name := e.c.Args().First()
		s, ok := pool.Spec(name)
		if !ok {
			return nil, fsstore.NotFoundf("MCP server %q: not in mcp_servers of %s", name, e.profile.Dir()+"/config.yaml")
		}
		return []mcp.Spec{s}, nil
	}
	return nil, usagef("expected at most one server NAME, got %d arguments", e.c.NArg())
}

func mcpList(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("mcp list takes no arguments")
	}
	pool, err := mcpPool(e)
	if err != nil {
		return err
	}
	t := newTable(e.stdout)
	if !e.json {
		t = newTable(e.stdout, "NAME", "TRANSPORT", "STATE", "TOOLS", "LAST ERROR")
	}
	for _, s := range pool.Specs {
		st, err := pool.Status(s)
		if err != nil {
			return err
		}
		if e.json {
			printJSON(e.stdout, st)
			continue
		}
		t.row(st.Name, st.Transport, st.State, st.Tools, st.LastError)
	}
	return t.flush()
}

// mcpContext is cancelled by Ctrl-C or SIGTERM, so a server being started
// is stopped.
func mcpContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func mcpTools(e *env) error {
	pool, err := mcpPool(e)
	if err != nil {
		return err
	}
	defer pool.Close()
	specs, err := mcpSpecs(e, pool, true)
	if err != nil {
		return err
	}
	ctx, stop := mcpContext()
	defer stop()
	var failed error
	t := newTable(e.stdout)
	for _, s := range specs {
		tools, err := pool.ServerTools(ctx, s)
		if err != nil {
			e.warn(err.Error())
			failed = fmt.Errorf("some servers could not be listed")
			continue
		}
		for _, tl := range tools {
			r := tl.Remote()
			if e.json {
				printJSON(e.stdout, mcpToolRecord{Name: tl.Name(), Server: s.Name, Tool: r.Name, Description: r.Description, InputSchema: r.InputSchema})
				continue
			}
			desc, _, _ := strings.Cut(strings.TrimSpace(r.Description), "\n")
			t.row(tl.Name(), desc)
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return failed
}

// mcpToolRecord is a line of hermes mcp tools --json.
type mcpToolRecord struct {
	Name        string          `json:"name"`   // as offered: mcp__<server>__<tool>
	Server      string          `json:"server"` // the server's name in mcp_servers
	Tool        string          `json:"tool"`   // the server's own name for it
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func mcpTest(e *env) error {
	if e.c.NArg() != 1 {
		return usagef("mcp test takes one server NAME")
	}
	pool, err := mcpPool(e)
	if err != nil {
		return err
	}
	defer pool.Close()
	specs, err := mcpSpecs(e, pool, false)
	if err != nil {
		return err
	}
	ctx, stop := mcpContext()
	defer stop()
	return mcpRelist(e, pool, ctx, specs)
}

func mcpRefresh(e *env) error {
	pool, err := mcpPool(e)
	if err != nil {
		return err
	}
	defer pool.Close()
	specs, err := mcpSpecs(e, pool, e.c.NArg() == 0)
	if err != nil {
		return err
	}
	ctx, stop := mcpContext()
	defer stop()
	return mcpRelist(e, pool, ctx, specs)
}

// mcpRelist starts each server, lists its tools into the cache and says
// how many it has; a server that fails is said on stderr, and the command
// fails (exit 1) after the others are done.
func mcpRelist(e *env, pool *mcp.Pool, ctx context.Context, specs []mcp.Spec) error {
	var failed []string
	for _, s := range specs {
		start := time.Now()
		tools, err := pool.List(ctx, s)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(e.stderr, "hermes: %s\n", err)
			failed = append(failed, s.Name)
			continue
		}
		took := time.Since(start).Round(time.Millisecond)
		if e.json {
			printJSON(e.stdout, map[string]any{"name": s.Name, "tools": len(tools), "took_ms": took.Milliseconds()})
			continue
		}
		fmt.Fprintf(e.stdout, "%s: %d tools (listed in %s)\n", s.Name, len(tools), took)
	}
	switch {
	case len(failed) == 1 && len(specs) == 1:
		return silentExit{ExitFailed}
	case len(failed) > 0:
		return fmt.Errorf("MCP servers failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

func mcpAdd(e *env) error {
	args := e.c.Args().Slice()
	if len(args) == 0 {
		return usagef("mcp add needs a server NAME")
	}
	name, argv := args[0], args[1:]
	// Flag parsing stops at NAME, so the "--" before CMD is still there.
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if err := mcp.CheckName(name); err != nil {
		return err
	}
	s := profiles.MCPServer{
		URL:            e.c.String("url"),
		Cwd:            e.c.String("cwd"),
		BearerTokenEnv: e.c.String("bearer-token-env"),
		Approval:       e.c.String("approval"),
		StartupTimeout: e.c.String("startup-timeout"),
		ToolTimeout:    e.c.String("tool-timeout"),
	}
	if len(argv) > 0 {
		s.Command, s.Args = argv[0], argv[1:]
	}
	var err error
	if s.Env, err = keyValues("--env", e.c.StringSlice("env")); err != nil {
		return err
	}
	if s.Headers, err = keyValues("--header", e.c.StringSlice("header")); err != nil {
		return err
	}
	// The entry is checked as config.yaml will be read, before it is
	// written.
	if _, err := mcp.Specs(profiles.Config{MCPServers: map[string]profiles.MCPServer{name: s}}); err != nil {
		return err
	}
	if err := profiles.AddMCPServer(e.profile, name, s, e.lockTimeout); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "hermes: added MCP server %s to %s (hermes mcp test %s starts it once)\n", name, filepath.Join(e.profile.Dir(), "config.yaml"), name)
	return nil
}

// keyValues reads KEY=VALUE flags into a map.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("%s %q: want KEY=VALUE", flag, kv)
		}
		m[k] = v
	}
	return m, nil
}

func mcpRemove(e *env) error {
	name, err := oneArg(e.c, "server NAME")
	if err != nil {
		return err
	}
	if err := profiles.RemoveMCPServer(e.profile, name, e.lockTimeout); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "hermes: removed MCP server %s from %s\n", name, filepath.Join(e.profile.Dir(), "config.yaml"))
	return nil
}

func mcpServe(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("mcp serve takes no arguments")
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	o := mcpserve.Options{
		Sessions: e.sessions(),
		Board:    board,
		Profile:  e.profile.Name,
		Author:   firstSet(os.Getenv("USER"), "user"),
		Version:  readBuildInfo().Version,
		Skills:   e.skills(),
	}
	if cfg, err := e.config(); err == nil {
		if mem, on, err := memoryStore(e, cfg); err == nil && on {
			o.Memory = mem
		}
	}
	if w, ok := workerFromEnv(); ok {
		if err := fsstore.CheckID("task id", w.Task); err != nil {
			return err
		}
		o.Worker, o.Author = &w, e.profile.Name
	}
	idle, err := durationFlag(e.c, "idle-timeout", profiles.ParsePeriod)
	if err != nil {
		return err
	}
	ctx, stop := mcpContext()
	defer stop()
	addr := e.c.String("http")
	if addr == "" {
		err := mcpserve.New(o).Run(ctx, mcpserve.Stdio(io.NopCloser(e.stdin), e.stdout))
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return mcpServeHTTP(e, ctx, addr, idle, o)
}

// mcpServeHTTP serves o at http://addr/mcp behind the gateway's guard and
// key until ctx ends, closing sessions idle for idle.
func mcpServeHTTP(e *env, ctx context.Context, addr string, idle time.Duration, o mcpserve.Options) error {
	if err := checkListenAddr("--http", addr); err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	hosts, origins, key, keyEnv, err := gatewayAccess(cfg)
	if err != nil {
		return err
	}
	// Its tools write to the profile: another local account is not the
	// user, so loopback is no reason to go without the key.
	if key == "" {
		return usagef("mcp serve --http needs an API key in $%s (the variable gateway.api_key_env names) or gateway.api_key; refusing to start", keyEnv)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp serve: %w", err)
	}
	hs := &http.Server{
		Handler:           mcpserve.Handler(mcpserve.New(o), addr, key, hosts, origins, idle),
		ReadHeaderTimeout: gateway.DefaultReadTimeout,
		ErrorLog:          log.New(e.stderr, "hermes: mcp serve: ", 0),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(e.stderr, "hermes: MCP server on http://%s/mcp (profile %s)\n", ln.Addr(), e.profile.Name)
	select {
	case err := <-served:
		return fmt.Errorf("mcp serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		hs.Close()
	}
	return nil
}
