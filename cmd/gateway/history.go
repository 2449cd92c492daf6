package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

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
func conversationDigest(scope string, msgs []sessions.Message) string {
	h := newDigest(scope)
	walkConversation(h, msgs, nil)
	return hex.EncodeToString(h.Sum(nil))
}

// walkConversation writes the canonical form of msgs to h (see
// conversationDigest) and, when atEnd is set, calls it after each reply:
// n is the index after the reply's last message, and h then holds the
// digest of msgs[:n]. A text that is a JSON string without escapes (most
// are) goes to h as the bytes it has in the message, without being
// decoded or copied into a string, and the elements are gathered into
// few writes: a conversation re-sent whole is hashed at every turn.
func walkConversation(h hash.Hash, msgs []sessions.Message, atEnd func(n int)) {
	c := canonical{h: h}
	for i := 0; i < len(msgs); {
		m := msgs[i]
		switch {
		case agent.IsNote(m) || marked(m, instructionsMarker):
			i++
		case isReplyRole(m.Role):
			start, end, notes := i, i, false
			for ; i < len(msgs) && (isReplyRole(msgs[i].Role) || agent.IsNote(msgs[i])); i++ {
				if agent.IsNote(msgs[i]) {
					notes = true
				} else {
					end = i + 1
				}
			}
			run := msgs[start:end]
			if notes {
				run = slices.DeleteFunc(slices.Clone(run), agent.IsNote)
			}
			c.reply(run)
			for _, call := range pendingToolCalls(run) {
				c.atom("call", call.ID, call.Function.Name, callArguments(call.Function.Arguments))
			}
			if atEnd != nil {
				c.flush()
				atEnd(end)
			}
		default:
			c.text(m.Role, m.Content)
			i++
		}
	}
	c.flush()
}

// canonical gathers the elements of a conversation's canonical form,
// each field prefixed by its length so that no two conversations write
// the same bytes, for h.
type canonical struct {
	h   hash.Hash
	buf []byte
}

// atom adds one element of a conversation.
func (c *canonical) atom(fields ...string) {
	c.buf = binary.BigEndian.AppendUint64(c.buf, uint64(len(fields)))
	for _, f := range fields {
		c.buf = binary.BigEndian.AppendUint64(c.buf, uint64(len(f)))
		c.buf = append(c.buf, f...)
	}
	c.spill()
}

// text adds a message of role whose text (sessions.ContentText) is that
// of content.
func (c *canonical) text(role string, content []byte) {
	t, ok := plainText(content)
	if !ok {
		c.atom(role, sessions.ContentText(content))
		return
	}
	c.buf = binary.BigEndian.AppendUint64(c.buf, 2)
	c.buf = binary.BigEndian.AppendUint64(c.buf, uint64(len(role)))
	c.buf = append(c.buf, role...)
	c.buf = binary.BigEndian.AppendUint64(c.buf, uint64(len(t)))
	c.buf = append(c.buf, t...)
	c.spill()
}

// reply adds a reply, run: its text as replyText joins it.
func (c *canonical) reply(run []sessions.Message) {
	size, n := 0, 0
	for _, m := range run {
		if m.Role != "assistant" {
			continue
		}
		t, ok := plainText(m.Content)
		if !ok {
			c.atom("assistant", replyText(run))
			return
		}
		if len(t) > 0 {
			size, n = size+len(t), n+1
		}
	}
	if n > 1 {
		size += n - 1
	}
	c.buf = binary.BigEndian.AppendUint64(c.buf, 2)
	c.buf = binary.BigEndian.AppendUint64(c.buf, uint64(len("assistant")))
	c.buf = append(c.buf, "assistant"...)
	c.buf = binary.BigEndian.AppendUint64(c.buf, uint64(size))
	first := true
	for _, m := range run {
		if t, _ := plainText(m.Content); m.Role == "assistant" && len(t) > 0 {
			if !first {
				c.buf = append(c.buf, '\n')
			}
			first = false
			c.buf = append(c.buf, t...)
		}
	}
	c.spill()
}

// plainText is the text of content when it is empty or a JSON string
// without escapes, whose text is its bytes between the quotes.
func plainText(content []byte) ([]byte, bool) {
	switch {
	case len(content) == 0:
		return nil, true
	case len(content) >= 2 && content[0] == '"' && bytes.IndexByte(content, '\\') < 0:
		return content[1 : len(content)-1], true
	}
	return nil, false
}

