package cmd

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/gateway"
	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/mcp"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/profiles"
)

func gatewayCommand() *cli.Command {
	return &cli.Command{
		Name:  "gateway",
		Usage: "an OpenAI-compatible HTTP API whose conversations survive restarts",
		Subcommands: []*cli.Command{
			{
				Name:  "serve",
				Usage: "serve /v1/chat/completions and /v1/responses until SIGTERM or SIGINT",
				Description: `Replies come from the provider (the flags of chat). Loopback only unless an API
key is set: a non-loopback --addr needs the key in the environment variable
that gateway.api_key_env names (default HERMES_GATEWAY_API_KEY) or in
gateway.api_key, and then every route but /health needs "Authorization: Bearer
<key>". gateway.tools needs the key too (the tools run as you for whoever
reaches the gateway), unless gateway.unauthenticated_tools is true; the file
tools keep to gateway.cwd (default: the directory serve runs in). Web pages cannot call it
unless gateway.allowed_origins names them, nor reach it under a name other
than a loopback one, its address or one of gateway.allowed_hosts.

On SIGTERM or SIGINT the gateway stops accepting and lets the turns in flight
finish within --drain-timeout. Sessions whose turn did not finish become
resume_pending (restart_timeout for SIGTERM, shutdown_timeout for SIGINT) and
continue, with a note, on their next request. A second signal ends the drain
at once. One gateway runs per profile: a second serve exits 4.`,
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "addr", Usage: "listen address (default gateway.addr in config.yaml, else " + gateway.DefaultAddr + ")"},
					&cli.StringFlag{Name: "drain-timeout", Value: "30s", Usage: "how long turns in flight may take to finish on SIGTERM or SIGINT"},
				}, providerFlags()...),
				Action: withEnv(gatewayServe),
			},
			{
				Name:   "status",
				Usage:  "whether a gateway runs (pid, address, since when) and the sessions waiting to resume",
				Action: withEnv(gatewayStatus),
			},
		},
	}
}

func (e *env) gatewayStore() *gatewaystate.Store {
	return gatewaystate.NewStore(e.profile.Dir(), e.lockTimeout, e.warn)
}

// checkListenAddr refuses an address to listen on that is not host:port
// with a port from 0 to 65535 (an empty host is every address), naming
// the flag, before anything else is judged of it.
func checkListenAddr(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("%s %s is not a host:port (for example %s)", flag, addr, gateway.DefaultAddr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		return usagef("%s %s: port %s is not a number from 0 to 65535", flag, addr, port)
	}
	return nil
}

// gatewayGCPercent is the garbage collector's GOGC for `gateway serve`,
// unless the environment sets one: what the gateway keeps between turns
// is small (a few MB), so at Go's default of 100 it collects every few
// dozen turns, and the collections were a tenth of a turn's CPU. At 400
// they cost a quarter of that, for a heap a few MB larger (a turn's CPU
// 0.89x at 16 clients, 0.97x at 1).
const gatewayGCPercent = 400

// gatewayGC sets the collector for a serving gateway (gatewayGCPercent).
func gatewayGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gatewayGCPercent)
	}
}

