package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// NoteMarker is the extra field that marks a message hermes itself put in
// a transcript (a resume note, an interrupted call's result, the step
// limit's note): a client's copy of the conversation does not have them,
// and the gateway skips them when it compares the two.
const NoteMarker = "hermes_note"

var jsonTrue = json.RawMessage("true")

// IsNote reports whether m is a message hermes added (NoteMarker).
func IsNote(m sessions.Message) bool {
	v, ok := m.Extra[NoteMarker]
	return ok && string(v) == "true"
}

func note(m sessions.Message) sessions.Message {
	m.Extra = map[string]json.RawMessage{NoteMarker: jsonTrue}
	return m
}

// Results the engine gives calls it does not run.
const (
	// interruptedResult answers a call found without a result: the
	// process running it died (kill -9, a power cut) after the call was
	// stored. The call is not run again by itself.
	interruptedResult = "interrupted: hermes stopped before this call returned a result, and did not run it again; check its effects before repeating it"
	cancelledResult   = "cancelled by the user"
	// abandonedResult answers a call that did not end within CancelGrace
	// of its turn's cancellation: it may still be running, and its own
	// result, whenever it comes, is not stored.
	abandonedResult   = "cancelled: the turn was cancelled while this call ran, and it was still running when hermes stopped waiting for it; whatever it does from now on is not reported; check its effects before repeating it"
	notRunCancelled   = "not run: the user cancelled the turn"
	notApprovedResult = "not approved: run with --yes or set tools.approval: auto"
	// notAnsweredResult answers a call of a client's tool (ClientTools)
	// that the client's next request went on without answering: hermes
	// does not run a client's tools, and nothing stopped.
	notAnsweredResult = "not answered by the client: its next message came without this call's result; hermes does not run the client's tools, so the call was not run here"
)

// Engine runs turns: the one loop behind `hermes chat`, the gateway and
// kanban workers. Its fields are set once; Run may be called for several
// sessions, one turn at a time per session.
type Engine struct {
	Sessions *sessions.Store
	Provider provider.Provider
	// Tools are the tools a turn offers; none means the model gets no
	// tools (and a call it makes all the same is answered as unknown).
	Tools    []Tool
	Approver Approver
	// MaxSteps bounds the provider calls of one turn (DefaultMaxSteps
	// when 0).
	MaxSteps int
	// ClientTools: a reply whose calls name a tool not in Tools ends the
	// turn with those calls unanswered, for the caller's client to run
	// (the gateway); otherwise such a call is answered "unknown tool".
	ClientTools bool
	// Progress, when set, is told of each call as it starts and ends.
	Progress func(Progress)
	// Instructions, when set, are read at a session's first turn (one
	// whose transcript is empty) and stored before its input, as a note.
	Instructions *Instructions
	// Memory, when set, is read at a session's first turn too, and its
	// snapshot (MemoryNote) stored after the instructions.
	Memory *memory.Store
	// Skills, when set, are listed at a session's first turn too, after
	// the memory (Skills.Note).
	Skills *Skills
	// Warn reports what a session's opening left out (a memory that
	// cannot be read).
	Warn func(string)
	// ToolTimeout, when above 0, bounds each call of a tool: past it the
	// call is cancelled and answered as timed out, and the turn goes on.
	ToolTimeout time.Duration
	// CancelGrace is how long a cancelled call (its turn's cancellation,
	// or ToolTimeout) may take to end (DefaultCancelGrace when 0). Past
	// it the engine stops waiting: the call is answered once, as
	// abandoned, the turn goes on or ends as it would, and what the
	// call returns later is never stored, only told to Late. So no call
	// that ignores its context (a read that never returns) holds a turn,
	// a chat's Ctrl-C or a gateway's connection.
	CancelGrace time.Duration
	// Late, when set, is told of the result of an abandoned call once it
	// ends (a chat prints it, the gateway logs it).
	Late func(sessionID string, c provider.ToolCall, result string)
	// Hooks, when set, run at the turn's events (hooks.go; package
	// hooks); what they tell the user goes to Warn.
	Hooks *hooks.Set
	// MaxSubagents is how many children of one delegate call run at once
	// (DefaultMaxSubagents when 0), and SubagentDepth how deep delegation
	// goes (DefaultSubagentDepth when 0): a child at that depth is not
	// given the delegate tool.
	MaxSubagents  int
	SubagentDepth int
	// purpose marks the usage of each call the engine stores (a
	// sub-agent's engine: usage.PurposeDelegate), and parent is the
	// session whose delegation a sub-agent's engine runs: its turn's end
	// fires SubagentStop, not Stop.
	purpose string
	parent  *sessions.Session
}

