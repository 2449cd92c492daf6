package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// Key is one API key of the gateway: a client that sends Secret is the
// key's, and reaches only what the key's clients made. Name is empty for
// the gateway's single key (gateway.api_key, or the variable
// gateway.api_key_env names) and names an entry of gateway.api_keys.
type Key struct {
	Name   string
	Secret string
}

// A gateway with several keys keeps each key's conversations apart: the
// sessions its clients made (the session document's gateway_key), their
// stored responses, their Responses conversations and client threads,
// their Idempotency-Key records and the history index that finds a
// conversation by what its client re-sends. A request is answered only
// from its own key's: a session, response or conversation of another key
// is unknown to it (404, or a new conversation), an idempotency key sent
// by two keys names two turns, and two keys' clients that send the same
// conversation get a session each. The scope of a request is the name of
// the key it authenticated with (scopeOf); the single key's scope is
// empty, and so is that of a gateway without a key, so a gateway that
// gains named keys keeps its conversations under its old key.

type scopeCtxKey struct{}

// withScope is ctx carrying the name of the key a request came with.
func withScope(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, scopeCtxKey{}, name)
}

// scopeOf is the name of the key the request of ctx came with.
func scopeOf(ctx context.Context) string {
	name, _ := ctx.Value(scopeCtxKey{}).(string)
	return name
}

// scopedName is the name under which the gateway keeps a client's
// conversation slug or idempotency key for the key of ctx: name itself
// for the unnamed key, else a name made of the key's name and the
// digest of name, which is a valid record id whatever name's length.
func scopedName(ctx context.Context, name string) string {
	scope := scopeOf(ctx)
	if scope == "" {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "key-" + scope + "-" + hex.EncodeToString(sum[:20])
}

// newDigest is the hash a conversation's digest is taken with for the
// clients of key scope: the history index keeps each key's conversations
// apart.
func newDigest(scope string) hash.Hash {
	h := sha256.New()
	if scope != "" {
		c := canonical{h: h}
		c.atom("gateway_key", scope)
		c.flush()
	}
	return h
}

// getSession is the session id for the request of ctx: a session another
// key's client made is not found.
func (ro *router) getSession(ctx context.Context, id string) (sessions.Session, error) {
	sess, err := ro.opts.Sessions.Get(id)
	if err == nil && sess.GatewayKey != scopeOf(ctx) {
		return sessions.Session{}, fsstore.ErrNotFound
	}
	return sess, err
}
