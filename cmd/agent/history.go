package agent

import (
	"errors"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/sessions"
)

// history is a session's transcript as the provider reads it: streamed
// from the file, one pass a provider call, and made valid for the API on
// the way. A call that no tool message answers before the next message
// gets a result saying it was interrupted, and a tool message that answers
// no pending call is left out. The engine stores such results for a
// transcript that ends with calls; this covers the rest (a message
// appended after unanswered calls by another writer, an import), so that
// no request is one the API would refuse. A note hermes stored amid a
// turn's calls and their results is passed on after those results.
type history struct {
	store *sessions.Store
	id    string
	// upTo, when set, ends the history at the message with that seq (a
	// compression's summary request).
	upTo int64
	// known, when set, is the transcript as the turn knows it to be (see
	// Turn.Stored), walked in place of the file.
	known [][]sessions.Message
}

// each calls fn with each stored message: those of known, else the
// file's.
func (h history) each(fn func(sessions.Message) error) error {
	if h.known != nil {
		for _, part := range h.known {
			for _, m := range part {
				if err := fn(m); err != nil {
					return err
				}
			}
		}
		return nil
	}
	t, err := h.store.OpenTranscript(h.id)
	if err != nil {
		return err
	}
	defer t.Close()
	return t.Each(fn)
}

// errUpTo ends a history's walk at upTo.
var errUpTo = errors.New("history: past upTo")

func (h history) Each(fn func(sessions.Message) error) error {
	var pending []provider.ToolCall
	// held are notes hermes stored amid pending calls' results (an
	// abandoned call's late change, recorded while another turn runs its
	// calls): they follow those results.
	var held []sessions.Message
	flush := func() error {
		for _, c := range pending {
			if err := fn(toolResult(c, interruptedResult, true)); err != nil {
				return err
			}
		}
		pending = nil
		for _, m := range held {
			if err := fn(m); err != nil {
				return err
			}
		}
		held = nil
		return nil
	}
	err := h.each(func(m sessions.Message) error {
		if h.upTo > 0 && m.Seq > h.upTo {
			return errUpTo
		}
		if m.Role == "tool" {
			for i, c := range pending {
				if c.ID == m.ToolCallID {
					pending = append(pending[:i], pending[i+1:]...)
					if err := fn(m); err != nil || len(pending) > 0 {
						return err
					}
					return flush()
				}
			}
			return nil
		}
		if len(pending) > 0 && IsNote(m) {
			held = append(held, m)
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
		pending = ToolCalls(m)
		return nil
	})
	if err != nil && !errors.Is(err, errUpTo) {
		return err
	}
	return flush()
}