// DefaultCancelGrace is how long a cancelled call may take to end before
// the engine stops waiting for it (Engine.CancelGrace): long enough for a
// tool to kill what it started.
const DefaultCancelGrace = 2 * time.Second

// Progress is a call starting (Result empty; after its approval) or
// ending.
type Progress struct {
	Call   provider.ToolCall
	Done   bool
	Result string
}

// Turn is one request to the engine.
type Turn struct {
	SessionID string
	// Input is appended (and synced) before the first provider call: the
	// user message, a system message before it, or a client's messages.
	Input []sessions.Message
	// Stream, when set, receives the reply text as it arrives.
	Stream io.Writer
	// Env is what the tools may use; its SessionID is set by Run.
	Env *Env
	// Started, when set, is called once the turn's input is stored,
	// right before the first provider call (a server sends its response
	// headers then), with the turn's Tail of its transcript.
	Started func(tail Tail)
	// Reactivate is called after a successful turn on a session that was
	// resume_pending or suspended; nil sets it active.
	Reactivate func(id string) error
	// Tools are offered beside the engine's own at each provider call of
	// the turn, as function-calling entries: a client's tools (with
	// ClientTools, a call of one ends the turn).
	Tools []json.RawMessage
	// Model and Params are passed to each provider call of the turn (see
	// provider.Request).
	Model  string
	Params provider.Params
	// Provider, when set, answers the turn instead of the engine's.
	Provider provider.Provider
	// Mark, when set, are fields written on every message the turn
	// stores after its input (replies, tool results, notes), in the same
	// line and the same sync: the gateway records there the response a
	// turn answers, which its reply's line then makes durable.
	Mark map[string]json.RawMessage
	// Stored is the session's whole transcript as the caller read it
	// (sessions.Store.MessagesAt), and StoredAt where that read ended: a
	// provider call is sent it and what the turn stored since, rather
	// than a read of the file, while every append of the turn began
	// where the last one (or that read) ended, that is while nothing
	// else wrote to the transcript. Unset, it is an empty transcript's:
	// a session's first turn needs no read either.
	Stored   []sessions.Message
	StoredAt sessions.Point
}

// Result is what a turn appended after its input.
type Result struct {
	SessionID string
	// Added are the messages stored after the input: replies, tool
	// results and notes, in order.
	Added []sessions.Message
	// Prelude are the messages hermes stored before the input: results
	// for the calls a crash left unanswered, a resume note.
	Prelude []sessions.Message
	// Count is the transcript's length after the turn.
	Count int64
	Usage *provider.Usage
	// Subagents is the usage of the children that the turn's delegate
	// calls ran (and of theirs), apart from Usage: the turn's cost
	// without counting a sub-agent's call as the turn's own.
	Subagents *provider.Usage
	// Model is the model that answered last, when the provider says.
	Model string
	// mark is the turn's Mark, once its input is stored.
	mark map[string]json.RawMessage
	// known is the transcript as the turn knows it (Turn.Stored, then
	// each of its appends), ending at at; nil once an append found that
	// something else wrote to the transcript. level: an append found it
	// level with the file, so a provider call may be sent it.
	known [][]sessions.Message
	at    sessions.Point
	level bool
	// Steps is the number of provider calls; StepLimit is set when the
	// turn stopped at MaxSteps with calls left unrun.
	Steps     int
	StepLimit bool
	// Pending are the calls the reply ends with for the client to run
	// (ClientTools only).
	Pending []provider.ToolCall
}

// Text is the reply's text: that of the last assistant message that has
// any.
func (r Result) Text() string {
	for i := len(r.Added) - 1; i >= 0; i-- {
		if m := r.Added[i]; m.Role == "assistant" && !IsNote(m) {
			if t := m.Text(); t != "" {
				return t
			}
		}
	}
	return ""
}

// Opening is msgs after the project instructions of cwd and the memory's
// snapshot (when the engine reads them and there are some): what Run
// stores at a session's first turn. A front end that creates a session
// together with its first messages, so that a failed create leaves none
// (chat), stores these.
//
// The memory's snapshot is made while the instructions and the skills are
// read (each reads files of its own); its warnings, the store's and the
// note's, are held and said after them, so that no Warn is called from
// two goroutines at once.
func (e *Engine) Opening(ctx context.Context, cwd string, msgs []sessions.Message) []sessions.Message {
	var (
		mem     sessions.Message
		memOK   bool
		memWarn []func()
		done    = make(chan struct{})
	)
	if e.Memory != nil {
		held := func(warn func(string)) func(string) {
			return func(msg string) {
				if warn != nil {
					memWarn = append(memWarn, func() { warn(msg) })
				}
			}
		}
		store := *e.Memory
		store.Warn = held(e.Memory.Warn)
		go func() {
			defer close(done)
			mem, memOK = MemoryNote(&store, held(e.Warn))
		}()
	} else {
		close(done)
	}
	var head []sessions.Message
	if e.Instructions != nil {
		if m, ok := e.Instructions.Note(ctx, cwd); ok {
			head = append(head, m)
		}
	}
	var skillsNote sessions.Message
	skillsOK := false
	if e.Skills != nil {
		skillsNote, skillsOK = e.Skills.Note(ctx, cwd)
	}
	<-done
	for _, warn := range memWarn {
		warn()
	}
	if memOK {
		head = append(head, mem)
	}
	if skillsOK {
		head = append(head, skillsNote)
	}
	if head == nil {
		return msgs
	}
	return append(head, msgs...)
}

