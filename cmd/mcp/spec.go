package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/profiles"
)

// Defaults of a server's timeouts.
const (
	DefaultStartupTimeout = 10 * time.Second
	DefaultToolTimeout    = 60 * time.Second
)

// MaxToolName is the longest function name the chat APIs accept.
const MaxToolName = 64

// Spec is one entry of mcp_servers, checked.
type Spec struct {
	Name   string
	Config profiles.MCPServer
	// Enabled false: the entry is kept, its tools are not offered.
	Enabled        bool
	StartupTimeout time.Duration
	ToolTimeout    time.Duration
	// Approval is ask, auto or deny for this server's tools (mcp_servers'
	// approval, else tools.approval).
	Approval string
	// Key identifies what the server's tool list depends on (its command
	// or URL and their settings): a cached list made under another key is
	// not used.
	Key string
}

// Stdio reports whether the server is a command run over stdio (else a
// streamable HTTP endpoint).
func (s Spec) Stdio() bool { return s.Config.Command != "" }

// serverNameOK reports whether name is 1 to 64 letters, digits, '_', '-'
// and '.', starting with a letter or digit. (A regexp with a counted
// repetition costs every start of hermes a millisecond to compile.)
func serverNameOK(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || strings.IndexByte("_.-", c) < 0) {
			return false
		}
	}
	return true
}

// CheckName refuses a server name that is not letters, digits, '_', '-'
// and '.', starting with a letter or digit, at most 64 bytes: the name
// is a file name in the profile's mcp directory.
func CheckName(name string) error {
	if !serverNameOK(name) || strings.Contains(name, "..") {
		return fsstore.Invalidf("MCP server name %q: use letters, digits, '_', '-' and '.', starting with a letter or digit, at most 64 bytes", name)
	}
	return nil
}

// Specs checks the mcp_servers of cfg and returns them sorted by name.
// approval is tools.approval, the default of each server's.
func Specs(cfg profiles.Config) ([]Spec, error) {
	names := make([]string, 0, len(cfg.MCPServers))
	for name := range cfg.MCPServers {
		names = append(names, name)
	}
	slices.Sort(names)
	seen := map[string]string{}
	var out []Spec
	for _, name := range names {
		s, err := parseSpec(name, cfg.MCPServers[name], cfg.Tools.Approval)
		if err != nil {
			return nil, err
		}
		if other, ok := seen[sanitize(name)]; ok {
			return nil, fsstore.Invalidf("mcp_servers: %s and %s give their tools the same names (mcp__%s__…)", other, name, sanitize(name))
		}
		seen[sanitize(name)] = name
		out = append(out, s)
	}
	return out, nil
}

func parseSpec(name string, c profiles.MCPServer, approval string) (Spec, error) {
	if err := CheckName(name); err != nil {
		return Spec{}, err
	}
	bad := func(format string, args ...any) (Spec, error) {
		return Spec{}, fsstore.Invalidf("mcp_servers.%s: %s", name, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Command == "" && c.URL == "":
		return bad("needs a command (stdio) or a url (streamable HTTP)")
	case c.Command != "" && c.URL != "":
		return bad("has both a command and a url; give one")
	case c.Command != "" && (len(c.Headers) > 0 || c.BearerTokenEnv != ""):
		return bad("headers and bearer_token_env are for a url")
	case c.URL != "" && (len(c.Args) > 0 || len(c.Env) > 0 || c.Cwd != ""):
		return bad("args, env and cwd are for a command")
	}
	if c.URL != "" && !strings.Contains(c.URL, "${") {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url %q is not an http or https URL", c.URL)
		}
	}
	s := Spec{Name: name, Config: c, Enabled: c.Enabled == nil || *c.Enabled, Approval: c.Approval}
	var err error
	if s.StartupTimeout, err = period(c.StartupTimeout, DefaultStartupTimeout); err != nil {
		return bad("startup_timeout: %v", err)
	}
	if s.ToolTimeout, err = period(c.ToolTimeout, DefaultToolTimeout); err != nil {
		return bad("tool_timeout: %v", err)
	}
	if s.Approval == "" {
		s.Approval = approval
	}
	if s.Approval == "" {
		s.Approval = agent.PolicyAsk
	}
	if err := agent.CheckPolicy(s.Approval); err != nil {
		return bad("approval %q is not ask, auto or deny", s.Approval)
	}
	for _, g := range slices.Concat(c.Tools.Include, c.Tools.Exclude) {
		if _, err := path.Match(g, ""); err != nil {
			return bad("tools: bad pattern %q", g)
		}
	}
	s.Key = key(c)
	return s, nil
}

func period(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	return profiles.ParsePeriod(s)
}

// key hashes the settings a server's tool list depends on: not its
// timeouts, filters or approval, which apply to the list as hermes reads
// it.
func key(c profiles.MCPServer) string {
	b, err := json.Marshal(profiles.MCPServer{
		Command: c.Command, Args: c.Args, Env: c.Env, Cwd: c.Cwd,
		URL: c.URL, Headers: c.Headers, BearerTokenEnv: c.BearerTokenEnv,
	})
	if err != nil {
		panic(err) // strings and maps of strings always encode
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Offered reports whether the server's tool named tool passes its tools
// filter: named by include (or include empty), and not by exclude.
func (s Spec) Offered(tool string) bool {
	match := func(globs []string) bool {
		return slices.ContainsFunc(globs, func(g string) bool { ok, _ := path.Match(g, tool); return ok })
	}
	f := s.Config.Tools
	return (len(f.Include) == 0 || match(f.Include)) && !match(f.Exclude)
}

// ToolName is the name the model calls the server's tool by:
// mcp__<server>__<tool>, each character outside [A-Za-z0-9_-] made '_';
// a name past MaxToolName is cut and ends with a hash of the server's and
// the tool's own names, so that two long names stay apart.
func ToolName(server, tool string) string {
	name := "mcp__" + sanitize(server) + "__" + sanitize(tool)
	if len(name) <= MaxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:MaxToolName-len(suffix)] + suffix
}

// Prefix is what every tool name of the server starts with.
func Prefix(server string) string { return "mcp__" + sanitize(server) + "__" }

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