func gatewayServe(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("serve takes no arguments")
	}
	gatewayGC()
	cfg, err := e.config()
	if err != nil {
		return err
	}
	g := cfg.Gateway
	addr := firstSet(e.c.String("addr"), g.Addr, gateway.DefaultAddr)
	if err := checkListenAddr("--addr", addr); err != nil {
		return err
	}
	drain, err := durationFlag(e.c, "drain-timeout", profiles.ParsePeriod)
	if err != nil {
		return err
	}
	freshness, err := durationSetting("gateway.resume_freshness", g.ResumeFreshness, gateway.DefaultResumeFreshness, profiles.ParsePeriod)
	if err != nil {
		return err
	}
	idleEnd, err := durationSetting("gateway.idle_end", g.IdleEnd, gateway.DefaultIdleEnd, profiles.ParsePeriod)
	if err != nil {
		return err
	}
	readTimeout, err := durationSetting("gateway.read_timeout", g.ReadTimeout, gateway.DefaultReadTimeout, profiles.ParsePeriod)
	if err != nil {
		return err
	}
	writeTimeout, err := durationSetting("gateway.write_timeout", g.WriteTimeout, gateway.DefaultWriteTimeout, profiles.ParsePeriod)
	if err != nil {
		return err
	}
	toolTimeout, err := durationSetting("gateway.tool_timeout", g.ToolTimeout, gateway.DefaultToolTimeout, profiles.ParsePeriod)
	if err != nil {
		return err
	}
	if g.MaxConnections < 0 {
		return fsstore.Invalidf("gateway.max_connections must be positive, not %d", g.MaxConnections)
	}
	if g.MaxStoredResponses < 0 {
		return fsstore.Invalidf("gateway.max_stored_responses must be positive, not %d", g.MaxStoredResponses)
	}
	if g.MaxRequestBodyBytes < 0 {
		return fsstore.Invalidf("gateway.max_request_body_bytes must be positive, not %d", g.MaxRequestBodyBytes)
	}
	hosts, origins, key, keyEnv, err := gatewayAccess(cfg)
	if err != nil {
		return err
	}
	named, err := gatewayKeys(g.APIKeys, key)
	if err != nil {
		return err
	}
	// Named keys count as keys: with any, every request needs one.
	authed := key != "" || len(named) > 0
	if !authed && !gateway.IsLoopback(addr) {
		return usagef("--addr %s is not a loopback address: it needs an API key in $%s (the variable gateway.api_key_env names) or gateway.api_key; refusing to start", addr, keyEnv)
	}
	prov, pc, err := newProvider(e, cfg)
	if err != nil {
		return err
	}
	models, err := gatewayModels(g.Models, pc)
	if err != nil {
		return err
	}
	// The gateway runs only the tools gateway.tools names, and never
	// prompts: approval ask acts as deny.
	var tools []agent.Tool
	if len(g.Tools) > 0 {
		var pool *mcp.Pool
		if tools, pool, err = selectTools(e, cfg, g.Tools, false); err != nil {
			return fsstore.Invalidf("gateway.tools: %w", err)
		}
		defer pool.Close()
	}
	// A tool runs as the gateway's user for whoever reaches the gateway:
	// on loopback, any local account.
	if len(tools) > 0 && !authed && !g.UnauthenticatedTools {
		return usagef("gateway.tools (%s) needs an API key, or anyone who can reach the gateway (on loopback, every local account) runs them as you: set gateway.api_key or $%s (the variable gateway.api_key_env names), or gateway.unauthenticated_tools: true to run them without one; refusing to start",
			strings.Join(g.Tools, ", "), keyEnv)
	}
	policy := firstSet(cfg.Tools.Approval, agent.PolicyAsk)
	if err := agent.CheckPolicy(policy); err != nil {
		return err
	}
	steps, err := maxSteps(cfg)
	if err != nil {
		return err
	}
	toolEnv, err := newToolEnv(e, cfg)
	if err != nil {
		return err
	}
	if toolEnv.Root, err = gatewayCwd(g.Cwd); err != nil {
		return err
	}
	toolEnv.Cwd = toolEnv.Root
	headerTimeout, err := durationSetting("gateway.header_timeout", g.HeaderTimeout, gateway.DefaultHeaderTimeout, profiles.ParsePeriod)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(e.stderr, "hermes: "+format+"\n", args...) }
	var instructions *agent.Instructions
	if g.Instructions {
		instructions = &agent.Instructions{ProfileDir: e.profile.Dir(), Warn: func(msg string) { logf("%s", msg) }}
	}
	mem, skillsOf, err := gatewayMemory(e, cfg, toolEnv, logf)
	if err != nil {
		return err
	}
	hookSet, err := hooks.New("gateway.hooks", g.Hooks)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	auth := ""
	if authed {
		auth = ", bearer auth"
	}
	if len(tools) > 0 && !authed {
		e.warn(fmt.Sprintf("gateway.unauthenticated_tools: the gateway runs %s, without an API key, for anyone who can reach it (on loopback, every local account)", strings.Join(g.Tools, ", ")))
	}
	stopCron, err := startGatewayCron(e, g.Cron)
	if err != nil {
		return err
	}
	defer stopCron()
	return gateway.Serve(gateway.ServeOptions{
		Options: gateway.Options{
			Sessions:           e.sessions(),
			Store:              e.gatewayStore(),
			Provider:           prov,
			Model:              pc.Model,
			Models:             models,
			ModelsOnly:         g.ModelsOnly,
			APIKey:             key,
			Keys:               named,
			AllowedHosts:       hosts,
			AllowedOrigins:     origins,
			MaxBodyBytes:       g.MaxRequestBodyBytes,
			MaxStoredResponses: g.MaxStoredResponses,
			ResumeFreshness:    freshness,
			IdleEnd:            idleEnd,
			HeaderTimeout:      headerTimeout,
			ReadTimeout:        readTimeout,
			WriteTimeout:       writeTimeout,
			ToolTimeout:        toolTimeout,
			Tools:              tools,
			Approver:           withServerApproval(e, agent.Unattended(policy), agent.Fixed(false), tools),
			ToolEnv:            *toolEnv,
			MaxSteps:           steps,
			Instructions:       instructions,
			Memory:             mem,
			Skills:             skillsOf,
			Hooks:              hookSet,
			Logf:               logf,
		},
		Addr:           addr,
		DrainTimeout:   drain,
		MaxConnections: g.MaxConnections,
		Signals:        sigs,
		Stderr:         e.stderr,
		Version:        readBuildInfo().Version,
		Describe:       fmt.Sprintf(" (profile %s, provider %s%s)", e.profile.Name, prov.Name(), auth),
	})
}

