package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// IdempotencyHeader names the turn of a request: a request with a key the
// gateway has seen gets the reply of the key's turn, and nothing runs.
const IdempotencyHeader = "Idempotency-Key"

// KeyLifetime is how long the record of an idempotency key is kept: a
// gateway that starts removes older ones. Clients retry within minutes.
const KeyLifetime = 24 * time.Hour

// storedReply is the reply of a turn whose messages are msgs (the
// transcript from the turn's start): from its first assistant message up
// to the next user message. ok is false when the turn has no assistant
// message: it never got its reply.
func storedReply(msgs []sessions.Message) (reply []sessions.Message, ok bool) {
	start := -1
	for i, m := range msgs {
		if m.Role == "assistant" && !agent.IsNote(m) && start < 0 {
			start = i
		}
		if m.Role == "user" && start >= 0 {
			return msgs[start:i], true
		}
	}
	if start < 0 {
		return nil, false
	}
	return msgs[start:], true
}

// replay answers a turn from its stored reply: nothing is stored and no
// provider is called. A stream gets the reply's text as one delta.
func replay(reply []sessions.Message, count int64, stream io.Writer, started func()) turnOutcome {
	if started != nil {
		started()
	}
	if stream != nil {
		if text := replyText(reply); text != "" {
			io.WriteString(stream, text)
		}
	}
	return turnOutcome{reply: provider.Reply{Messages: reply}, count: count, replayed: true}
}

// lastTurn finds the last turn of stored and its stored reply: its input
// is stored[start:end] (the messages after the reply before it, through
// its last user message), its reply follows. ok is false when there is no
// such reply. Whether the reply reached its client is undelivered's to
// say, asked only of a request that repeats the turn.
func lastTurn(stored []sessions.Message) (start, end int, reply []sessions.Message, ok bool) {
	u := -1
	for i := len(stored) - 1; i >= 0; i-- {
		if stored[i].Role == "user" {
			u = i
			break
		}
	}
	if u < 0 {
		return 0, 0, nil, false
	}
	reply, ok = storedReply(stored[u+1:])
	if !ok {
		return 0, 0, nil, false
	}
	return lastReplyEnd(stored[:u+1]), u + 1, reply, true
}

// undelivered reports whether the reply that ends stored, the transcript
// of session sid, never reached a client (its delivered record is short
// of it). A reply still being sent is neither: its send is waited for
// (deliveries), which a client that stops reading ends after the write
// timeout. Only a request that repeats the reply's turn asks, so a
// stalled client holds no one else up.
func (ro *router) undelivered(ctx context.Context, sid string, stored []sessions.Message) (bool, error) {
	if err := ro.deliveries.wait(ctx, sid); err != nil {
		return false, err
	}
	delivered, err := ro.opts.Store.Delivered(sid)
	return err == nil && delivered < int64(len(stored)), err
}

// requestFormat is the form of the request digests the gateway writes in
// key records: the request as decodeChat and decodeResponses read it, with
// the client's tools and parameters. A record without one (0) was written
// either by a build that read fewer fields (olderWire) or by one that read
// these but did not number them, so its digest is compared with both.
const requestFormat = 1

// requestDigest names what a request asks, for its idempotency key: the
// request as decoded (so that the same request re-encoded by a client
// library matches) and the session header it came with.
func requestDigest(r *http.Request, req any) string {
	b, _ := json.Marshal(req)
	h := sha256.New()
	h.Write([]byte(r.URL.Path + "\n" + r.Header.Get(SessionHeader) + "\n"))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// olderWire is the part of a request that a build from before the
// gateway read the client's tools and parameters took the digest of: the
// fields it decoded, in its order.
func olderWire(req any) any {
	switch w := req.(type) {
	case *chatRequest:
		return &struct {
			Model         string            `json:"model"`
			Messages      []json.RawMessage `json:"messages"`
			Stream        bool              `json:"stream"`
			StreamOptions *struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}{w.Model, w.Messages, w.Stream, w.StreamOptions}
	case *responsesRequest:
		return &struct {
			Model              string          `json:"model"`
			Input              json.RawMessage `json:"input"`
			Instructions       *string         `json:"instructions"`
			PreviousResponseID *string         `json:"previous_response_id"`
			Conversation       json.RawMessage `json:"conversation"`
			Store              *bool           `json:"store"`
			Stream             bool            `json:"stream"`
		}{w.Model, w.Input, w.Instructions, w.PreviousResponseID, w.Conversation, w.Store, w.Stream}
	}
	return req
}

// sameRequest reports whether the request whose digest is digest is the
// one rec was written for, in the format rec has.
func sameRequest(rec gatewaystate.Key, digest string, r *http.Request, req any) bool {
	if rec.RequestSHA256 == digest {
		return true
	}
	return rec.RequestFormat == 0 && rec.RequestSHA256 == requestDigest(r, olderWire(req))
}

// keyed is the turn of a request that carries an idempotency key.
type keyed struct {
	key    string
	digest string
	rec    gatewaystate.Key
	found  bool
	unlock func()
}

// lookupKey takes the key's lock (requests with one key run one at a
// time) and reads its record. No key: a zero keyed, nothing locked.
func (ro *router) lookupKey(ctx context.Context, r *http.Request, req any) (keyed, error) {
	k := keyed{key: r.Header.Get(IdempotencyHeader), unlock: func() {}}
	if k.key == "" {
		return k, nil
	}
	if len(k.key) > 256 {
		return k, badRequest(IdempotencyHeader, "%s is %d bytes; the limit is 256", IdempotencyHeader, len(k.key))
	}
	// Each API key's idempotency keys are its own.
	k.key = scopedName(ctx, k.key)
	unlock, err := ro.keys.lock(ctx, gatewaystate.KeyDigest(k.key))
	if err != nil {
		return k, err
	}
	k.unlock = unlock
	k.digest = requestDigest(r, req)
	k.rec, err = ro.opts.Store.GetKey(k.key)
	switch {
	case errors.Is(err, fsstore.ErrNotFound):
		return k, nil
	case err != nil:
		return k, err
	}
	if !sameRequest(k.rec, k.digest, r, req) {
		return k, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: IdempotencyHeader,
			code: "idempotency_key_reused", msg: "this Idempotency-Key was sent before with a different request"}
	}
	k.found = true
	return k, nil
}

