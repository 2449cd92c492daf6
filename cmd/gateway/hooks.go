package gateway

import (
	"context"

	"github.com/hermes/hermes/fsstore/sessions"
)

// hookInput runs the hooks of a turn's start (cmd/hooks, gateway.hooks)
// when add brings the client's new messages: a session made for this
// request runs its SessionStart hooks (source new; resume for the
// successor of an interrupted one), then the UserPromptSubmit hooks of
// add's last user message run. Their context is stored as notes, before
// the client's messages that follow its tool results, which a client's
// history does not hold and the comparison skips. A refused prompt is
// the error (a 400), and nothing of add is stored; a session made for it
// stays empty.
func (s *Server) hookInput(ctx context.Context, a admission, add []sessions.Message) ([]sessions.Message, error) {
	if s.opts.Hooks == nil || len(add) == 0 {
		return add, nil
	}
	sess := s.opts.inCwd(a.sess)
	var head []sessions.Message
	if a.fresh {
		source := "new"
		if sess.ParentSessionID != "" {
			source = "resume"
		}
		head = s.engine.SessionStart(ctx, sess, source)
	}
	add, err := s.engine.SubmitPrompt(ctx, sess, add)
	if err != nil || head == nil {
		return add, err
	}
	lead := 0
	for lead < len(add) && add[lead].Role == "tool" {
		lead++
	}
	return append(append(append(make([]sessions.Message, 0, len(add)+len(head)), add[:lead]...), head...), add[lead:]...), nil
}

// inCwd is sess as its hooks see it: in the directory its tools work in
// (gateway.cwd, where the session records none).
func (o *Options) inCwd(sess sessions.Session) sessions.Session {
	if sess.Cwd == "" {
		sess.Cwd = o.ToolEnv.Cwd
	}
	return sess
}
