package cmd

import (
	"context"

	"github.com/hermes/hermes/fsstore/sessions"
)

// hookInput runs the hooks of a turn's start in sess (cmd/hooks): its
// SessionStart hooks, the first time this chat turns to sess (source:
// new, resume or fork), then the UserPromptSubmit hooks of input's
// prompt; and returns input with the context they add. A refused prompt
// is the error, and nothing is to be stored. A turn with no input (/retry)
// runs the SessionStart hooks only, and stores nothing of theirs.
func (ch *chatter) hookInput(ctx context.Context, sess sessions.Session, source string, input []sessions.Message) ([]sessions.Message, error) {
	var head []sessions.Message
	if ch.started != sess.ID {
		ch.started = sess.ID
		head = ch.engine.SessionStart(ctx, sess, source)
	}
	if len(input) == 0 {
		return nil, nil
	}
	input, err := ch.engine.SubmitPrompt(ctx, sess, input)
	if err != nil {
		return nil, err
	}
	return append(head, input...), nil
}

// resumeSource is the SessionStart source of a session this chat did not
// make in its first turn: fork for its own fork, new for one still empty
// (a cron prompt job's, made before its chat runs), else resume.
func (ch *chatter) resumeSource(sess sessions.Session) string {
	switch {
	case sess.ID == ch.forked:
		return "fork"
	case sess.MessageCount == 0:
		return "new"
	}
	return "resume"
}

// end ends session id for reason, and runs its SessionEnd hooks.
func (ch *chatter) end(id, reason string) error {
	sess, err := ch.store.End(id, reason)
	if err != nil {
		return err
	}
	ch.engine.SessionEnd(context.Background(), sess, reason)
	return nil
}
