package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// conversationDigest is the digest of msgs as a client of the API keeps
// them, so that a client's copy of a conversation and the stored
// transcript it came from have the same digest. What clients drop or never
// see is left out: hermes's notes, the Responses API's stored
// instructions, ids of stored items, timestamps, and the gateway's own
// tool steps inside a turn. So a run of assistant and tool messages (one
// turn's reply, or a reply, the client's tool results and the reply after
// them) counts as one reply: its text as the API returns it (replyText)
// and the tool calls it ends with. A user or system message counts by its
// role and text.
func conversationDigest(msgs []sessions.Message) string {
	h := sha256.New()
	walkConversation(h, msgs, nil)
	return hex.EncodeToString(h.Sum(nil))
}

// walkConversation writes the canonical form of msgs to h (see
// conversationDigest) and, when atEnd is set, calls it after each reply:
// n is the index after the reply's last message, and h then holds the
// digest of msgs[:n].
func walkConversation(h hash.Hash, msgs []sessions.Message, atEnd func(n int)) {
	for i := 0; i < len(msgs); {
		m := msgs[i]
		switch {
		case agent.IsNote(m) || marked(m, instructionsMarker):
			i++
		case isReplyRole(m.Role):
			var run []sessions.Message
			end := i
			for ; i < len(msgs) && (isReplyRole(msgs[i].Role) || agent.IsNote(msgs[i])); i++ {
				if !agent.IsNote(msgs[i]) {
					run = append(run, msgs[i])
					end = i + 1
				}
			}
			atom(h, "assistant", replyText(run))
			for _, c := range pendingToolCalls(run) {
				atom(h, "call", c.ID, c.Function.Name, c.Function.Arguments)
			}
			if atEnd != nil {
				atEnd(end)
			}
		default:
			atom(h, m.Role, m.Text())
			i++
		}
	}
}

// atom adds one element of a conversation to h, each field prefixed by its
// length so that no two conversations write the same bytes.
func atom(h hash.Hash, fields ...string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(fields)))
	h.Write(n[:])
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
}

// lastAssistant is the index of the last assistant message of msgs, or -1.
func lastAssistant(msgs []sessions.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			return i
		}
	}
	return -1
}

// routeHistory finds the session of a request that names none and sends
// its whole conversation, msgs (chat completions' messages, a Responses
// input re-sent whole, as Codex CLI does): the messages up to its last
// assistant message are its history, those after are its turn's input.
//   - The history is a stored session's at the end of one of its turns,
//     and the session has not moved on: the session continues with the
//     input. A restart in between changes nothing: the index is on disk.
//   - The session holds the input after that point and no reply (a retry
//     after a failed turn): it continues, the input is not stored again.
//   - The session answered that input, and the answer was never delivered:
//     the stored reply (see lastTurn).
//   - The session moved on otherwise (a regenerate, an edited message): a
//     new session, parent the old, holding its history up to that point;
//     the old one is never rewritten.
//   - No session has that history: a new session with the whole
//     conversation.
//
// It returns the route and what the turn adds.
func (s *Server) routeHistory(ctx context.Context, msgs []sessions.Message) (route, []sessions.Message, error) {
	var rt route
	last := lastAssistant(msgs)
	if last < 0 {
		digest := conversationDigest(msgs)
		h, ok, err := s.opts.Store.GetHistory(digest)
		if err != nil {
			s.opts.Logf("the history index: %v", err)
		}
		if ok {
			found, add, err := s.retryOpening(ctx, &rt, h, msgs)
			if err != nil || found {
				return rt, add, err
			}
		}
		sess, err := s.newSession("", "")
		rt.a = admission{sess: sess, fresh: true, opening: digest}
		return rt, msgs, err
	}
	prior, input := msgs[:last+1], msgs[last+1:]
	rt.history = sha256.New()
	walkConversation(rt.history, prior, nil)
	digest := hex.EncodeToString(rt.history.Sum(nil))
	h, ok, err := s.opts.Store.GetHistory(digest)
	if err != nil {
		s.opts.Logf("the history index: %v", err)
	}
	if ok {
		found, add, err := s.continueHistory(ctx, &rt, h, digest, input)
		if err != nil || found {
			return rt, add, err
		}
	}
	sess, err := s.newSession("", "")
	rt.a = admission{sess: sess, fresh: true}
	return rt, msgs, err
}

// indexed locks the session a history index entry names (rt holds the
// lock) and returns it with its transcript, which holds the entry's
// history: its first h.MessageCount messages end with the one stored at
// h.LastTS. stored is nil when it does not (the transcript has changed
// since: the transcript wins), and sess is empty too when the session is
// gone.
func (s *Server) indexed(ctx context.Context, rt *route, h gatewaystate.History) (sess sessions.Session, stored []sessions.Message, err error) {
	unlock, err := s.sessions.lock(ctx, h.SessionID)
	if err != nil {
		return sessions.Session{}, nil, err
	}
	rt.hold(unlock)
	sess, err = s.opts.Sessions.Get(h.SessionID)
	if errors.Is(err, fsstore.ErrNotFound) {
		return sessions.Session{}, nil, nil
	}
	if err != nil {
		return sessions.Session{}, nil, err
	}
	if stored, err = s.transcript(sess.ID); err != nil {
		return sessions.Session{}, nil, err
	}
	k := int(h.MessageCount)
	if k < 1 || k > len(stored) || stored[k-1].TS != h.LastTS {
		return sess, nil, nil
	}
	return sess, stored, nil
}

