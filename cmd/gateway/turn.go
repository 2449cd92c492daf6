package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// instructionsMarker marks the Responses API's instructions stored as a
// system message; agent.NoteMarker marks the messages hermes added itself.
// A client's copy of the conversation has neither.
const instructionsMarker = "hermes_instructions"

var jsonTrue = json.RawMessage("true")

func marked(m sessions.Message, marker string) bool {
	v, ok := m.Extra[marker]
	return ok && string(v) == "true"
}

// Session end reasons the gateway writes when it moves a conversation to a
// new session; a request naming such a session gets a new one too.
const (
	endSuspended      = "suspended"
	endPendingExpired = "resume_pending_expired"
)

// admission is where a request's turn runs.
type admission struct {
	sess sessions.Session
	// fresh: a session made for this request (new, or the successor of a
	// suspended or expired one): it has no history to compare with.
	fresh bool
	// opening is the digest of a conversation that has no reply yet,
	// indexed once the turn has stored it (see indexOpening), with
	// request, the digest of the request that stored it (attempt).
	opening, request string
	// history is the digest of the history a fresh session was made for
	// when the index had none, indexed once the turn has stored it (see
	// indexCopied).
	history string
}

func isUser(m sessions.Message) bool { return m.Role == "user" }

// carried is what a turn of sess stores after its input add when sess is
// the successor of a session suspended (or expired) in a turn the gateway
// was cut short in, inside one of its own tools, and add retries that
// turn: the cut reply, its calls answered as interrupted, so the model
// learns of the calls instead of making them again. It is worked out at
// each such turn, not when the successor is made, so that a successor
// whose first turn was itself cut before it stored anything (and the
// successors of that one) still carries it. Nothing when sess holds it
// already.
func (s *Server) carried(sess sessions.Session, add []sessions.Message) ([]sessions.Message, error) {
	if len(add) == 0 {
		return nil, nil
	}
	// Up the successors that hold nothing: each was made for a retry
	// that a kill cut short before it stored a word.
	child := sess
	for range maxCarryDepth {
		if child.ParentSessionID == "" {
			return nil, nil
		}
		parent, err := s.opts.Sessions.Get(child.ParentSessionID)
		if errors.Is(err, fsstore.ErrNotFound) {
			return nil, nil
		}
		if err != nil || (parent.EndReason != endSuspended && parent.EndReason != endPendingExpired) {
			return nil, err
		}
		if next, err := s.opts.Store.SuccessorOf(parent.ID); err != nil || next != child.ID {
			return nil, err
		}
		tail, err := s.opts.Sessions.Tail(parent.ID, isUser)
		if err != nil {
			return nil, err
		}
		if len(tail) == 0 {
			child = parent
			continue
		}
		cut := s.engine.CutAt(tail)
		if cut == len(tail) || tail[0].Role != "user" || !sameMessage(add[len(add)-1], tail[0]) {
			return nil, nil
		}
		carry := agent.Interrupted(tail[cut:])
		own, err := s.opts.Sessions.Tail(sess.ID, isUser)
		if err != nil {
			return nil, err
		}
		for _, m := range own {
			if len(m.ToolCalls) > 0 && bytes.Equal(m.ToolCalls, carry[0].ToolCalls) {
				return nil, nil
			}
		}
		return carry, nil
	}
	return nil, nil
}

// maxCarryDepth bounds how many empty successors carried looks past.
const maxCarryDepth = 8

// sameMessage compares a stored message with a client's copy of it: role,
// content, tool calls, tool call id and name (sessions.Message.SameAs). The
// extra fields are not compared: clients echo back fields of the API's
// reply (refusal, annotations, audio) that the transcript does not keep.
func sameMessage(a, b sessions.Message) bool {
	a.Extra, b.Extra = nil, nil
	if a.SameAs(b) {
		return true
	}
	if !hasToolCalls(a) || !hasToolCalls(b) {
		return false
	}
	// A custom tool's call as the model made it and as the client sends
	// it back (its input, which the gateway wraps) may differ in spacing.
	a.ToolCalls, b.ToolCalls = sameArguments(a.ToolCalls), sameArguments(b.ToolCalls)
	return a.SameAs(b)
}

// sameArguments is calls with each call's arguments as callArguments
// writes them.
func sameArguments(calls json.RawMessage) json.RawMessage {
	var cs []provider.ToolCall
	if json.Unmarshal(calls, &cs) != nil {
		return calls
	}
	for i := range cs {
		cs[i].Function.Arguments = callArguments(cs[i].Function.Arguments)
	}
	b, _ := json.Marshal(cs)
	return b
}

// callArguments are arguments as the history compares them: those of a
// custom tool's call ({"input": text} alone) as customArguments writes
// them, others as they are.
func callArguments(arguments string) string {
	if !strings.Contains(arguments, `"input"`) {
		return arguments
	}
	var a map[string]json.RawMessage
	var input string
	if json.Unmarshal([]byte(arguments), &a) != nil || len(a) != 1 || json.Unmarshal(a["input"], &input) != nil {
		return arguments
	}
	return customArguments(input)
}