// spill writes what is gathered to h once it is worth a write.
func (c *canonical) spill() {
	if len(c.buf) >= 32<<10 {
		c.flush()
	}
}

func (c *canonical) flush() {
	if len(c.buf) > 0 {
		c.h.Write(c.buf)
		c.buf = c.buf[:0]
	}
}

// OpeningRetryWindow is how long after a conversation's opening messages
// were stored, without a reply the client received, a request that sends
// the same ones and does not say it is a retry (X-Stainless-Retry-Count)
// is taken for that turn's retry; later, it begins a new conversation.
const OpeningRetryWindow = 2 * time.Minute

// RetryCountHeader is the header in which the official client libraries
// (generated by Stainless) number their automatic retries of a request:
// 0, or absent, for its first attempt.
const RetryCountHeader = "X-Stainless-Retry-Count"

// attempt is what a request that names no conversation says of itself,
// for telling the retry of a first turn from a new conversation that
// opens with the same words (retryOpening).
type attempt struct {
	// retried: a client library's retry, by its own count
	// (RetryCountHeader above 0).
	retried bool
	// r and wire are the request and what was decoded of it, whose
	// digest (request) a retry shares: it re-sends the same body, while
	// a new conversation with other tools or parameters differs.
	r    *http.Request
	wire any
}

// request is the digest of the attempt's request (requestDigest). It is
// taken only for a conversation's opening: a request that continues a
// history, its whole conversation re-sent, never pays for it.
func (a attempt) request() string { return requestDigest(a.r, a.wire) }

