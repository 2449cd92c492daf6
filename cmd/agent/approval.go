package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
)

// Approver decides whether a call that needs approval (Tool.NeedsApproval)
// may run. A refused call is answered to the model, and the turn goes on.
type Approver interface {
	Approve(ctx context.Context, c provider.ToolCall) (bool, error)
}

// Approval policies, as tools.approval in config.yaml spells them.
const (
	PolicyAsk  = "ask"  // ask on a terminal; without one, deny
	PolicyAuto = "auto" // run every call
	PolicyDeny = "deny" // run none of the calls that need approval
)

// CheckPolicy refuses a tools.approval that is none of the policies.
func CheckPolicy(p string) error {
	switch p {
	case PolicyAsk, PolicyAuto, PolicyDeny:
		return nil
	}
	return fsstore.Invalidf("tools.approval %q is not ask, auto or deny", p)
}

// Fixed approves every call (true) or none (false).
type Fixed bool

// Approve returns f.
func (f Fixed) Approve(context.Context, provider.ToolCall) (bool, error) { return bool(f), nil }

// Unattended is the Approver of policy where no one is there to ask (the
// gateway, a worker, a chat without a terminal): auto runs the calls that
// need approval, deny refuses them by policy (Deny: a hook's allow does
// not run them), and ask refuses them for want of a person (a hook's
// allow answers for one).
func Unattended(policy string) Approver {
	switch policy {
	case PolicyAuto:
		return Fixed(true)
	case PolicyDeny:
		return Deny{}
	}
	return Fixed(false)
}

// Deny refuses every call that needs approval, by policy (tools.approval:
// deny). Unlike Fixed(false), which stands for a person who is not there
// to ask, it is a Refuser: a PreToolUse hook's allow does not run what it
// refuses.
type Deny struct{}

// Approve refuses.
func (Deny) Approve(context.Context, provider.ToolCall) (bool, error) { return false, nil }

// Refuses every call.
func (Deny) Refuses(provider.ToolCall) bool { return true }

// Refuser is an Approver that refuses some calls by policy rather than for
// want of a person to ask. A PreToolUse hook's allow answers for a person,
// never for a policy.
type Refuser interface {
	Refuses(c provider.ToolCall) bool
}

// Refuses reports whether a refuses c by policy (a is a Refuser that
// says so).
func Refuses(a Approver, c provider.ToolCall) bool {
	r, ok := a.(Refuser)
	return ok && r.Refuses(c)
}

// Prompter asks the person at a terminal: yes, no, or always (yes to every
// call for the rest of this process's session). An empty answer, end of
// input, or anything else is no.
type Prompter struct {
	In  *bufio.Reader // the terminal's input, shared with the line mode that reads prompts
	Out io.Writer     // where the question goes (stderr)

	mu     sync.Mutex
	always bool
}

// Approve asks about c.
func (p *Prompter) Approve(_ context.Context, c provider.ToolCall) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.always {
		return true, nil
	}
	fmt.Fprintf(p.Out, "hermes: the model asks to run %s %s\nhermes: allow? [y]es, [n]o, [a]lways for this session: ", c.Function.Name, Summary(c))
	line, err := p.In.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(p.Out)
		if err == io.EOF {
			return false, nil
		}
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	case "a", "always":
		p.always = true
		return true, nil
	}
	return false, nil
}

// Summary is a call's arguments on one line, cut to 200 bytes: what a
// person is asked to approve, and what progress lines show.
func Summary(c provider.ToolCall) string {
	s := strings.Join(strings.Fields(c.Function.Arguments), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