// Run runs one turn on an existing session; see the package doc for the
// steps and what each stores. An error leaves the session consistent and
// resumable: what was stored stays, every stored call has or gets a result.
func (e *Engine) Run(ctx context.Context, t Turn) (res Result, _ error) {
	st := e.Sessions
	res = Result{SessionID: t.SessionID, known: [][]sessions.Message{t.Stored}, at: t.StoredAt}
	sess, err := st.Get(t.SessionID)
	if err != nil {
		return res, err
	}
	if sess.State == sessions.StateEnded {
		if sess, err = st.Reopen(sess.ID); err != nil {
			return res, err
		}
	}
	env := t.Env
	if env == nil {
		env = &Env{}
	}
	env.SessionID, env.engine, env.subagents = sess.ID, e, &usageSum{}
	env.model, env.provider = t.Model, t.Provider
	defer func() { res.Subagents = env.subagents.total() }()
	head, settled, resumed, err := e.prelude(&res, sess, t.Input, env.Checkpoints)
	if err != nil {
		return res, err
	}
	base := e.hookBase(sess, env)
	if len(resumed) > 0 {
		// Their results go first: they answer the stored reply, before
		// the input (Resumer). A hook that stops the turn there stops it.
		stopped, err := e.runCalls(ctx, env, &res, resumed, base)
		if err != nil || stopped {
			return res, err
		}
	}
	if sess.MessageCount == 0 {
		head = e.Opening(ctx, firstNonEmpty(env.Cwd, sess.Cwd), head)
	}
	if len(head) > 0 {
		if res.Count, err = e.appendKnown(&res, head); err != nil {
			return res, err
		}
	}
	for _, id := range settled {
		// Recorded in head: a failure to remove it leaves a stale record.
		_ = env.Checkpoints.ClearPending(sess.ID, id)
	}
	for _, m := range head {
		if IsNote(m) {
			res.Prelude = append(res.Prelude, m)
		}
	}
	schemas := make([]json.RawMessage, len(e.Tools), len(e.Tools)+len(t.Tools))
	for i, tool := range e.Tools {
		schemas[i] = tool.Schema()
	}
	schemas = append(schemas, t.Tools...)
	maxSteps := e.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	res.mark = t.Mark
	if t.Started != nil {
		t.Started(func(stop func(sessions.Message) bool) ([]sessions.Message, error) { return e.tail(&res, stop) })
	}
	var stream *separated
	if t.Stream != nil {
		stream = &separated{w: t.Stream}
	}
	stopActive := false
	for {
		res.Steps++
		h := history{store: st, id: sess.ID}
		if res.level {
			h.known = res.known
		}
		req := provider.Request{SessionID: sess.ID, History: h, Tools: schemas, Model: t.Model, Params: t.Params}
		if stream != nil {
			stream.next()
			req.Stream = stream
		}
		prov := e.Provider
		if t.Provider != nil {
			prov = t.Provider
		}
		reply, err := prov.Complete(ctx, req)
		if err != nil {
			return res, e.keepFailed(&res, err)
		}
		if len(reply.Messages) == 0 {
			return res, &provider.Error{Provider: prov.Name(), Message: prov.Name() + ": empty reply"}
		}
		if len(reply.Failed) > 0 {
			last := &reply.Messages[len(reply.Messages)-1]
			others, _ := usage.Others(*last) // a provider's own message: none, or a list
			usage.PutOthers(last, append(others, reply.Failed...))
		}
		res.Usage = res.Usage.Add(reply.Usage)
		if reply.Model != "" {
			res.Model = reply.Model
		}
		if e.purpose != "" {
			markPurpose(reply.Messages, e.purpose)
		}
		// The calls are stored, and synced, before any of them runs.
		if err := e.store(&res, reply.Messages...); err != nil {
			return res, err
		}
		calls := unanswered(reply.Messages)
		if len(calls) == 0 {
			// The API paused a long turn (pause_turn): the paused message,
			// stored, is sent back as it is, and the model goes on from it.
			if paused(reply.Messages) {
				if res.Steps >= maxSteps {
					res.StepLimit = true
					break
				}
				continue
			}
			if res.Steps >= maxSteps {
				break
			}
			again, err := e.stopHooks(ctx, &res, base, res.Text(), stopActive)
			if err != nil {
				return res, err
			}
			if !again {
				break
			}
			stopActive = true
			continue
		}
		if e.ClientTools && !e.allOurs(calls) {
			res.Pending = calls
			break
		}
		if res.Steps >= maxSteps {
			res.StepLimit = true
			if err := e.stopAtLimit(&res, calls, maxSteps); err != nil {
				return res, err
			}
			break
		}
		stopped, err := e.runCalls(ctx, env, &res, calls, base)
		if err != nil {
			return res, err
		}
		if stopped {
			break
		}
	}
	if sess.State == sessions.StateResumePending || sess.State == sessions.StateSuspended {
		reactivate := t.Reactivate
		if reactivate == nil {
			reactivate = func(id string) error {
				_, err := st.SetState(id, sessions.StateActive, "")
				return err
			}
		}
		if err := reactivate(sess.ID); err != nil {
			return res, err
		}
	}
	return res, nil
}

