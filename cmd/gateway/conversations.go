package gateway

import (
	"sort"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// conversationKey begins the session_key of a Responses conversation's
// sessions; the rest is the conversation's (scoped) slug.
const conversationKey = "conversation:"

// LevelConversations brings the mappings of the Responses conversations
// level with their sessions, the truth: a conversation's first mapping is
// written without a sync (gatewaystate.CacheConversation), so a power cut
// may lose it or leave it empty. A conversation's first session is the
// gateway session whose session_key names it and that has no parent
// (every later session of the conversation has one, and moving the
// mapping to it is synced; a branch shares the key but has a parent); of
// several, after a mapping was quarantined, the last made. A mapping
// missing or unreadable is written again, synced, naming it. Mappings of
// conversations whose first session was made at or after since (the
// start of a run that did not stop cleanly) are made durable as they are;
// a zero since makes none (fsck --repair: the next gateway start, after
// a run that did not stop cleanly, still does). With a since, only the
// sessions whose id (the time it was made, in UTC, first) is not before
// it are read: the mappings of earlier runs were made durable by their
// clean stop or by the start that levelled them, and a start after a
// crash reads the last run's sessions, not the profile's. A zero since
// reads every session. It returns how many mappings it wrote again.
func LevelConversations(st *sessions.Store, gs *gatewaystate.Store, since time.Time) (int, error) {
	var keep func(string) bool
	if !since.IsZero() {
		// A second before: an id's time is cut to the second.
		from := since.UTC().Add(-time.Second).Format("20060102_150405")
		keep = func(id string) bool { return id >= from }
	}
	all, err := st.Documents(keep)
	if err != nil {
		return 0, err
	}
	first := map[string]sessions.Session{}
	for _, sess := range all {
		slug, ok := strings.CutPrefix(sess.SessionKey, conversationKey)
		if !ok || sess.Source != "gateway" || sess.ParentSessionID != "" || fsstore.CheckID("conversation", slug) != nil {
			continue
		}
		if f, seen := first[slug]; !seen || madeAfter(sess, f) {
			first[slug] = sess
		}
	}
	slugs := make([]string, 0, len(first))
	for slug := range first {
		slugs = append(slugs, slug)
	}
	sort.Strings(slugs)
	n := 0
	for _, slug := range slugs {
		sess := first[slug]
		made, err := sess.CreatedAt.Instant()
		sync := !since.IsZero() && (err != nil || !made.Before(since))
		wrote, err := gs.LevelConversation(slug, sess.ID, sync)
		if err != nil {
			return n, err
		}
		if wrote {
			n++
		}
	}
	return n, nil
}

// madeAfter reports whether session a was made after b: by their
// created_at, then, made in the same instant, by their ids.
func madeAfter(a, b sessions.Session) bool {
	at, aerr := a.CreatedAt.Instant()
	bt, berr := b.CreatedAt.Instant()
	if aerr == nil && berr == nil && !at.Equal(bt) {
		return at.After(bt)
	}
	return a.ID > b.ID
}