func isReplyRole(role string) bool { return role == "assistant" || role == "tool" }

// reconcile compares a stored transcript with the whole conversation a
// client sent (chat completions) and returns how many of the client's
// messages the transcript already holds. ok is false when the client's
// history contradicts the stored one: a message differs, or the client's is
// shorter. Notes hermes added are skipped. A client's assistant message
// also matches a run of stored assistant and tool messages (an agent's tool
// loop) whose text is what the gateway replied with.
func reconcile(stored, client []sessions.Message) (n int, ok bool) {
	j := 0
	for i := 0; i < len(stored); {
		m := stored[i]
		if agent.IsNote(m) {
			i++
			continue
		}
		if j >= len(client) {
			return 0, false
		}
		if sameMessage(m, client[j]) {
			i, j = i+1, j+1
			continue
		}
		if c := client[j]; c.Role == "assistant" && isReplyRole(m.Role) && !hasToolCalls(c) {
			k := i
			for k < len(stored) && (isReplyRole(stored[k].Role) || agent.IsNote(stored[k])) {
				k++
			}
			if replyText(stored[i:k]) == c.Text() {
				i, j = k, j+1
				continue
			}
		}
		return 0, false
	}
	return j, true
}

// lastReplyEnd is the index after the last assistant or tool message of
// msgs: the messages after it are a turn that got no reply.
func lastReplyEnd(msgs []sessions.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if isReplyRole(msgs[i].Role) {
			return i + 1
		}
	}
	return 0
}

// isRetry reports whether input repeats the messages of a turn that got no
// reply (pending): a client retrying after a failure or a restart. Notes and
// instructions are not compared.
func isRetry(pending, input []sessions.Message) bool {
	var p, in []sessions.Message
	for _, m := range pending {
		if !agent.IsNote(m) && !marked(m, instructionsMarker) {
			p = append(p, m)
		}
	}
	for _, m := range input {
		if !marked(m, instructionsMarker) {
			in = append(in, m)
		}
	}
	if len(p) == 0 || len(p) != len(in) {
		return false
	}
	for i := range p {
		if !sameMessage(p[i], in[i]) {
			return false
		}
	}
	return true
}

// replyText is the text of a reply as the API returns it: the texts of its
// assistant messages joined by newlines, as the providers stream them.
func replyText(msgs []sessions.Message) string {
	var texts []string
	for _, m := range msgs {
		if m.Role == "assistant" {
			if t := m.Text(); t != "" {
				texts = append(texts, t)
			}
		}
	}
	return strings.Join(texts, "\n")
}

func hasToolCalls(m sessions.Message) bool {
	return len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]"
}

// pendingToolCalls are the tool calls the reply ends with: the model asks
// the client to run them.
func pendingToolCalls(msgs []sessions.Message) []provider.ToolCall {
	if len(msgs) == 0 {
		return nil
	}
	last := msgs[len(msgs)-1]
	if last.Role != "assistant" || !hasToolCalls(last) {
		return nil
	}
	var calls []provider.ToolCall
	json.Unmarshal(last.ToolCalls, &calls)
	return calls
}

// turnOutcome is what a turn produced.
type turnOutcome struct {
	reply provider.Reply
	count int64 // transcript length after the reply
	// replayed: the reply was stored by an earlier request, and nothing
	// ran for this one.
	replayed bool
	// model is the model that answered, when the provider said.
	model string
}

var errStopping = errors.New("the gateway is stopping")

// begin records a turn in flight on id; a drain that times out marks the
// sessions with turns in flight resume_pending.
func (s *Server) begin(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.abandoned {
		return &apiError{status: 503, typ: "server_error", code: "shutting_down", msg: errStopping.Error()}
	}
	s.inflight[id]++
	s.turns.Add(1)
	return nil
}

func (s *Server) end(id string) {
	s.mu.Lock()
	if s.inflight[id]--; s.inflight[id] <= 0 {
		delete(s.inflight, id)
	}
	s.mu.Unlock()
	s.turns.Done()
}