// paused reports whether a reply ends in a message the API paused
// (an anthropic stop reason pause_turn), one the model goes on from.
func paused(msgs []sessions.Message) bool {
	var stop string
	json.Unmarshal(msgs[len(msgs)-1].Extra[provider.StopReason], &stop)
	return stop == "pause_turn"
}

// keepFailed stores the calls of a failed model call that the provider
// had counted (provider.Error.Failed: billed, though they made no reply)
// in a note, so that every report counts them, and returns err. A note
// that cannot be stored leaves err as it is.
func (e *Engine) keepFailed(res *Result, err error) error {
	var perr *provider.Error
	if !errors.As(err, &perr) || len(perr.Failed) == 0 {
		return err
	}
	m := note(sessions.Message{Role: "system", Content: sessions.TextContent(
		"Note: a model call failed after the provider counted its tokens: " + perr.Error())})
	usage.PutOthers(&m, perr.Failed)
	e.store(res, m) // the turn's error is err, whether or not the note is stored
	return err
}

// store appends msgs, synced, each with the turn's Mark once its input
// is stored, and records them in res.
func (e *Engine) store(res *Result, msgs ...sessions.Message) error {
	for i := range msgs {
		for k, v := range res.mark {
			if msgs[i].Extra == nil {
				msgs[i].Extra = map[string]json.RawMessage{}
			}
			msgs[i].Extra[k] = v
		}
	}
	n, err := e.appendKnown(res, msgs)
	if err != nil {
		return err
	}
	res.Count = n
	res.Added = append(res.Added, msgs...)
	return nil
}

// appendKnown appends msgs to the turn's session, synced, and keeps
// res.known level with the transcript: msgs join it when the append began
// where res.known ends; otherwise another writer came between, and the
// provider reads the file from then on.
func (e *Engine) appendKnown(res *Result, msgs []sessions.Message) (int64, error) {
	n, ext, err := e.Sessions.AppendAt(res.SessionID, msgs)
	switch {
	case err != nil:
		res.known, res.level = nil, false
	case res.known != nil && ext.From.Same(res.at):
		res.known, res.at, res.level = append(res.known, msgs), ext.To, true
	default:
		res.known, res.level = nil, false
	}
	return n, err
}