// gatewayModels makes the providers of gateway.models, in the order of
// their names; each setting an entry leaves out is the profile's (pc).
func gatewayModels(entries map[string]profiles.GatewayModel, pc provider.Config) ([]gateway.Model, error) {
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names)
	var models []gateway.Model
	for _, name := range names {
		m := entries[name]
		cfg := pc
		cfg.Name = firstSet(m.Provider, pc.Name)
		cfg.BaseURL = firstSet(m.BaseURL, pc.BaseURL)
		cfg.Model = firstSet(m.Model, name)
		cfg.ExecCommand = firstSet(m.ExecCommand, pc.ExecCommand)
		if m.APIKeyEnv != "" {
			cfg.APIKey = os.Getenv(m.APIKeyEnv)
		}
		prov, err := provider.New(cfg)
		if err != nil {
			return nil, fsstore.Invalidf("gateway.models.%s: %w", name, err)
		}
		models = append(models, gateway.Model{Name: name, Upstream: cfg.Model, Provider: prov})
	}
	return models, nil
}

// gatewayCwd is gateway.cwd as an absolute path (a relative one is taken
// from the working directory), the working directory when unset.
func gatewayCwd(setting string) (string, error) {
	wd, err := os.Getwd()
	if err != nil || setting == "" {
		return wd, err
	}
	dir := setting
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(wd, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fsstore.Invalidf("gateway.cwd: %w", err)
	}
	if !fi.IsDir() {
		return "", fsstore.Invalidf("gateway.cwd: %s is not a directory", setting)
	}
	return dir, nil
}

// gatewayStatusRecord is what status prints with --json: one object.
type gatewayStatusRecord struct {
	Running bool `json:"running"`
	gatewaystate.State
	CleanShutdown bool               `json:"clean_shutdown"`
	Sessions      []sessions.Session `json:"sessions"`
}

func gatewayStatus(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("status takes no arguments")
	}
	gs := e.gatewayStore()
	state, _, err := gs.ReadState()
	if err != nil {
		return err
	}
	running, err := gs.Serving()
	if err != nil {
		return err
	}
	clean, err := gs.CleanShutdown()
	if err != nil {
		return err
	}
	rec := gatewayStatusRecord{Running: running, State: state, CleanShutdown: clean, Sessions: []sessions.Session{}}
	if rec.InterruptedSessions == nil {
		rec.InterruptedSessions = []string{}
	}
	store := e.sessions()
	for _, state := range []string{sessions.StateResumePending, sessions.StateSuspended} {
		list, err := store.List(sessions.ListOptions{State: state})
		if err != nil {
			return err
		}
		rec.Sessions = append(rec.Sessions, list...)
	}
	sort.SliceStable(rec.Sessions, func(i, j int) bool { return rec.Sessions[i].UpdatedAt > rec.Sessions[j].UpdatedAt })
	if e.json {
		return printJSON(e.stdout, rec)
	}
	w := e.stdout
	switch {
	case running:
		fmt.Fprintf(w, "gateway: running, %s, http://%s, since %s\n", state.Process(), state.Addr, shortTime(state.StartedAt))
	case state.StartedAt == "":
		fmt.Fprintln(w, "gateway: not running; never started on this profile")
	default:
		how := "did not stop cleanly (crashed or killed)"
		switch {
		case clean:
			how = "stopped cleanly"
		case state.DrainTimedOut:
			how = fmt.Sprintf("drain timed out; %d session(s) left resume_pending", len(state.InterruptedSessions))
		}
		stopped := ""
		if state.StoppedAt != "" {
			stopped = " at " + shortTime(state.StoppedAt)
		}
		fmt.Fprintf(w, "gateway: not running; last run %s, http://%s, from %s, %s%s\n", state.Process(), state.Addr, shortTime(state.StartedAt), how, stopped)
	}
	if len(rec.Sessions) == 0 {
		fmt.Fprintln(w, "no sessions waiting to resume")
		return nil
	}
	tb := newTable(w, "ID", "STATE", "REASON", "INTERRUPTED", "SINCE", "SOURCE")
	for _, s := range rec.Sessions {
		since := s.ResumePendingAt
		if since == "" {
			since = s.UpdatedAt
		}
		tb.row(s.ID, s.State, dash(s.ResumeReason), s.InterruptCount, shortTime(since), s.Source)
	}
	return tb.flush()
}