// runTurn runs a turn of the turn engine (cmd/agent) on the admitted
// session: add is stored (and synced) before the first provider call, the
// reply and the results of the gateway's own tools (gateway.tools) after;
// calls naming other tools end the turn and go back to the client. A crash
// or a failed call loses at most the reply. started runs right before the
// first provider call (a stream sends its headers then). read, when it is
// the session's, is its transcript as routing read it: the provider is
// sent it and the turn's input, unless something wrote to the transcript
// since (agent.Turn.Stored).
func (s *Server) runTurn(ctx context.Context, a admission, add []sessions.Message, read transcriptRead, req request, stream io.Writer, started func()) (turnOutcome, error) {
	id := a.sess.ID
	if err := s.begin(id); err != nil {
		return turnOutcome{}, err
	}
	defer s.end(id)
	// A turn with no input carries on the reply its last turn was cut
	// short in, if any: the client gets that whole reply.
	var cut []sessions.Message
	if len(add) == 0 {
		tail, err := s.opts.Sessions.Tail(id, isUser)
		if err != nil {
			return turnOutcome{}, err
		}
		cut = tail[s.engine.CutAt(tail):]
	}
	var from int64
	if len(cut) > 0 {
		from = cut[0].Seq
	}
	carry, err := s.carried(a.sess, add)
	if err != nil {
		return turnOutcome{}, err
	}
	add = append(add, carry...)
	env := s.opts.ToolEnv
	if a.sess.Cwd != "" {
		env.Cwd = a.sess.Cwd
	}
	if add, err = s.hookInput(ctx, a, add); err != nil {
		return turnOutcome{}, err
	}
	var stored []sessions.Message
	var storedAt sessions.Point
	if read.id == id {
		stored, storedAt = read.msgs, read.at
	}
	res, err := s.engine.Run(ctx, agent.Turn{
		Stored:    stored,
		StoredAt:  storedAt,
		SessionID: id,
		Input:     add,
		Stream:    stream,
		Env:       &env,
		Tools:     req.tools,
		Model:     req.upstream,
		Params:    req.params,
		Provider:  req.provider,
		Mark:      req.stamp.mark(from),
		Started: func(tail agent.Tail) {
			s.router.indexOpening(a, tail)
			s.router.indexCopied(ctx, a)
			if started != nil {
				started()
			}
		},
		// Under s.mu, so that a drain that timed out meanwhile (and marked
		// this session again) is not undone.
		// A failure is reported, not returned: the reply is stored, and a
		// turn that failed now would be retried and run again. The next
		// turn reactivates the session.
		Reactivate: func(id string) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.abandoned {
				return nil
			}
			if _, err := s.opts.Sessions.SetState(id, sessions.StateActive, ""); err != nil {
				s.opts.Logf("session %s: the reply is stored, but making the session active failed: %v", id, err)
			}
			return nil
		},
	})
	if err != nil {
		return turnOutcome{}, fmt.Errorf("%w (session %s keeps the request's messages; retrying continues it)", err, id)
	}
	reply := res.Added
	if len(cut) > 0 {
		reply = append(append(append([]sessions.Message{}, cut...), res.Prelude...), res.Added...)
	}
	return turnOutcome{reply: provider.Reply{Messages: reply, Usage: res.Usage}, count: res.Count, model: res.Model}, nil
}

// Abandon is called when the drain timed out: the sessions with turns in
// flight become resume_pending with reason (or suspended, at the third
// interruption in a row), the turns are canceled, and it waits up to wait
// for them to return. It returns the sessions it marked.
func (s *Server) Abandon(reason string, wait time.Duration) ([]string, error) {
	s.mu.Lock()
	s.abandoned = true
	ids := make([]string, 0, len(s.inflight))
	for id := range s.inflight {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if _, err := s.opts.Sessions.MarkInterrupted(id, reason, SuspendAfter); err != nil {
			errs = append(errs, err)
		}
	}
	s.cancel()
	done := make(chan struct{})
	go func() { s.turns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
	}
	return ids, errors.Join(errs...)
}

// Recover runs when a gateway starts and the last run left no
// clean-shutdown marker: it crashed, was killed, or its drain timed out.
// The gateway sessions active in the last RecentActivity become
// resume_pending (restart_interrupted), or suspended at the third
// interruption in a row. Sessions that the last run's own drain already
// marked (restart_timeout or shutdown_timeout, after it started) are left
// as they are: that run interrupted them once, not twice.
func (s *Server) Recover(prev gatewaystate.State) ([]sessions.Session, error) {
	now := s.now()
	list, err := s.opts.Sessions.ActiveSince(now.Add(-RecentActivity))
	if err != nil {
		return nil, err
	}
	prevStart, _ := prev.StartedAt.Instant()
	var marked []sessions.Session
	for _, sess := range list {
		if sess.Source != "gateway" {
			continue
		}
		switch sess.State {
		case sessions.StateActive:
		case sessions.StateResumePending:
			if sess.ResumeReason == "restart_timeout" || sess.ResumeReason == "shutdown_timeout" {
				if at, err := sess.ResumePendingAt.Instant(); err == nil && !at.Before(prevStart) {
					continue
				}
			}
		default:
			continue
		}
		// A session whose last turn got its reply was not interrupted: the
		// crash came after it (a resume_pending one, after the reply was
		// stored and before the session was made active again).
		finished, err := s.finishedTurn(sess.ID)
		if err != nil {
			return marked, err
		}
		if finished {
			continue
		}
		m, err := s.opts.Sessions.MarkInterrupted(sess.ID, "restart_interrupted", SuspendAfter)
		if err != nil {
			return marked, err
		}
		marked = append(marked, m)
	}
	return marked, nil
}

// finishedTurn reports whether the transcript of id ends with a finished
// turn: an assistant message that calls no tool (a reply that calls
// tools waits for their results, the gateway's or the client's). An empty
// transcript is a turn that did not get as far as storing its input.
func (s *Server) finishedTurn(id string) (bool, error) {
	tail, err := s.opts.Sessions.Tail(id, func(m sessions.Message) bool { return !agent.IsNote(m) })
	if err != nil || len(tail) == 0 {
		return false, err
	}
	last := tail[0]
	return last.Role == "assistant" && !hasToolCalls(last), nil
}