// prelude is what a turn stores before its input: a result for each call
// the transcript ends with unanswered (a crash while it ran), not counting
// the calls the input itself answers first; then the resume note of a
// session a restart interrupted, unless one follows its last reply already;
// then the input. Tool results must follow their call, so they go first.
// A call of a Resumer is not answered but returned, in resumed, for the
// turn to run again before it stores the rest.
func (e *Engine) prelude(res *Result, sess sessions.Session, input []sessions.Message, ck *checkpoints.Store) (_ []sessions.Message, settled []string, resumed []provider.ToolCall, _ error) {
	// Calls are pending only when nothing but results follows the last
	// reply: a user message after it says none is, so the tail stops there
	// too, and a new session's opening notes (tens of KB) are not parsed
	// again. A resumed session's tail goes back to its reply, since a
	// failed turn may have stored the resume note before its input.
	resuming := sess.State == sessions.StateResumePending || sess.State == sessions.StateSuspended
	tail, err := e.tail(res, func(m sessions.Message) bool {
		return m.Role == "assistant" && !IsNote(m) || m.Role == "user" && !resuming
	})
	if err != nil {
		return nil, nil, nil, err
	}
	lead := 0
	for lead < len(input) && input[lead].Role == "tool" {
		lead++
	}
	var missing []provider.ToolCall
	if len(tail) > 0 && onlyResults(tail[1:]) {
		for _, c := range unanswered(append(tail, input[:lead]...)) {
			if r, ok := e.tool(c.Function.Name).(Resumer); ok && r.Resumes() {
				resumed = append(resumed, c)
			} else {
				missing = append(missing, c)
			}
		}
	}
	out := append([]sessions.Message{}, input[:lead]...)
	for _, c := range missing {
		text := interruptedResult
		if e.ClientTools && e.tool(c.Function.Name) == nil {
			text = notAnsweredResult
		}
		m := toolResult(c, text, true)
		if ck != nil {
			// The changes the call made before the crash (checkpoint.go).
			changes, found, err := settlePending(ck, sess.ID, c.ID)
			if err != nil {
				return nil, nil, nil, err
			}
			if found {
				checkpoints.Attach(&m, changes)
				settled = append(settled, c.ID)
			}
		}
		out = append(out, m)
	}
	if resuming {
		// A turn that failed after storing the note left it there.
		noted := false
		for _, m := range tail {
			if m.Role == "system" && IsNote(m) && strings.HasPrefix(m.Text(), ResumeNote(sess.ResumeReason)) {
				noted = true
			}
		}
		if !noted {
			out = append(out, note(sessions.Message{Role: "system", Content: sessions.TextContent(resumeNote(sess.ResumeReason, missing))}))
		}
	}
	return append(out, input[lead:]...), settled, resumed, nil
}

// Tail is sessions.Store.Tail of a turn's session: its last messages,
// oldest first, back to the first for which stop returns true
// (included).
type Tail func(stop func(sessions.Message) bool) ([]sessions.Message, error)

// tail is the turn's Tail: taken from res.known, what the turn read and
// stored, when the transcript still ends where it does (an open and two
// stats: Store.IsAt), else read from the file.
func (e *Engine) tail(res *Result, stop func(sessions.Message) bool) ([]sessions.Message, error) {
	if res.known == nil || !e.Sessions.IsAt(res.SessionID, res.at) {
		return e.Sessions.Tail(res.SessionID, stop)
	}
	var rev []sessions.Message
	for i := len(res.known) - 1; i >= 0; i-- {
		for j := len(res.known[i]) - 1; j >= 0; j-- {
			rev = append(rev, res.known[i][j])
			if stop(res.known[i][j]) {
				slices.Reverse(rev)
				return rev, nil
			}
		}
	}
	slices.Reverse(rev)
	return rev, nil
}

// resumeNote is ResumeNote, naming the calls the interruption left
// without a result.
func resumeNote(reason string, missing []provider.ToolCall) string {
	text := ResumeNote(reason)
	if len(missing) == 0 {
		return text
	}
	names := make([]string, len(missing))
	for i, c := range missing {
		names[i] = c.Function.Name
	}
	return fmt.Sprintf("%s %d tool call(s) (%s) were interrupted before they returned and were not run again.",
		text, len(missing), strings.Join(names, ", "))
}

// onlyResults reports whether msgs are all tool results, or notes hermes
// stored among them (an abandoned call's late change).
func onlyResults(msgs []sessions.Message) bool {
	for _, m := range msgs {
		if m.Role != "tool" && !IsNote(m) {
			return false
		}
	}
	return true
}

// CutAt is where the reply that msgs (a transcript, or its end) end with
// begins when that reply was cut short, else len(msgs). A reply is what a
// turn stored after its input, up to the end; it was cut short unless it
// ended the turn: its last assistant message calls no tool, or (with
// ClientTools) calls one that is not the engine's, for the client to run,
// or the turn stopped at its step limit. So a reply that ends with the
// engine's own calls, answered or not, was cut: the process was killed
// while a call ran, the turn was cancelled, or the provider failed after
// the results. The client never received such a reply. A turn run with no
// input carries it on: the calls left without a result are answered as
// interrupted, nothing is run again, and the provider is called.
func (e *Engine) CutAt(msgs []sessions.Message) int {
	i := len(msgs)
	for ; i > 0; i-- {
		m := msgs[i-1]
		if m.Role == "assistant" && !IsNote(m) && e.forClient(ToolCalls(m)) {
			break // a reply the client got its calls from: after it, input
		}
		if m.Role != "assistant" && m.Role != "tool" && !IsNote(m) {
			break
		}
	}
	start := i
	for start < len(msgs) && (msgs[start].Role != "assistant" || IsNote(msgs[start])) {
		start++
	}
	if start == len(msgs) || e.ended(msgs[start:]) {
		return len(msgs)
	}
	return start
}