// attemptOf is the attempt of r, whose request as decoded is wire.
func attemptOf(r *http.Request, wire any) attempt {
	n, err := strconv.Atoi(strings.TrimSpace(r.Header.Get(RetryCountHeader)))
	return attempt{retried: err == nil && n > 0, r: r, wire: wire}
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
//     the stored reply (see undelivered).
//   - The session moved on otherwise (a regenerate, an edited message): a
//     new session, parent the old, holding its history up to that point;
//     the old one is never rewritten.
//   - No session has that history: a new session with the whole
//     conversation.
//   - The session was replaced (the gateway ended it, suspended or
//     expired, and made a successor): rt.successor names the newest, and
//     the caller routes the request as one that names it (routeChat,
//     routeSession), so that a client that names nothing follows its
//     conversation as one that names it does.
//
// It returns the route and what the turn adds.
func (ro *router) routeHistory(ctx context.Context, model string, msgs []sessions.Message, at attempt) (route, []sessions.Message, error) {
	var rt route
	last := lastAssistant(msgs)
	if last < 0 {
		digest := conversationDigest(scopeOf(ctx), msgs)
		h, ok, err := ro.opts.Store.GetHistory(digest)
		if err != nil {
			ro.opts.Logf("the history index: %v", err)
		}
		if ok {
			found, add, err := ro.retryOpening(ctx, model, &rt, h, msgs, at)
			if err != nil || found {
				return rt, add, err
			}
			// Another conversation's session, or one replaced: its lock
			// is not this request's to hold while its turn runs.
			rt.release()
			if rt.successor != "" {
				return route{successor: rt.successor}, nil, nil
			}
			rt = route{}
		}
		sess, err := ro.newSession(ctx, &rt, "", "", model)
		rt.a = admission{sess: sess, fresh: true, opening: digest, request: at.request()}
		return rt, msgs, err
	}
	prior, input := msgs[:last+1], msgs[last+1:]
	rt.history = newDigest(scopeOf(ctx))
	walkConversation(rt.history, prior, nil)
	digest := hex.EncodeToString(rt.history.Sum(nil))
	h, ok, err := ro.opts.Store.GetHistory(digest)
	if err != nil {
		ro.opts.Logf("the history index: %v", err)
	}
	if ok {
		found, add, err := ro.continueHistory(ctx, model, &rt, h, digest, input)
		if err != nil || found {
			return rt, add, err
		}
		rt.release()
		if rt.successor != "" {
			return route{successor: rt.successor}, nil, nil
		}
		rt = route{history: rt.history}
	}
	sess, err := ro.newSession(ctx, &rt, "", "", model)
	rt.a = admission{sess: sess, fresh: true, history: digest}
	return rt, msgs, err
}

// indexed locks the session a history index entry names (rt holds the
// lock) and returns it with its transcript, which holds the entry's
// history: its first h.MessageCount messages end with the one stored at
// h.LastTS. stored is nil when it does not (the transcript has changed
// since: the transcript wins), and sess is empty too when the session is
// gone.
func (ro *router) indexed(ctx context.Context, rt *route, h gatewaystate.History) (sess sessions.Session, stored []sessions.Message, err error) {
	unlock, err := ro.sessions.lock(ctx, h.SessionID)
	if err != nil {
		return sessions.Session{}, nil, err
	}
	rt.hold(unlock)
	sess, err = ro.getSession(ctx, h.SessionID)
	if errors.Is(err, fsstore.ErrNotFound) {
		return sessions.Session{}, nil, nil
	}
	if err != nil {
		return sessions.Session{}, nil, err
	}
	if replaced(sess) {
		// The gateway ended it (suspended, expired) and made a successor:
		// the conversation goes on there, as for a client that names the
		// old session, never in a new successor at each request.
		next, err := ro.opts.Store.SuccessorOf(sess.ID)
		if err != nil || next != "" {
			rt.successor = next
			return sessions.Session{}, nil, err
		}
	}
	if stored, err = ro.routeTranscript(rt, sess.ID); err != nil {
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
func (ro *router) continueHistory(ctx context.Context, model string, rt *route, h gatewaystate.History, digest string, input []sessions.Message) (found bool, add []sessions.Message, err error) {
	sess, stored, err := ro.indexed(ctx, rt, h)
	if err != nil || stored == nil {
		if err == nil && sess.ID != "" {
			ro.opts.Logf("the history index names session %s, whose transcript has changed since: not used", sess.ID)
		}
		return false, nil, err
	}
	k := int(h.MessageCount)
	rt.a, rt.stored = admission{sess: sess}, stored
	tail := stored[k:]
	switch {
	case len(tail) == 0 || isRetry(tail, input):
		if rt.a, err = ro.admit(ctx, rt, sess, model); err != nil {
			return true, nil, err
		}
		if rt.a.fresh {
			// A successor of a suspended or expired session starts with
			// the client's history, as a new session would.
			if _, err := ro.opts.Sessions.Append(rt.a.sess.ID, sessions.CopyMessages(stored[:k])); err != nil {
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
	if err := ro.findRepeat(ctx, rt, input, k); err != nil || rt.replay != nil {
		return true, nil, err
	}
	fork, err := ro.newSession(ctx, rt, sess.ID, sess.SessionKey, model)
	if err != nil {
		return true, nil, err
	}
	if k > 0 {
		if _, err := ro.opts.Sessions.Append(fork.ID, sessions.CopyMessages(stored[:k])); err != nil {
			return true, nil, err
		}
	}
	rt.a, rt.stored = admission{sess: fork}, stored[:k]
	return true, input, nil
}

// retryOpening is routeHistory for a conversation with no reply yet, msgs,
// that the index names (indexOpening): found is true when the request is
// the retry of the turn that stored msgs there and got no reply its
// client received (the client left mid-stream, the gateway was killed, the
// provider failed). The session's lock is taken first: a turn still
// running there, or a reply still being sent (undelivered), is waited for,
// so that what it became is known. Then:
//   - Without a reply stored, the request is the retry when it says it is
//     one (at.retried) or comes within OpeningRetryWindow of the stored
//     messages: the turn runs on there, with the request's own tools and
//     parameters, storing nothing again.
//   - With a reply stored and never delivered, the request is its retry
//     only when it is the same request, body for body, as the one whose
//     turn stored it (at.request() against the entry's Request; a client
//     library's retry re-sends the same body), and, unless it says it is a
//     retry, within the window: it gets that reply. Another client that
//     opens with the same words but its own tools or parameters is not
//     handed a reply the model made for someone else's.
//
// A session that has moved on, whose reply was delivered, or an entry
// without the request's digest (rebuilt by fsck, or from an older build),
// is not found: the same opening messages are then a new conversation.
func (ro *router) retryOpening(ctx context.Context, model string, rt *route, h gatewaystate.History, msgs []sessions.Message, at attempt) (found bool, add []sessions.Message, err error) {
	if ts, err := h.LastTS.Instant(); !at.retried && (err != nil || ro.now().Sub(ts) > OpeningRetryWindow) {
		return false, nil, nil
	}
	sess, stored, err := ro.indexed(ctx, rt, h)
	if err != nil || stored == nil {
		return false, nil, err
	}
	k := int(h.MessageCount)
	rt.a, rt.stored = admission{sess: sess}, stored
	// Notes after the opening (a restart's resume note, stored by an
	// attempt killed before its model answered) are hermes's, not a reply.
	if slices.ContainsFunc(stored[k:], func(m sessions.Message) bool { return !agent.IsNote(m) }) {
		if h.Request == "" || h.Request != at.request() {
			return false, nil, nil
		}
		err := ro.findRepeat(ctx, rt, msgs, 0)
		return rt.replay != nil, nil, err
	}
	if rt.a, err = ro.admit(ctx, rt, sess, model); err != nil {
		return true, nil, err
	}
	if rt.a.fresh {
		// A successor of a suspended or expired session starts with the
		// client's messages, as a new session would.
		rt.a.opening, rt.a.request, rt.stored = conversationDigest(scopeOf(ctx), msgs), at.request(), nil
		return true, msgs, nil
	}
	return true, nil, nil
}

// indexOpening records, once a turn of a conversation with no reply yet
// has stored its messages, the conversation's digest as the session's (see
// retryOpening), up to its last user message: an opening has no reply,
// so that message ends it, and what a successor carries after it (a cut
// call and its interrupted answer) is not part of it. A failure is
// reported, not returned: the turn goes on, and a retry of it would start
// a new session. last is the turn's tail of the transcript (agent.Tail),
// which it takes from what it stored when nothing came between.
func (ro *router) indexOpening(a admission, last agent.Tail) {
	if a.opening == "" {
		return
	}
	tail, err := last(func(m sessions.Message) bool { return isUser(m) && !agent.IsNote(m) })
	if err == nil && len(tail) > 0 && isUser(tail[0]) {
		end := tail[0]
		err = ro.opts.Store.PutHistory(gatewaystate.History{Digest: a.opening, Request: a.request, SessionID: a.sess.ID, MessageCount: end.Seq, LastTS: end.TS})
	}
	if err != nil {
		ro.opts.Logf("session %s: recording its opening in the history index: %v", a.sess.ID, err)
	}
}

// indexCopied records, once the first turn of a session made for a
// history the index did not have has stored the conversation, that
// history (a.history) as the session's, at the end of its last reply
// there: a retry of the turn (the gateway killed in it, or its client
// gone) then continues in this session, where its calls are answered
// once, rather than in a new session that would run them again. A failure
// is reported, not returned, as indexOpening's.
func (ro *router) indexCopied(ctx context.Context, a admission) {
	if a.history == "" {
		return
	}
	msgs, err := ro.opts.Sessions.Messages(a.sess.ID)
	if err != nil {
		ro.opts.Logf("session %s: recording its history in the index: %v", a.sess.ID, err)
		return
	}
	h := newDigest(scopeOf(ctx))
	at := 0
	walkConversation(h, msgs, func(end int) {
		if at == 0 && hex.EncodeToString(h.Sum(nil)) == a.history {
			at = end
		}
	})
	if at == 0 {
		return
	}
	if err := ro.opts.Store.PutHistory(gatewaystate.History{Digest: a.history, SessionID: a.sess.ID, MessageCount: int64(at), LastTS: msgs[at-1].TS}); err != nil {
		ro.opts.Logf("session %s: recording its history in the index: %v", a.sess.ID, err)
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
		h := newDigest(sess.GatewayKey)
		var werr error
		walkConversation(h, msgs, func(end int) {
			if werr != nil {
				return
			}
			digest := hex.EncodeToString(h.Sum(nil))
			if cur, ok, err := gs.GetHistory(digest); err == nil && ok && cur.SessionID != sess.ID && holds(st, cur, sess.GatewayKey, digest) {
				return // another session has this history too: it keeps it
			} else if err == nil && ok && cur.SessionID == sess.ID && cur.MessageCount == int64(end) {
				return
			}
			if werr = gs.PutHistory(gatewaystate.History{Digest: digest, SessionID: sess.ID, MessageCount: int64(end), LastTS: msgs[end-1].TS}); werr == nil {
				n++
			}
		})
		if werr != nil {
			return n, werr
		}
	}
	return n, nil
}

// holds reports whether the session an entry names has its history, as
// the clients of key scope find it.
func holds(st *sessions.Store, h gatewaystate.History, scope, digest string) bool {
	msgs, err := st.Messages(h.SessionID)
	return err == nil && h.MessageCount >= 1 && int(h.MessageCount) <= len(msgs) &&
		msgs[h.MessageCount-1].TS == h.LastTS && conversationDigest(scope, msgs[:h.MessageCount]) == digest
}

// indexHistory records, after a turn, the conversation its client now
// holds (what it sent and the reply) as the session's: the next request
// that re-sends it continues there. prior, when set, already holds the
// digest state of sent's history (routeHistory's), which is carried on
// when sent's new messages begin a new element of the conversation. A
// failure is reported, not returned: the reply is stored, and the next
// request then starts a new session.
func (ro *router) indexHistory(scope string, sent []sessions.Message, prior hash.Hash, out turnOutcome, sid string) {
	if len(out.reply.Messages) == 0 {
		return
	}
	h, rest := prior, sent[lastAssistant(sent)+1:]
	if h == nil || (len(rest) > 0 && isReplyRole(rest[0].Role)) {
		h, rest = newDigest(scope), sent
	}
	walkConversation(h, append(append([]sessions.Message(nil), rest...), out.reply.Messages...), nil)
	last := out.reply.Messages[len(out.reply.Messages)-1]
	if err := ro.opts.Store.PutHistory(gatewaystate.History{Digest: hex.EncodeToString(h.Sum(nil)), SessionID: sid, MessageCount: out.count, LastTS: last.TS}); err != nil {
		ro.opts.Logf("session %s: recording its history in the index: %v", sid, err)
	}
}

// threadHeaders are the headers in which a client names its own thread:
// Codex CLI sends its thread's id in thread-id and session-id (and
// session_id in versions before); Claude Code sends its session's in
// X-Claude-Code-Session-Id. A thread is a conversation whose client
// re-sends its whole input: its slug is "thread-" and the id. A request's
// prompt_cache_key is not one: clients share one key across conversations
// to share a cache.
var threadHeaders = []string{"Thread-Id", "Session-Id", "Session_id", "X-Claude-Code-Session-Id"}

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
func (ro *router) routeThread(ctx context.Context, model, slug string, input []sessions.Message, at attempt) (route, []sessions.Message, bool, error) {
	var held route
	slug = scopedName(ctx, slug) // each API key's threads are its own
	unlock, err := ro.convs.lock(ctx, slug)
	if err != nil {
		return held, nil, false, err
	}
	held.hold(unlock)
	unlockFile, err := ro.opts.Store.LockConversation(slug)
	if err != nil {
		return held, nil, false, err
	}
	held.hold(unlockFile)
	c, err := ro.opts.Store.GetConversation(slug)
	switch {
	case errors.Is(err, fsstore.ErrNotFound):
		c = gatewaystate.Conversation{Conversation: slug}
	case err != nil:
		return held, nil, false, err
	}
	known := false
	if c.SessionID != "" {
		_, err := ro.getSession(ctx, c.SessionID)
		if err != nil && !errors.Is(err, fsstore.ErrNotFound) {
			return held, nil, false, err
		}
		known = err == nil
	}
	var rt route
	var add []sessions.Message
	if known {
		rt, add, err = ro.routeSession(ctx, model, c.SessionID, input)
	} else {
		rt, add, err = ro.routeHistory(ctx, model, input, at)
		if err == nil && rt.successor != "" {
			// Its history's session was replaced: on in the successor,
			// as for a thread that names it.
			known = true
			rt, add, err = ro.routeSession(ctx, model, rt.successor, input)
		}
	}
	rt.unlocks = append(held.unlocks, rt.unlocks...)
	if err != nil {
		return rt, nil, false, err
	}
	if rt.replay == nil && rt.a.sess.ID != c.SessionID {
		c.SessionID = rt.a.sess.ID
		if err := ro.opts.Store.PutConversation(c); err != nil {
			return rt, nil, false, err
		}
	}
	return rt, add, !known, nil
}