// recordStart writes the key's record before the turn runs: from is the
// length of the transcript the turn continues.
func (k *keyed) recordStart(st *gatewaystate.Store, sid string, from int) error {
	if k.key == "" {
		return nil
	}
	k.rec = gatewaystate.Key{KeySHA256: gatewaystate.KeyDigest(k.key), RequestSHA256: k.digest, RequestFormat: requestFormat, SessionID: sid, From: int64(from)}
	return st.PutKey(k.rec)
}

// recordEnd records where the key's turn's reply begins and ends, so that
// a replay returns that reply and no later one. A failure is returned for
// the log only: the reply is stored, and a replay then finds it from
// where the turn began.
func (k *keyed) recordEnd(st *gatewaystate.Store, out turnOutcome) error {
	if k.key == "" || out.replayed {
		return nil
	}
	k.rec.From, k.rec.To = out.count-int64(len(out.reply.Messages)), out.count
	return st.PutKey(k.rec)
}

// keyedTurn is where a request whose key was seen goes: the key's session,
// and the stored reply of its turn when there is one; otherwise the turn
// runs again on what was stored, adding nothing.
func (ro *router) keyedTurn(ctx context.Context, k keyed) (a admission, reply []sessions.Message, count int64, unlock func(), err error) {
	unlock = func() {}
	unlockSess, err := ro.sessions.lock(ctx, k.rec.SessionID)
	if err != nil {
		return a, nil, 0, unlock, err
	}
	sess, err := ro.getSession(ctx, k.rec.SessionID)
	if errors.Is(err, fsstore.ErrNotFound) {
		unlockSess()
		return a, nil, 0, unlock, notFound(IdempotencyHeader, "session_not_found", "the session %s of this Idempotency-Key no longer exists", k.rec.SessionID)
	}
	if err != nil {
		unlockSess()
		return a, nil, 0, unlock, err
	}
	stored, err := ro.transcript(sess.ID)
	if err != nil {
		unlockSess()
		return a, nil, 0, unlock, err
	}
	from, to := min(int(k.rec.From), len(stored)), len(stored)
	if k.rec.To > 0 {
		to = min(int(k.rec.To), len(stored))
	}
	reply, _ = storedReply(stored[from:to])
	return admission{sess: sess}, reply, int64(to), unlockSess, nil
}

// whenDelivered records, once the response written to w has reached the
// connection whole, that the client received the session's transcript up
// to count messages (see gatewaystate.Delivery). A response that fails
// (the client went away, or stopped reading) records nothing, and neither
// does a writer that is not the gateway's own (clientWriter). A failure to
// record is reported, not returned: the reply is already sent. It is
// called with the session's lock held, and the send it awaits is in
// s.router.deliveries from then until the record is written: no request
// can see the reply as stored and not yet delivered while it is on its
// way.
func (s *Server) whenDelivered(w http.ResponseWriter, sid string, count int64) {
	cw, ok := w.(*clientWriter)
	if !ok {
		return
	}
	done := s.router.deliveries.begin(sid)
	cw.afterSend(func(sent bool) {
		defer done()
		if !sent {
			return
		}
		if err := s.opts.Store.SetDelivered(sid, count); err != nil {
			s.opts.Logf("session %s: recording the delivery of its reply: %v", sid, err)
		}
	})
}