// ended reports whether reply, which begins with an assistant message,
// ended its turn (see CutAt).
func (e *Engine) ended(reply []sessions.Message) bool { return ended(reply, e.forClient) }

// Ended reports whether reply, the messages a turn stored after its
// input, ended the turn (see CutAt) rather than being cut short, the
// engine's own tools being those ours names and a call of any other one
// the client's to run (ClientTools). A reply without an assistant message
// (a provider that failed at once) ended nothing.
func Ended(reply []sessions.Message, ours func(name string) bool) bool {
	start := 0
	for start < len(reply) && (reply[start].Role != "assistant" || IsNote(reply[start])) {
		start++
	}
	return start < len(reply) && ended(reply[start:], func(calls []provider.ToolCall) bool {
		for _, c := range calls {
			if !ours(c.Function.Name) {
				return true
			}
		}
		return false
	})
}

func ended(reply []sessions.Message, forClient func([]provider.ToolCall) bool) bool {
	for i := len(reply) - 1; i >= 0; i-- {
		m := reply[i]
		switch {
		case IsNote(m) && m.Role == "system" && (strings.HasPrefix(m.Text(), stepLimitNote) || strings.HasPrefix(m.Text(), hookStopNote)):
			return true
		case IsNote(m):
		case m.Role == "assistant":
			calls := ToolCalls(m)
			return len(calls) == 0 || forClient(calls)
		case m.Role == "tool":
			return false
		}
	}
	return false
}

// forClient reports whether calls end a turn for the client to run them
// (ClientTools, and a call names a tool that is not the engine's).
func (e *Engine) forClient(calls []provider.ToolCall) bool {
	return e.ClientTools && len(calls) > 0 && !e.allOurs(calls)
}

// allOurs reports whether every call names one of the engine's tools.
func (e *Engine) allOurs(calls []provider.ToolCall) bool {
	for _, c := range calls {
		if e.tool(c.Function.Name) == nil {
			return false
		}
	}
	return true
}