// continueHistory is routeHistory for a history the index names: found is
// false when the entry does not hold (its session is gone, or its
// transcript does not have that history: the transcript wins).
func (s *Server) continueHistory(ctx context.Context, rt *route, h gatewaystate.History, digest string, input []sessions.Message) (found bool, add []sessions.Message, err error) {
	sess, stored, err := s.indexed(ctx, rt, h)
	if err != nil || stored == nil {
		if err == nil && sess.ID != "" {
			s.opts.Logf("the history index names session %s, whose transcript has changed since: not used", sess.ID)
		}
		return false, nil, err
	}
	k := int(h.MessageCount)
	rt.a, rt.stored = admission{sess: sess}, stored
	tail := stored[k:]
	switch {
	case len(tail) == 0 || isRetry(tail, input):
		if rt.a, err = s.admit(sess); err != nil {
			return true, nil, err
		}
		if rt.a.fresh {
			// A successor of a suspended or expired session starts with
			// the client's history, as a new session would.
			if _, err := s.opts.Sessions.Append(rt.a.sess.ID, sessions.CopyMessages(stored[:k])); err != nil {
				return true, nil, err
			}
			rt.stored = stored[:k]
			return true, input, nil
		}
		if len(tail) > 0 {
			return true, nil, nil // the retry's input is stored already
		}
		return true, input, nil
	}
	if err := s.findRepeat(rt, input, k); err != nil || rt.replay != nil {
		return true, nil, err
	}
	fork, err := s.newSession(sess.ID, sess.SessionKey)
	if err != nil {
		return true, nil, err
	}
	if k > 0 {
		if _, err := s.opts.Sessions.Append(fork.ID, sessions.CopyMessages(stored[:k])); err != nil {
			return true, nil, err
		}
	}
	rt.a, rt.stored = admission{sess: fork}, stored[:k]
	return true, input, nil
}

// retryOpening is routeHistory for a conversation with no reply yet, msgs,
// that the index names (indexOpening): found is true when the session is
// where a turn stored msgs and got no reply the client received (the
// client left mid-stream, the gateway was killed), so the request is its
// retry: the turn runs on there, storing nothing again, or its stored
// reply that never reached the client is returned. A session that has
// moved on, or whose reply was delivered, is not found: the same opening
// messages are then a new conversation.
func (s *Server) retryOpening(ctx context.Context, rt *route, h gatewaystate.History, msgs []sessions.Message) (found bool, add []sessions.Message, err error) {
	sess, stored, err := s.indexed(ctx, rt, h)
	if err != nil || stored == nil {
		return false, nil, err
	}
	k := int(h.MessageCount)
	rt.a, rt.stored = admission{sess: sess}, stored
	if len(stored) > k {
		err := s.findRepeat(rt, msgs, 0)
		return rt.replay != nil, nil, err
	}
	if rt.a, err = s.admit(sess); err != nil {
		return true, nil, err
	}
	if rt.a.fresh {
		// A successor of a suspended or expired session starts with the
		// client's messages, as a new session would.
		rt.a.opening, rt.stored = conversationDigest(msgs), nil
		return true, msgs, nil
	}
	return true, nil, nil
}

// indexOpening records, once a turn of a conversation with no reply yet
// has stored its messages, the conversation's digest as the session's (see
// retryOpening). A failure is reported, not returned: the turn goes on,
// and a retry of it would start a new session.
func (s *Server) indexOpening(a admission) {
	if a.opening == "" {
		return
	}
	tail, err := s.opts.Sessions.Tail(a.sess.ID, func(sessions.Message) bool { return true })
	if err == nil && len(tail) > 0 {
		last := tail[len(tail)-1]
		err = s.opts.Store.PutHistory(a.opening, a.sess.ID, last.Seq, last.TS)
	}
	if err != nil {
		s.opts.Logf("session %s: recording its opening in the history index: %v", a.sess.ID, err)
	}
}

