package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/hermes/hermes/fsstore/sessions"
)

// routeRequest finds or makes the session of a request, by the same rules
// on both endpoints, in this order: the turn of an Idempotency-Key seen
// before; the session X-Hermes-Session-Id names; then, on chat
// completions, the history (routeHistory); on the Responses API, the
// conversation, previous_response_id, the thread a client names in its
// own headers (threadOf), then the history. It returns the route with
// what the turn stores (rt.add), the key's record written, and its locks
// held: release them, also after an error, once the reply is sent.
func (s *Server) routeRequest(ctx context.Context, r *http.Request, req request) (rt route, err error) {
	k, err := s.lookupKey(ctx, r, req.wire)
	rt.key = k
	rt.hold(k.unlock)
	if err != nil {
		return rt, err
	}
	sid := r.Header.Get(SessionHeader)
	if k.found {
		a, reply, count, unlock, err := s.keyedTurn(ctx, k)
		if err != nil {
			unlock()
			return rt, err
		}
		if reply != nil {
			rt.hold(unlock)
			rt.a, rt.replay, rt.replayCount = a, reply, count
			return rt, nil
		}
		// The key's turn got no reply (it failed, or a crash came before
		// its input was even stored): it runs again in its session, as a
		// request naming that session would, which stores nothing twice.
		unlock()
		sid = k.rec.SessionID
	}
	if req.chat {
		err = s.routeChat(ctx, r, req, sid, &rt)
	} else {
		err = s.routeResponses(ctx, r, req, sid, &rt)
	}
	if err != nil || rt.replay != nil {
		return rt, err
	}
	return rt, s.record(&rt.key, rt.a.sess.ID, len(rt.stored)+len(rt.add))
}

// join makes got, a route found by a helper with locks of its own, the
// request's route, which holds the key's lock: rt's locks are released
// after got's.
func (rt *route) join(got route) {
	got.unlocks = append(rt.unlocks, got.unlocks...)
	got.key = rt.key
	*rt = got
}

// routeChat is routeRequest for chat completions, whose client sends its
// whole conversation: with a session named, the messages beyond its
// stored history are added, a contradicting history goes to a new session
// whose parent is the named one, and a repeat of a turn whose reply was
// never delivered gets that reply; with none, the conversation is found
// by its history (routeHistory).
func (s *Server) routeChat(ctx context.Context, r *http.Request, req request, sid string, rt *route) error {
	msgs := req.msgs
	if sid == "" {
		got, add, err := s.routeHistory(ctx, msgs, retried(r))
		rt.join(got)
		rt.add = add
		return err
	}
	sess, unlock, err := s.namedSession(ctx, sid)
	rt.hold(unlock)
	if err != nil {
		return err
	}
	stored, err := s.transcript(sess.ID)
	if err != nil {
		return err
	}
	_, end, reply, undelivered, err := s.lastTurn(sess.ID, stored)
	if err != nil {
		return err
	}
	if n, ok := reconcile(stored[:end], msgs); undelivered && ok && n == len(msgs) {
		// The client repeats the turn whose reply it never got: it is
		// answered from the session, whatever its state (a session
		// suspended since must not run the turn again in a successor).
		rt.a, rt.replay, rt.replayCount = admission{sess: sess}, reply, int64(len(stored))
		return nil
	}
	a, err := s.admit(sess)
	if err != nil {
		return err
	}
	rt.add = msgs
	if a.fresh {
		stored = nil
	} else if n, ok := reconcile(stored, msgs); ok {
		rt.add = msgs[n:]
	} else {
		// The guard: the stored history is never rewritten; the client's
		// version of it becomes a new session.
		fork, err := s.newSession(a.sess.ID, a.sess.SessionKey)
		if err != nil {
			return err
		}
		a, stored = admission{sess: fork, fresh: true}, nil
	}
	rt.a, rt.stored = a, stored
	return nil
}

// routeResponses is routeRequest for the Responses API: the session the
// header names, the conversation's (made on its first request), that of
// previous_response_id, the one of the client's thread, the one the
// input's history is found in, or a new one. The turn adds the
// instructions, when they differ from the last stored, then the input,
// unless it retries the turn the route continues (its input is stored).
func (s *Server) routeResponses(ctx context.Context, r *http.Request, req request, sid string, rt *route) error {
	input := req.msgs
	var got route
	var err error
	var byHistory []sessions.Message
	viaHistory := false
	switch {
	case sid != "":
		got, input, err = s.routeSession(ctx, sid, input)
	case req.conv != "":
		got, err = s.routeConversation(ctx, req.conv, input)
	case req.prev != "":
		got, err = s.routePrevious(ctx, req.prev, input)
	case threadOf(r) != "":
		var add []sessions.Message
		if got, add, viaHistory, err = s.routeThread(ctx, threadOf(r), input, retried(r)); viaHistory {
			byHistory = add
		} else {
			input = add
		}
	default:
		// No conversation named: it is found by its history, for a client
		// that re-sends it whole (Codex CLI, store:false).
		got, byHistory, err = s.routeHistory(ctx, input, retried(r))
		viaHistory = true
	}
	rt.join(got)
	rt.byHistory = viaHistory
	if err != nil || rt.replay != nil {
		return err
	}
	if req.instructions != "" && !sameInstructions(rt.stored, req.instructions) {
		rt.add = append(rt.add, sessions.Message{
			Role:    "system",
			Content: sessions.TextContent(req.instructions),
			Extra:   map[string]json.RawMessage{instructionsMarker: jsonTrue},
		})
	}
	switch {
	case viaHistory:
		rt.add = append(rt.add, byHistory...)
	case !isRetry(rt.pending, input):
		rt.add = append(rt.add, input...)
	}
	return nil
}