// gatewayKeys reads gateway.api_keys: each entry's name must be a valid
// profile-style name, given once, and its key (from the variable key_env
// names, else key) set and unlike every other key, single among them.
func gatewayKeys(entries []profiles.GatewayKey, single string) ([]gateway.Key, error) {
	seen := map[string]string{}
	if single != "" {
		seen[single] = "gateway.api_key"
	}
	names := map[string]bool{}
	keys := make([]gateway.Key, 0, len(entries))
	for i, k := range entries {
		where := fmt.Sprintf("gateway.api_keys[%d]", i)
		if err := profiles.CheckName(k.Name); err != nil {
			return nil, fsstore.Invalidf("%s: name %q must match ^[a-z0-9][a-z0-9_-]{0,63}$", where, k.Name)
		}
		if names[k.Name] {
			return nil, fsstore.Invalidf("%s: the name %s is given twice", where, k.Name)
		}
		names[k.Name] = true
		secret := k.Key
		if k.KeyEnv != "" {
			secret = firstSet(os.Getenv(k.KeyEnv), k.Key)
		}
		if secret == "" {
			return nil, fsstore.Invalidf("%s (%s): no key: $%s is empty and key is not set", where, k.Name, firstSet(k.KeyEnv, "(key_env unset)"))
		}
		if other, ok := seen[secret]; ok {
			return nil, fsstore.Invalidf("%s (%s): the same key as %s; each key names one client", where, k.Name, other)
		}
		seen[secret] = where
		keys = append(keys, gateway.Key{Name: k.Name, Secret: secret})
	}
	return keys, nil
}

// gatewayAccess reads who may reach an HTTP server of the profile (the
// gateway, mcp serve --http) from the gateway section of config.yaml: the
// allowed hosts and origins, and the API key, from the variable keyEnv
// names (gateway.api_key_env), else gateway.api_key ("" when neither).
func gatewayAccess(cfg profiles.Config) (hosts, origins []string, key, keyEnv string, err error) {
	g := cfg.Gateway
	if hosts, err = gateway.ParseAllowedHosts(g.AllowedHosts); err != nil {
		return nil, nil, "", "", fsstore.Invalidf("gateway.allowed_hosts: %w", err)
	}
	if origins, err = gateway.ParseAllowedOrigins(g.AllowedOrigins); err != nil {
		return nil, nil, "", "", fsstore.Invalidf("gateway.allowed_origins: %w", err)
	}
	keyEnv = firstSet(g.APIKeyEnv, gateway.DefaultAPIKeyEnv)
	return hosts, origins, firstSet(os.Getenv(keyEnv), g.APIKey), keyEnv, nil
}

// gatewayMemory is the memory and the skills of the gateway's sessions:
// none unless memory.gateway and skills.gateway say so, its clients being
// programs that keep their own state. The memory and skill tools work
// there only then (gateway.tools still has to name them).
func gatewayMemory(e *env, cfg profiles.Config, toolEnv *agent.Env, logf func(string, ...any)) (*memory.Store, *agent.Skills, error) {
	var sk *agent.Skills
	if cfg.Skills.Gateway {
		sk = &agent.Skills{Store: e.skills(), Warn: func(msg string) { logf("%s", msg) }}
		toolEnv.Skills = sk
	}
	mem, on, err := memoryStore(e, cfg)
	if err != nil || !on || !cfg.Memory.Gateway {
		return nil, sk, err
	}
	toolEnv.Memory = mem
	return mem, sk, nil
}