// RebuildHistory writes the entries of the history index that the
// gateway's sessions imply, one at the end of each reply, where the index
// lacks them or names a session that does not hold that history (fsck
// --repair, while no gateway runs). It returns how many it wrote.
func RebuildHistory(st *sessions.Store, gs *gatewaystate.Store) (int, error) {
	all, err := st.All()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sess := range all {
		if sess.Source != "gateway" {
			continue
		}
		msgs, err := st.Messages(sess.ID)
		if err != nil {
			return n, err
		}
		h := sha256.New()
		var werr error
		walkConversation(h, msgs, func(end int) {
			if werr != nil {
				return
			}
			digest := hex.EncodeToString(h.Sum(nil))
			if cur, ok, err := gs.GetHistory(digest); err == nil && ok && cur.SessionID != sess.ID && holds(st, cur, digest) {
				return // another session has this history too: it keeps it
			} else if err == nil && ok && cur.SessionID == sess.ID && cur.MessageCount == int64(end) {
				return
			}
			if werr = gs.PutHistory(digest, sess.ID, int64(end), msgs[end-1].TS); werr == nil {
				n++
			}
		})
		if werr != nil {
			return n, werr
		}
	}
	return n, nil
}

// holds reports whether the session an entry names has its history.
func holds(st *sessions.Store, h gatewaystate.History, digest string) bool {
	msgs, err := st.Messages(h.SessionID)
	return err == nil && h.MessageCount >= 1 && int(h.MessageCount) <= len(msgs) &&
		msgs[h.MessageCount-1].TS == h.LastTS && conversationDigest(msgs[:h.MessageCount]) == digest
}

// indexHistory records, after a turn, the conversation its client now
// holds (what it sent and the reply) as the session's: the next request
// that re-sends it continues there. prior, when set, already holds the
// digest state of sent's history (routeHistory's), which is carried on
// when sent's new messages begin a new element of the conversation. A
// failure is reported, not returned: the reply is stored, and the next
// request then starts a new session.
func (s *Server) indexHistory(sent []sessions.Message, prior hash.Hash, out turnOutcome, sid string) {
	if len(out.reply.Messages) == 0 {
		return
	}
	h, rest := prior, sent[lastAssistant(sent)+1:]
	if h == nil || (len(rest) > 0 && isReplyRole(rest[0].Role)) {
		h, rest = sha256.New(), sent
	}
	walkConversation(h, append(append([]sessions.Message(nil), rest...), out.reply.Messages...), nil)
	last := out.reply.Messages[len(out.reply.Messages)-1]
	if err := s.opts.Store.PutHistory(hex.EncodeToString(h.Sum(nil)), sid, out.count, last.TS); err != nil {
		s.opts.Logf("session %s: recording its history in the index: %v", sid, err)
	}
}

// threadHeaders are the headers in which a client names its own thread:
// Codex CLI sends its thread's id in thread-id and session-id (and
// session_id in versions before). A thread is a conversation whose client
// re-sends its whole input: its slug is "thread-" and the id. A request's
// prompt_cache_key is not one: clients share one key across conversations
// to share a cache.
var threadHeaders = []string{"Thread-Id", "Session-Id", "Session_id"}

// threadOf is the slug of the thread r names, or "".
func threadOf(r *http.Request) string {
	for _, name := range threadHeaders {
		if v := r.Header.Get(name); v != "" && fsstore.CheckID("thread id", "thread-"+v) == nil {
			return "thread-" + v
		}
	}
	return ""
}

// routeThread finds the session of a client's thread (see threadOf),
// under the thread's locks: the session its mapping names, continued as
// routeSession continues a named session (the input may be the whole
// history, or what a client made of it, a compacted one); or, for a
// thread not seen before (or whose session a person deleted), the
// session its history is found in, or a new one (routeHistory). The
// mapping is written before the turn when the session changes. It
// returns the route, what the turn adds, and whether the history found
// it (then the turn's end is indexed).
func (s *Server) routeThread(ctx context.Context, slug string, input []sessions.Message) (route, []sessions.Message, bool, error) {
	var held route
	unlock, err := s.convs.lock(ctx, slug)
	if err != nil {
		return held, nil, false, err
	}
	held.hold(unlock)
	unlockFile, err := s.opts.Store.LockConversation(slug)
	if err != nil {
		return held, nil, false, err
	}
	held.hold(unlockFile)
	c, err := s.opts.Store.GetConversation(slug)
	switch {
	case errors.Is(err, fsstore.ErrNotFound):
		c = gatewaystate.Conversation{Conversation: slug}
	case err != nil:
		return held, nil, false, err
	}
	known := false
	if c.SessionID != "" {
		_, err := s.opts.Sessions.Get(c.SessionID)
		if err != nil && !errors.Is(err, fsstore.ErrNotFound) {
			return held, nil, false, err
		}
		known = err == nil
	}
	var rt route
	var add []sessions.Message
	if known {
		rt, add, err = s.routeSession(ctx, c.SessionID, input)
	} else {
		rt, add, err = s.routeHistory(ctx, input)
	}
	rt.unlocks = append(held.unlocks, rt.unlocks...)
	if err != nil {
		return rt, nil, false, err
	}
	if rt.replay == nil && rt.a.sess.ID != c.SessionID {
		c.SessionID, c.MessageCount = rt.a.sess.ID, 0
		if err := s.opts.Store.PutConversation(c); err != nil {
			return rt, nil, false, err
		}
	}
	rt.mapping = &c
	return rt, add, !known, nil
}