func (e *Engine) tool(name string) Tool {
	for _, t := range e.Tools {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// runCalls runs calls in order, storing (and syncing) each result as its
// call ends. A cancelled ctx ends the call in flight (its tool kills what
// it started); that call and the ones not yet run are answered as
// cancelled, and the turn ends with ctx's error.
func (e *Engine) runCalls(ctx context.Context, env *Env, res *Result, calls []provider.ToolCall, base hooks.Input) (stopped bool, _ error) {
	for i, c := range calls {
		if ctx.Err() != nil {
			return false, e.cancelRest(ctx, res, calls[i:], notRunCancelled)
		}
		cenv := env.withCall(c.ID)
		hk := &callHooks{base: base}
		text, abandoned := e.runCall(ctx, cenv, res.SessionID, c, hk)
		if ctx.Err() != nil {
			if !abandoned {
				text = cancelledResult
			}
			if err := e.storeResult(res, cenv, c, text, abandoned, hk.records); err != nil {
				return false, err
			}
			return false, e.cancelRest(ctx, res, calls[i+1:], notRunCancelled)
		}
		text = e.postToolUse(ctx, c, text, hk)
		if e.Progress != nil {
			e.Progress(Progress{Call: c, Done: true, Result: text})
		}
		if err := e.storeResult(res, cenv, c, text, abandoned, hk.records); err != nil {
			return false, err
		}
		if hk.stop != nil {
			return true, e.stopByHook(res, calls[i+1:], *hk.stop)
		}
	}
	return false, nil
}

// storeResult stores the result of call c, run with env, and the file
// changes it made (checkpoint.go), then removes the call's pending
// record. An abandoned call may change files still: its pending record
// stays, and its changes are recorded in a note when it ends
// (recordLate), or by fsck --repair if the process ends first.
func (e *Engine) storeResult(res *Result, env *Env, c provider.ToolCall, text string, abandoned bool, recs []hooks.Record) error {
	m := toolResult(c, text, false)
	hooks.Attach(&m, recs...)
	var changes []checkpoints.Change
	if !abandoned {
		changes = env.call.changes()
	}
	checkpoints.Attach(&m, changes)
	if err := e.store(res, m); err != nil {
		return err
	}
	if len(changes) > 0 {
		checkpointStep("result")
		// Stale once the result is stored: a failure here leaves it for
		// fsck --repair, and loses nothing.
		_ = env.Checkpoints.ClearPending(res.SessionID, c.ID)
	}
	return nil
}

// cancelRest answers calls with text and returns ctx's error.
func (e *Engine) cancelRest(ctx context.Context, res *Result, calls []provider.ToolCall, text string) error {
	if len(calls) > 0 {
		msgs := make([]sessions.Message, len(calls))
		for i, c := range calls {
			msgs[i] = toolResult(c, text, false)
		}
		if err := e.store(res, msgs...); err != nil {
			return err
		}
	}
	return fmt.Errorf("turn cancelled (session %s keeps it): %w", res.SessionID, context.Cause(ctx))
}

// runCall runs one call of session sid and returns its result's text.
// Every failure is a result the model reads, never an error of the turn.
// abandoned is true when the call did not end within CancelGrace of its
// cancellation (see Engine.CancelGrace): text then says so, and the
// call's own result goes to Late.
func (e *Engine) runCall(ctx context.Context, env *Env, sid string, c provider.ToolCall, hk *callHooks) (text string, abandoned bool) {
	tool := e.tool(c.Function.Name)
	if tool == nil {
		names := make([]string, len(e.Tools))
		for i, t := range e.Tools {
			names[i] = t.Name()
		}
		offered := "none"
		if len(names) > 0 {
			offered = strings.Join(names, ", ")
		}
		return fmt.Sprintf("error: unknown tool %q (offered: %s)", c.Function.Name, offered), false
	}
	args := json.RawMessage(c.Function.Arguments)
	if strings.TrimSpace(c.Function.Arguments) == "" {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return fmt.Sprintf("error: the arguments of %s are not valid JSON: %s", c.Function.Name, c.Function.Arguments), false
	}
	approval := needsApproval(tool, env, args)
	if e.Hooks.Has(hooks.PreToolUse) {
		o := e.hookRun(ctx, hooks.ToolInput(hk.base, hooks.PreToolUse, c.Function.Name, c.ID, args))
		hk.record(hooks.PreToolUse, o)
		switch {
		case ctx.Err() != nil:
			return notRunCancelled, false
		case o.Stop:
			hk.stop = &o.StopReason
			return hookStopResult + o.StopReason, false
		case o.Block:
			return "blocked by hook: " + o.Reason, false
		}
		if o.UpdatedInput != nil {
			if o.UpdatedInput[0] != '{' {
				return "error: a PreToolUse hook's updatedInput is not a JSON object: " + string(o.UpdatedInput), false
			}
			args = o.UpdatedInput
			c.Function.Arguments = string(args)
			approval = needsApproval(tool, env, args)
		}
		approval = (approval || o.Ask) && !(o.Allow && !Refuses(e.Approver, c))
	}
	hk.args = args
	if approval {
		ok, err := e.approve(ctx, c)
		if err != nil {
			return "error: approval: " + err.Error(), false
		}
		if !ok {
			return notApprovedResult, false
		}
	}
	if e.Progress != nil {
		e.Progress(Progress{Call: c})
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if e.ToolTimeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, e.ToolTimeout)
	}
	defer cancel()
	type outcome struct {
		out string
		err error
	}
	// Buffered: an abandoned call's goroutine never blocks on it.
	done := make(chan outcome, 1)
	hk.ran, hk.failed = true, true // failed until it says otherwise
	go func() {
		out, err := tool.Run(callCtx, env.forCall(callCtx), args)
		done <- outcome{out, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-callCtx.Done():
		grace := e.CancelGrace
		if grace <= 0 {
			grace = DefaultCancelGrace
		}
		wait := time.NewTimer(grace)
		defer wait.Stop()
		select {
		case o = <-done:
		case <-wait.C:
			go func() {
				o := <-done
				e.recordLate(sid, env, c)
				if e.Late != nil {
					e.Late(sid, c, resultText(o.out, o.err))
				}
			}()
			if ctx.Err() != nil {
				return abandonedResult, true
			}
			return fmt.Sprintf("error: timed out after %s (tool_timeout), and still running %s later: hermes stopped waiting for it; whatever it does from now on is not reported; check its effects before repeating it", e.ToolTimeout, grace), true
		}
	}
	hk.failed = o.err != nil
	if o.err != nil && ctx.Err() == nil && callCtx.Err() != nil {
		return fmt.Sprintf("error: timed out after %s (tool_timeout): the call was cancelled; it may have taken effect in part: %v", e.ToolTimeout, o.err), false
	}
	return resultText(o.out, o.err), false
}

// recordLate records the file changes call c (run with env) made, once it
// ends after the engine abandoned it: its one result, stored already,
// records none of them, so a note appended to session sid holds them
// (checkpoints.Late), and the call's pending record goes. A
// failure leaves the pending record, which fsck --repair records.
func (e *Engine) recordLate(sid string, env *Env, c provider.ToolCall) {
	changes := env.call.changes()
	if len(changes) == 0 {
		return
	}
	if _, err := e.Sessions.Append(sid, []sessions.Message{checkpoints.Late(c.ID, c.Function.Name, changes)}); err != nil {
		return
	}
	_ = env.Checkpoints.ClearPending(sid, c.ID)
}

// resultText is the result the model reads of a tool's run.
func resultText(out string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

func (e *Engine) approve(ctx context.Context, c provider.ToolCall) (bool, error) {
	if e.Approver == nil {
		return false, nil
	}
	return e.Approver.Approve(ctx, c)
}

// stepLimitNote begins the note of a turn that stopped at its step limit.
const stepLimitNote = "Note: the turn stopped after "

// stopAtLimit answers the calls of the last step without running them and
// stores a note saying the turn stopped.
func (e *Engine) stopAtLimit(res *Result, calls []provider.ToolCall, limit int) error {
	msgs := make([]sessions.Message, 0, len(calls)+1)
	text := fmt.Sprintf("not run: the turn reached its limit of %d steps (agent.max_steps)", limit)
	for _, c := range calls {
		msgs = append(msgs, toolResult(c, text, false))
	}
	msgs = append(msgs, note(sessions.Message{Role: "system", Content: sessions.TextContent(fmt.Sprintf(
		stepLimitNote+"%d steps (agent.max_steps); the calls of its last step were not run. The next message may ask to go on.", limit))}))
	return e.store(res, msgs...)
}

// toolResult is the tool message answering c.
func toolResult(c provider.ToolCall, text string, marked bool) sessions.Message {
	m := sessions.Message{Role: "tool", ToolCallID: c.ID, Content: sessions.TextContent(text)}
	if marked {
		m = note(m)
	}
	return m
}

// ToolCalls decodes m's tool calls; a message without any, or whose
// tool_calls do not decode, has none.
func ToolCalls(m sessions.Message) []provider.ToolCall {
	if m.Role != "assistant" || len(m.ToolCalls) == 0 || m.ToolCalls[0] != '[' {
		return nil
	}
	var calls []provider.ToolCall
	if json.Unmarshal(m.ToolCalls, &calls) != nil {
		return nil
	}
	return calls
}

// Interrupted is a reply cut short (msgs: an assistant message and what
// followed it) with a result saying it was interrupted for each call of
// its last assistant message that has none, as the engine answers such
// calls before its next provider call: a history that can be carried on
// elsewhere (a gateway session's successor) without running a call again.
func Interrupted(msgs []sessions.Message) []sessions.Message {
	out := sessions.CopyMessages(msgs)
	for _, c := range unanswered(msgs) {
		out = append(out, toolResult(c, interruptedResult, true))
	}
	return out
}

// unanswered returns the calls of the last assistant message of msgs that
// no later tool message of msgs answers, in order.
func unanswered(msgs []sessions.Message) []provider.ToolCall {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range msgs[last+1:] {
		if m.Role == "tool" {
			answered[m.ToolCallID] = true
		}
	}
	var out []provider.ToolCall
	for _, c := range ToolCalls(msgs[last]) {
		if !answered[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

// separated is the turn's stream: the text of each step after the first
// that wrote any starts on a line of its own.
type separated struct {
	w       io.Writer
	wrote   bool // some step wrote text
	pending bool // a new step began: the next text needs a newline first
}

func (s *separated) next() { s.pending = s.wrote }

func (s *separated) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.pending {
		s.pending = false
		if _, err := io.WriteString(s.w, "\n"); err != nil {
			return 0, err
		}
	}
	s.wrote = true
	return s.w.Write(p)
}

// WriteBlock passes an anthropic reply's thinking block on to a stream
// that takes blocks (provider.BlockWriter), and drops it for one that
// takes text alone.
func (s *separated) WriteBlock(block json.RawMessage) error {
	if bw, ok := s.w.(provider.BlockWriter); ok {
		return bw.WriteBlock(block)
	}
	return nil
}

// ResumeNote is the system message that tells a model why a session it
// continues was interrupted, from the session's resume_reason. It is kept
// in the transcript, so the history says what happened.
func ResumeNote(reason string) string {
	var why string
	switch reason {
	case "restart_interrupted":
		why = "the previous turn was interrupted by a restart"
	case "restart_timeout", "shutdown_timeout":
		why = "the previous turn did not finish before a restart timed out"
	case "":
		why = "the previous turn was interrupted"
	default:
		why = "the previous turn was interrupted (" + reason + ")"
	}
	return "Note: " + why + ". Continue from the history above; the last turn may be incomplete."
}
