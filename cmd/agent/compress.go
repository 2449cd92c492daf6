package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// DefaultKeep is how many of its last messages a compression keeps as
// they are, by default.
const DefaultKeep = 6

// The summary request: SummaryInstruction as a system message, the
// messages to summarise as they are stored (with the provider's repairs,
// see history), then summaryPrompt as the last user message, so that a
// model answers with a summary rather than going on with the conversation.
// The echo provider answers it as it answers everything: "echo: N messages
// received; you said: " and summaryPrompt, N counting the instruction.
const (
	SummaryInstruction = `You are compressing the conversation that follows, so that it can go on in a new session with less context. Write a summary of it that lets an assistant continue the work without the original messages: the user's goals and standing instructions, decisions made, facts learned (names, paths, numbers, commands and their outcomes), what was done with tools, and what remains open. Reply with the summary only, in plain prose or short lists.`
	summaryPrompt      = "Summarise the conversation above, as the first system message asks."
)

// Compression is what Compress made.
type Compression struct {
	Parent string // the session compressed, now ended (compression)
	Child  sessions.Session
	// Summarised are the parent's messages the summary stands for (1 to
	// Summarised); Kept the messages after them, copied after it.
	Summarised int64
	Kept       int
}

// Compress asks the provider to summarise session id's history but for
// its last turns, and continues it in a new session that starts with the
// summary as a system message followed by those turns as they are: at
// least keep messages, cut where a turn starts (a user message), so that a
// tool call is never parted from its result. The parent ends with reason
// compression, naming the child (Store.Compress). A session whose history
// holds nothing before its kept turns is ErrInvalid; one that grew while
// its summary was made is ErrRefused, and nothing is written.
func (e *Engine) Compress(ctx context.Context, id string, keep int) (Compression, error) {
	return e.CompressBy(ctx, id, keep, TriggerManual)
}

// Triggers of a compression, as PreCompact and PostCompact hooks read
// them: asked for (/compress, sessions compress), or agent.compress_at's.
const (
	TriggerManual = "manual"
	TriggerAuto   = "auto"
)

// CompressBy is Compress for trigger. With Engine.Hooks, PreCompact
// hooks run before the summary is asked for (they cannot stop it: what
// they say is told), then, once the child is stored, PostCompact hooks
// with the summary, the parent's SessionEnd hooks (reason compression)
// and the child's SessionStart hooks (source compress), whose context is
// appended to the child.
func (e *Engine) CompressBy(ctx context.Context, id string, keep int, trigger string) (Compression, error) {
	st := e.Sessions
	if keep < 1 {
		keep = DefaultKeep
	}
	sess, err := st.Get(id)
	if err != nil {
		return Compression{}, err
	}
	switch {
	case sess.CompressedInto != "":
		return Compression{}, fsstore.Refusedf("session %s was compressed into %s already (compress that one)", id, sess.CompressedInto)
	case sess.Source == "gateway":
		return Compression{}, fsstore.Refusedf("session %s is a gateway conversation, whose client sends its history itself: compress it in the client", id)
	}
	n := 0
	tail, err := st.Tail(id, func(m sessions.Message) bool {
		n++
		return n >= keep && m.Role == "user"
	})
	if err != nil {
		return Compression{}, err
	}
	if len(tail) == 0 || tail[0].Seq <= 1 || tail[0].Role != "user" {
		return Compression{}, fsstore.Invalidf("session %s has %d messages, all in its last turns that a compression keeps (%d or more messages, whole turns): nothing to compress", id, len(tail), keep)
	}
	cut := tail[0].Seq - 1
	count := tail[len(tail)-1].Seq
	if e.Hooks.Has(hooks.PreCompact) {
		e.sessionHooks(ctx, sess, hooks.Input{HookEventName: hooks.PreCompact, Trigger: trigger, CustomInstructions: new("")})
	}
	reply, err := e.Provider.Complete(ctx, provider.Request{SessionID: id, History: summaryRequest{history{store: st, id: id, upTo: cut}}})
	if err != nil {
		return Compression{}, err
	}
	summary, from := "", sessions.Message{}
	for _, m := range reply.Messages {
		if m.Role == "assistant" && m.Text() != "" {
			summary, from = m.Text(), m
		}
	}
	if summary == "" {
		return Compression{}, &provider.Error{Provider: e.Provider.Name(), Message: e.Provider.Name() + ": the summary is empty"}
	}
	// The project instructions, the memory snapshot and the skills list a
	// first turn stored stay the child's first messages, as they are,
	// rather than a part of the summary: no later turn stores them again.
	var msgs []sessions.Message
	instructions, err := e.instructionsOf(id)
	if err != nil {
		return Compression{}, err
	}
	msgs = append(msgs, instructions...)
	summaryMsg := sessions.Message{
		Role:    "system",
		Content: sessions.TextContent(fmt.Sprintf("Summary of the conversation so far (session %s, messages 1 to %d), which this session continues:\n\n%s", id, cut, summary)),
	}
	// The summary's call is stored with the summary, marked as a
	// compression's, so that it is counted and never taken for a turn.
	if c, ok, _ := usage.Of(from); ok {
		c.Purpose = usage.PurposeCompress
		usage.Put(&summaryMsg, c)
	}
	msgs = append(msgs, summaryMsg)
	msgs = append(msgs, sessions.CopyMessages(tail)...)
	child, err := st.Compress(id, count, msgs)
	if err != nil {
		return Compression{}, err
	}
	e.compressed(ctx, sess, child, trigger, summary)
	return Compression{Parent: id, Child: child, Summarised: cut, Kept: len(tail)}, nil
}

// instructionsOf returns the project instructions (Instructions.Note),
// the memory snapshot (MemoryNote) and the skills list (Skills.Note)
// session id starts with, if it does, reading its first messages only.
func (e *Engine) instructionsOf(id string) ([]sessions.Message, error) {
	t, err := e.Sessions.OpenTranscript(id)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	var out []sessions.Message
	errFirst := errors.New("first messages read")
	err = t.Each(func(m sessions.Message) error {
		if len(out) < 3 && (IsInstructions(m) || IsMemory(m) || IsSkills(m)) {
			out = append(out, sessions.CopyMessages([]sessions.Message{m})...)
			return nil
		}
		return errFirst
	})
	if err != nil && !errors.Is(err, errFirst) {
		return nil, err
	}
	return out, nil
}

// summaryRequest is the history a summary is asked with.
type summaryRequest struct{ h history }

func (r summaryRequest) Each(fn func(sessions.Message) error) error {
	if err := fn(sessions.Message{Role: "system", Content: sessions.TextContent(SummaryInstruction)}); err != nil {
		return err
	}
	if err := r.h.Each(fn); err != nil {
		return err
	}
	return fn(sessions.Message{Role: "user", Content: sessions.TextContent(summaryPrompt)})
}
