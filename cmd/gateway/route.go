package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"net/http"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// router finds or makes the session of a request (routeRequest), with
// what it needs of the server: its options (the stores), the engine (where
// a transcript's last turn was cut short), its clock, and the locks that
// make requests on one session, one idempotency key or one conversation
// take turns. The server keeps the HTTP surface, the turn runner and the
// lifecycle.
type router struct {
	opts     *Options
	engine   *agent.Engine
	now      func() time.Time
	sessions *keyedMutex // the server's: one turn at a time per session
	keys     keyedMutex  // one request at a time per idempotency key
	convs    keyedMutex  // one request at a time per conversation
	// deliveries are the replies being sent (see whenDelivered).
	deliveries deliveries
}

// routeRequest finds or makes the session of a request, by the same rules
// on both endpoints, in this order: the turn of an Idempotency-Key seen
// before; the session X-Hermes-Session-Id names; then, on chat
// completions, the history (routeHistory); on the Responses API, the
// conversation, previous_response_id, the thread a client names in its
// own headers (threadOf), then the history. It returns the route with
// what the turn stores (rt.add), the key's record written, and its locks
// held: release them, also after an error, once the reply is sent.
func (ro *router) routeRequest(ctx context.Context, r *http.Request, req request) (rt route, err error) {
	k, err := ro.lookupKey(ctx, r, req.wire)
	rt.key = k
	rt.hold(k.unlock)
	if err != nil {
		return rt, err
	}
	sid := r.Header.Get(SessionHeader)
	if k.found {
		a, reply, count, unlock, err := ro.keyedTurn(ctx, k)
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
		err = ro.routeChat(ctx, r, req, sid, &rt)
	} else {
		err = ro.routeResponses(ctx, r, req, sid, &rt)
	}
	if err != nil || rt.replay != nil {
		return rt, err
	}
	return rt, rt.key.recordStart(ro.opts.Store, rt.a.sess.ID, len(rt.stored)+len(rt.add))
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
func (ro *router) routeChat(ctx context.Context, r *http.Request, req request, sid string, rt *route) error {
	msgs := req.msgs
	if sid == "" {
		got, add, err := ro.routeHistory(ctx, req.reported, msgs, attemptOf(r, req.wire))
		if err == nil && got.successor != "" {
			return ro.routeChat(ctx, r, req, got.successor, rt)
		}
		rt.join(got)
		rt.add = add
		return err
	}
	sess, unlock, err := ro.namedSession(ctx, sid)
	rt.hold(unlock)
	if err != nil {
		return err
	}
	stored, err := ro.routeTranscript(rt, sess.ID)
	if err != nil {
		return err
	}
	if _, end, reply, ok := lastTurn(stored); ok {
		if n, same := reconcile(stored[:end], msgs); same && n == len(msgs) {
			undelivered, err := ro.undelivered(ctx, sess.ID, stored)
			if err != nil {
				return err
			}
			if undelivered {
				// The client repeats the turn whose reply it never got:
				// it is answered from the session, whatever its state (a
				// session suspended since must not run the turn again in
				// a successor).
				rt.a, rt.replay, rt.replayCount = admission{sess: sess}, reply, int64(len(stored))
				return nil
			}
		}
	}
	a, err := ro.admit(ctx, rt, sess, req.reported)
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
		fork, err := ro.newSession(ctx, rt, a.sess.ID, a.sess.SessionKey, req.reported)
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
func (ro *router) routeResponses(ctx context.Context, r *http.Request, req request, sid string, rt *route) error {
	input := req.msgs
	var got route
	var err error
	var byHistory []sessions.Message
	viaHistory := false
	switch {
	case sid != "":
		got, input, err = ro.routeSession(ctx, req.reported, sid, input)
	case req.conv != "":
		got, err = ro.routeConversation(ctx, req.reported, req.conv, input)
	case req.prev != "":
		got, err = ro.routePrevious(ctx, req.reported, req.prev, input)
	case threadOf(r) != "":
		var add []sessions.Message
		if got, add, viaHistory, err = ro.routeThread(ctx, req.reported, threadOf(r), input, attemptOf(r, req.wire)); viaHistory {
			byHistory = add
		} else {
			input = add
		}
	default:
		// No conversation named: it is found by its history, for a client
		// that re-sends it whole (Codex CLI, store:false).
		got, byHistory, err = ro.routeHistory(ctx, req.reported, input, attemptOf(r, req.wire))
		viaHistory = true
		if err == nil && got.successor != "" {
			got, input, err = ro.routeSession(ctx, req.reported, got.successor, input)
			viaHistory = false
		}
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

// route is where a request's turn runs, with the locks held for
// it: release them (also after an error) when the turn is done.
type route struct {
	a       admission
	stored  []sessions.Message // the transcript the turn continues
	pending []sessions.Message // its messages after the point the request continues from
	// replay is the stored reply that answers the request (a retry of a
	// turn whose reply the client never got): nothing runs. replayCount
	// is the transcript's length after it.
	replay      []sessions.Message
	replayCount int64
	// history is the digest state of the request's history, when the route
	// was found by it (routeHistory): indexHistory carries it on.
	history hash.Hash
	// byHistory: the route was found by the request's history, whose end
	// is indexed after the turn.
	byHistory bool
	// add is what the turn stores before it calls the model; key the
	// request's idempotency key.
	add     []sessions.Message
	key     keyed
	unlocks []func()
	// successor: the session the request's history names was replaced
	// by this one (routeHistory); the request goes there as one naming it.
	successor string
	// read is the last transcript the route read (routeTranscript).
	read transcriptRead
}

// run runs the turn of a route: the stored reply it found, or the
// engine's turn on what it adds, after which the key's record and the
// history index are brought up to date.
func (s *Server) run(ctx context.Context, rt *route, req request, stream io.Writer, started func()) (turnOutcome, error) {
	var out turnOutcome
	if rt.replay != nil {
		// The history is indexed again: a kill between the reply's store
		// and its entry leaves the entry out, and the client's next turn
		// would find no session.
		out = replay(rt.replay, rt.replayCount, stream, started)
	} else {
		var err error
		if out, err = s.runTurn(ctx, rt.a, rt.add, rt.read, req, stream, started); err != nil {
			return out, err
		}
		if err := rt.key.recordEnd(s.opts.Store, out); err != nil {
			s.opts.Logf("session %s: recording the end of a keyed turn: %v", rt.a.sess.ID, err)
		}
	}
	if req.chat || rt.byHistory {
		s.router.indexHistory(scopeOf(ctx), req.msgs, rt.history, out, rt.a.sess.ID)
	}
	return out, nil
}

// findRepeat sets rt.replay when input repeats the last turn of the
// session, whose reply was stored but never delivered: the client's retry
// of a turn it got no answer to. Once the reply was delivered, the same
// input is a new turn (a person who says the same thing twice). With at
// >= 0 the last turn must begin there (after the response a request
// continues from).
func (ro *router) findRepeat(ctx context.Context, rt *route, input []sessions.Message, at int) error {
	start, end, reply, ok := lastTurn(rt.stored)
	if !ok || (at >= 0 && start != at) || !isRetry(rt.stored[start:end], input) {
		return nil
	}
	if undelivered, err := ro.undelivered(ctx, rt.a.sess.ID, rt.stored); err != nil || !undelivered {
		return err
	}
	rt.replay, rt.replayCount = reply, int64(len(rt.stored))
	return nil
}

func (rt *route) hold(unlock func()) { rt.unlocks = append(rt.unlocks, unlock) }

func (rt *route) release() {
	for i := len(rt.unlocks) - 1; i >= 0; i-- {
		rt.unlocks[i]()
	}
	rt.unlocks = nil
}

// routeConversation finds (or makes) the session of conversation conv,
// under the conversation's locks (in the server, then on disk) and the
// session's. The mapping is written before the turn when the session
// changes, so that a crash during the turn still finds it: synced, but
// for the conversation's first, a cache of that session's document.
func (ro *router) routeConversation(ctx context.Context, model, conv string, input []sessions.Message) (route, error) {
	var rt route
	conv = scopedName(ctx, conv) // each API key's conversations are its own
	unlock, err := ro.convs.lock(ctx, conv)
	if err != nil {
		return rt, err
	}
	rt.hold(unlock)
	unlockFile, err := ro.opts.Store.LockConversation(conv)
	if err != nil {
		return rt, err
	}
	rt.hold(unlockFile)
	c, err := ro.opts.Store.GetConversation(conv)
	var sess sessions.Session
	switch {
	case errors.Is(err, fsstore.ErrNotFound):
		c = gatewaystate.Conversation{Conversation: conv}
	case err != nil:
		return rt, err
	default:
		unlockSess, err := ro.sessions.lock(ctx, c.SessionID)
		if err != nil {
			return rt, err
		}
		rt.hold(unlockSess)
		if sess, err = ro.getSession(ctx, c.SessionID); err != nil && !errors.Is(err, fsstore.ErrNotFound) {
			return rt, err
		}
	}
	if sess.ID != "" {
		// A retry of the session's last turn is answered from it, whatever
		// its state: a session suspended or expired since must not run the
		// turn again in a successor.
		if rt.stored, err = ro.routeTranscript(&rt, sess.ID); err != nil {
			return rt, err
		}
		rt.a = admission{sess: sess}
		if err := ro.findRepeat(ctx, &rt, input, -1); err != nil || rt.replay != nil {
			return rt, err
		}
	}
	if sess.ID == "" {
		// A new conversation, or one whose session a person deleted.
		if sess, err = ro.newSession(ctx, &rt, c.SessionID, conversationKey+conv, model); err != nil {
			return rt, err
		}
		rt.a = admission{sess: sess, fresh: true}
	} else if rt.a, err = ro.admit(ctx, &rt, sess, model); err != nil {
		return rt, err
	}
	switch {
	case c.SessionID == "":
		// The conversation's first session: its document names the
		// conversation, and rebuilds the mapping (LevelConversations).
		c.SessionID = rt.a.sess.ID
		if err := ro.opts.Store.CacheConversation(c); err != nil {
			return rt, err
		}
	case rt.a.sess.ID != c.SessionID:
		c.SessionID = rt.a.sess.ID
		if err := ro.opts.Store.PutConversation(c); err != nil {
			return rt, err
		}
	}
	switch {
	case rt.a.fresh:
		rt.stored = nil
	case rt.a.sess.ID != sess.ID:
		if rt.stored, err = ro.routeTranscript(&rt, rt.a.sess.ID); err != nil {
			return rt, err
		}
	}
	rt.pending = rt.stored[lastReplyEnd(rt.stored):]
	return rt, nil
}

// routeSession continues the session sid that X-Hermes-Session-Id names
// (and its successors, see follow), under their locks, and returns the
// input to append. An input that begins with the session's whole history
// (a client that re-sends it each time, as Codex does with store:false)
// has that history left out. An input of more than one message that
// begins as the history does and then departs from it (a regenerate, an
// edit) goes to a new session whose parent is sid, whole, as on chat
// completions. Any other input is new items, appended as the Responses
// API appends them.
func (ro *router) routeSession(ctx context.Context, model, sid string, input []sessions.Message) (route, []sessions.Message, error) {
	var rt route
	sess, unlock, err := ro.namedSession(ctx, sid)
	rt.hold(unlock)
	if err != nil {
		return rt, input, err
	}
	if rt.stored, err = ro.routeTranscript(&rt, sess.ID); err != nil {
		return rt, input, err
	}
	// A retry of the session's last turn whose reply was never delivered
	// is answered from it, whatever its state (see routeConversation):
	// its input alone, or the whole history up to it.
	rt.a = admission{sess: sess}
	if _, end, reply, ok := lastTurn(rt.stored); ok {
		if n, same := reconcile(withoutInstructions(rt.stored[:end]), input); same && n == len(input) {
			undelivered, err := ro.undelivered(ctx, sess.ID, rt.stored)
			if err != nil {
				return rt, input, err
			}
			if undelivered {
				rt.replay, rt.replayCount = reply, int64(len(rt.stored))
				return rt, input, nil
			}
		}
	}
	if err := ro.findRepeat(ctx, &rt, input, -1); err != nil || rt.replay != nil {
		return rt, input, err
	}
	if rt.a, err = ro.admit(ctx, &rt, sess, model); err != nil || rt.a.fresh {
		rt.stored = nil
		return rt, input, err
	}
	kept := withoutInstructions(rt.stored)
	if n, ok := reconcile(kept, input); ok && n > 0 {
		input = input[n:]
	} else if len(input) > 1 && len(kept) > 0 && sameMessage(kept[0], input[0]) {
		fork, err := ro.newSession(ctx, &rt, rt.a.sess.ID, rt.a.sess.SessionKey, model)
		if err != nil {
			return rt, input, err
		}
		rt.a, rt.stored = admission{sess: fork, fresh: true}, nil
	}
	rt.pending = rt.stored[lastReplyEnd(rt.stored):]
	return rt, input, nil
}

// withoutInstructions is msgs without the instructions the gateway stored,
// which a client's history does not hold.
func withoutInstructions(msgs []sessions.Message) []sessions.Message {
	var out []sessions.Message
	for _, m := range msgs {
		if !marked(m, instructionsMarker) {
			out = append(out, m)
		}
	}
	return out
}

// routePrevious continues the session of response prev, under the
// session's lock. A response that is not its session's latest answered
// turn branches: a new session (parent the old) that starts with the
// history up to that response.
func (ro *router) routePrevious(ctx context.Context, model, prev string, input []sessions.Message) (route, error) {
	var rt route
	pr, err := ro.response(prev)
	if errors.Is(err, fsstore.ErrNotFound) || errors.Is(err, fsstore.ErrInvalid) {
		return rt, notFound("previous_response_id", "previous_response_not_found", "previous response with id '%s' not found", prev)
	}
	if err != nil {
		return rt, err
	}
	unlockSess, err := ro.sessions.lock(ctx, pr.SessionID)
	if err != nil {
		return rt, err
	}
	rt.hold(unlockSess)
	sess, err := ro.getSession(ctx, pr.SessionID)
	if errors.Is(err, fsstore.ErrNotFound) {
		return rt, notFound("previous_response_id", "previous_response_not_found", "the session %s of previous response '%s' no longer exists", pr.SessionID, prev)
	}
	if err != nil {
		return rt, err
	}
	if rt.stored, err = ro.routeTranscript(&rt, sess.ID); err != nil {
		return rt, err
	}
	// A retry of the turn after prev is answered from the session,
	// whatever its state (see routeConversation).
	rt.a = admission{sess: sess}
	k := min(int(pr.MessageCount), len(rt.stored))
	if err := ro.findRepeat(ctx, &rt, input, k); err != nil || rt.replay != nil {
		return rt, err
	}
	if replaced(sess) && lastReplyEnd(rt.stored) <= k {
		if ok, err := ro.retryInSuccessor(ctx, &rt, sess, model, input); err != nil || ok {
			return rt, err
		}
	}
	if rt.a, err = ro.admit(ctx, &rt, sess, model); err != nil || rt.a.fresh {
		rt.stored = nil
		return rt, err
	}
	if lastReplyEnd(rt.stored) > k {
		fork, err := ro.newSession(ctx, &rt, rt.a.sess.ID, rt.a.sess.SessionKey, model)
		if err != nil {
			return rt, err
		}
		if k > 0 {
			if _, err := ro.opts.Sessions.Append(fork.ID, sessions.CopyMessages(rt.stored[:k])); err != nil {
				return rt, err
			}
		}
		rt.a = admission{sess: fork}
		rt.stored = rt.stored[:k]
	}
	rt.pending = rt.stored[k:]
	return rt, nil
}

// retryInSuccessor routes a request chained from the latest answered turn
// of sess, which the gateway replaced (suspended, expired), to the
// successor that holds the request's turn: one that an earlier attempt
// of the same request was given, which holds only that turn, with no
// reply (the turn is retried there, its input not stored again) or a
// reply never delivered (the request gets it). Else ok is false, and the
// request gets a successor of its own (admit): a previous response of a
// replaced session branches from it. Without this, each retry of a turn
// killed after its session was suspended would run it in a new session.
func (ro *router) retryInSuccessor(ctx context.Context, rt *route, sess sessions.Session, model string, input []sessions.Message) (bool, error) {
	next, unlock, err := ro.follow(ctx, sess)
	rt.hold(unlock)
	if err != nil || next.ID == sess.ID {
		return false, err
	}
	stored, err := ro.routeTranscript(rt, next.ID)
	if err != nil {
		return false, err
	}
	held := &route{a: admission{sess: next}, stored: stored}
	if err := ro.findRepeat(ctx, held, input, -1); err != nil || held.replay != nil {
		rt.a, rt.stored, rt.replay, rt.replayCount = held.a, stored, held.replay, held.replayCount
		return held.replay != nil, err
	}
	if lastReplyEnd(stored) > 0 || !isRetry(stored, input) {
		return false, nil
	}
	if rt.a, err = ro.admit(ctx, rt, next, model); err != nil || rt.a.fresh {
		rt.stored = nil
		return true, err
	}
	rt.stored, rt.pending = stored, stored
	return true, nil
}

// newSession creates a gateway session for a request to model (the
// model it records), the successor of parent when set, and holds its
// lock in rt from before it exists: a request that finds the session
// before its first turn ends (by its opening, indexed as soon as the
// turn stored it) waits for that turn and its reply's delivery, and
// never runs in it meanwhile.
// Ids are retried on the (unlikely) collision with an existing session,
// since Create of an existing id is a no-op that returns that session.
func (ro *router) newSession(ctx context.Context, rt *route, parent, key, model string) (sessions.Session, error) {
	for range 8 {
		id := fsstore.NewID(ro.now())
		unlock, ok := ro.sessions.tryLock(id)
		if !ok {
			continue
		}
		sess, created, err := ro.opts.Sessions.Create(sessions.Session{
			ID:              id,
			Source:          "gateway",
			Model:           model,
			ParentSessionID: parent,
			SessionKey:      key,
			GatewayKey:      scopeOf(ctx),
		})
		if err != nil || created {
			rt.hold(unlock)
			return sess, err
		}
		unlock()
	}
	return sessions.Session{}, errors.New("could not find a free session id")
}

// admit decides where a request for sess goes: suspended → a new session
// (the old one ends, reason suspended); resume_pending marked within the
// freshness window → the same session, where the turn engine stores a
// resume note first; resume_pending older
// than that → a new session (the old one ends, resume_pending_expired); an
// ended session → reopened, unless the gateway ended it for one of those
// two reasons, which gives a new session again.
func (ro *router) admit(ctx context.Context, rt *route, sess sessions.Session, model string) (admission, error) {
	st := ro.opts.Sessions
	switch sess.State {
	case sessions.StateSuspended:
		ended, err := st.End(sess.ID, endSuspended)
		if err != nil {
			return admission{}, err
		}
		ro.engine.SessionEnd(ctx, ro.opts.inCwd(ended), endSuspended)
		return ro.successor(ctx, rt, sess, model)
	case sessions.StateResumePending:
		if ro.pendingFresh(sess) {
			return admission{sess: sess}, nil
		}
		ended, err := st.End(sess.ID, endPendingExpired)
		if err != nil {
			return admission{}, err
		}
		ro.engine.SessionEnd(ctx, ro.opts.inCwd(ended), endPendingExpired)
		return ro.successor(ctx, rt, sess, model)
	case sessions.StateEnded:
		if sess.EndReason == endSuspended || sess.EndReason == endPendingExpired {
			return ro.successor(ctx, rt, sess, model)
		}
		reopened, err := st.Reopen(sess.ID)
		return admission{sess: reopened}, err
	}
	return admission{sess: sess}, nil
}

// successor makes the session that replaces old, and records it so that a
// client that still names old reaches it (see follow).
func (ro *router) successor(ctx context.Context, rt *route, old sessions.Session, model string) (admission, error) {
	sess, err := ro.newSession(ctx, rt, old.ID, old.SessionKey, model)
	if err != nil {
		return admission{}, err
	}
	return admission{sess: sess, fresh: true}, ro.opts.Store.SetSuccessor(old.ID, sess.ID)
}

// namedSession is the session a request names by id (X-Hermes-Session-Id),
// under its lock, followed to the session that replaced it (follow): an
// id that cannot be one is a 400, an unknown one a 404. unlock releases
// the locks taken, also after an error.
func (ro *router) namedSession(ctx context.Context, sid string) (_ sessions.Session, unlock func(), err error) {
	unlock = func() {}
	if err := fsstore.CheckID("session id", sid); err != nil {
		return sessions.Session{}, unlock, badRequest(SessionHeader, "%s: %v", SessionHeader, err)
	}
	unlockSess, err := ro.sessions.lock(ctx, sid)
	if err != nil {
		return sessions.Session{}, unlock, err
	}
	sess, err := ro.getSession(ctx, sid)
	if errors.Is(err, fsstore.ErrNotFound) {
		err = notFound(SessionHeader, "session_not_found", "session %s not found", sid)
	}
	if err != nil {
		return sessions.Session{}, unlockSess, err
	}
	sess, unlockNext, err := ro.follow(ctx, sess)
	return sess, func() { unlockNext(); unlockSess() }, err
}

// follow takes a session a client named to the session that replaced it,
// and so on to the newest, taking each one's lock (the caller holds the
// first's): a client that kept the id of a session the gateway ended
// (suspended, expired) continues in its successor rather than getting a
// new session at every request. unlock releases the locks it took.
func (ro *router) follow(ctx context.Context, sess sessions.Session) (_ sessions.Session, unlock func(), err error) {
	var unlocks []func()
	unlock = func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}
	for range 64 {
		if !replaced(sess) {
			break
		}
		next, err := ro.opts.Store.SuccessorOf(sess.ID)
		if err != nil || next == "" {
			return sess, unlock, err
		}
		u, err := ro.sessions.lock(ctx, next)
		if err != nil {
			return sess, unlock, err
		}
		unlocks = append(unlocks, u)
		nsess, err := ro.getSession(ctx, next)
		if errors.Is(err, fsstore.ErrNotFound) {
			return sess, unlock, nil // a person deleted it: a new successor
		}
		if err != nil {
			return sess, unlock, err
		}
		sess = nsess
	}
	return sess, unlock, nil
}

// replaced reports whether the gateway ended sess for a successor
// (suspended, or resume_pending expired).
func replaced(sess sessions.Session) bool {
	return sess.State == sessions.StateEnded && (sess.EndReason == endSuspended || sess.EndReason == endPendingExpired)
}

// pendingFresh reports whether a resume_pending session was marked within
// the freshness window. A session marked before resume_pending_at existed
// counts from its updated_at.
func (ro *router) pendingFresh(sess sessions.Session) bool {
	at := sess.ResumePendingAt
	if at == "" {
		at = sess.UpdatedAt
	}
	t, err := at.Instant()
	if err != nil {
		return false
	}
	return ro.now().Sub(t) <= ro.opts.ResumeFreshness
}

// transcript is the transcript of id as a request is routed on it: without
// the reply its last turn was cut short in (agent.Engine.CutAt: the gateway
// was killed while one of its tools ran, the client left during a call),
// which no client received. So a retry of that turn finds it a turn that
// got no reply, and runs it on without storing its input again; the
// engine answers the cut calls as interrupted before it calls the model.
func (ro *router) transcript(id string) ([]sessions.Message, error) {
	msgs, err := ro.opts.Sessions.Messages(id)
	if err != nil {
		return nil, err
	}
	return msgs[:ro.engine.CutAt(msgs)], nil
}

// routeTranscript is transcript for a route: the whole read, and where it
// ended, is kept in rt.read, for the turn's provider calls (agent.Turn's
// Stored), so that a turn in that session does not read it again.
func (ro *router) routeTranscript(rt *route, id string) ([]sessions.Message, error) {
	msgs, at, err := ro.opts.Sessions.MessagesAt(id)
	if err != nil {
		return nil, err
	}
	rt.read = transcriptRead{id: id, msgs: msgs, at: at}
	return msgs[:ro.engine.CutAt(msgs)], nil
}

// transcriptRead is a session's transcript as the router read it, whole,
// and where the read ended.
type transcriptRead struct {
	id   string
	msgs []sessions.Message
	at   sessions.Point
}
