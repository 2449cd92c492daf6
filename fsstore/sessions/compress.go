package sessions

import (
	"errors"
	"fmt"
	"os"

	"github.com/hermes/hermes/fsstore"
)

// EndCompression is the end reason of a session that a compression
// continued in a new one (its compressed_into).
const EndCompression = "compression"

// Compress commits a compression of parent: a new session whose
// transcript is msgs (a summary and the messages kept after it), with
// parent_session_id parent, and parent ended with reason compression and
// compressed_into the new session. count is the length of parent's
// transcript the summary was made from: a parent that has grown since, or
// that a compression continued already, is refused (ErrRefused) and
// nothing is written.
//
// The child is created whole first (CreateWith); the parent's document
// naming it is the commit point. If that write fails the child is removed
// again; a crash between the two leaves a child that no parent names, an
// ordinary session that sessions list shows and delete removes.
func (s *Store) Compress(parentID string, count int64, msgs []Message) (Session, error) {
	if err := fsstore.CheckID("session id", parentID); err != nil {
		return Session{}, err
	}
	unlock, err := s.lock(parentID)
	if err != nil {
		return Session{}, err
	}
	defer unlock()
	parent, err := s.readSession(parentID, true)
	if err != nil {
		return Session{}, err
	}
	switch {
	case parent.CompressedInto != "":
		return Session{}, fsstore.Refusedf("session %s was compressed into %s already; nothing written", parentID, parent.CompressedInto)
	case parent.MessageCount != count:
		return Session{}, fsstore.Refusedf("session %s has %d messages, its summary was made from %d: it changed meanwhile; nothing written, try again", parentID, parent.MessageCount, count)
	}
	var child Session
	for range 8 {
		var created bool
		child, created, err = s.CreateWith(Session{
			ID: fsstore.NewID(s.Now()), Source: parent.Source, Model: parent.Model, Cwd: parent.Cwd, ParentSessionID: parentID,
		}, msgs)
		if err != nil {
			return Session{}, err
		}
		if created {
			break
		}
		child = Session{}
	}
	if child.ID == "" {
		return Session{}, errors.New("could not find a free session id")
	}
	now := s.Now()
	ts := fsstore.TimeOf(now)
	parent.State, parent.EndedAt, parent.EndReason = StateEnded, ts, EndCompression
	parent.CompressedInto, parent.UpdatedAt = child.ID, ts
	err = s.touchCatalogThen(&parent, now, now, func() error { return fsstore.WriteDoc(s.docPath(parentID), &parent) })
	if err != nil {
		unlockChild, rerr := s.lock(child.ID)
		if rerr == nil {
			_, rerr = s.removeLocked(child, false)
			unlockChild()
		}
		if rerr != nil {
			return Session{}, fmt.Errorf("%w; removing the new session %s failed: %w", err, child.ID, rerr)
		}
		return Session{}, err
	}
	return child, nil
}

// Latest follows id's compressed_into links to the newest session of its
// compression chain: id itself when no compression continued it. A link
// to a session that no longer exists (pruned) ends the walk there.
func (s *Store) Latest(id string) (string, error) {
	chain, err := s.followInto(id)
	if err != nil {
		return "", err
	}
	return chain[len(chain)-1], nil
}

// Chain is id's compression chain, oldest first: the sessions id
// continues (each the parent of the next, which it names as
// compressed_into), id, and the sessions that continue it. A session in
// no chain is one on its own.
func (s *Store) Chain(id string) ([]string, error) {
	var before []string
	seen := map[string]bool{id: true}
	for cur := id; ; {
		sess, err := s.readDocument(cur, false)
		if err != nil {
			return nil, err
		}
		p := sess.ParentSessionID
		if p == "" || seen[p] || fsstore.CheckID("session id", p) != nil {
			break
		}
		parent, err := s.readDocument(p, false)
		if errors.Is(err, fsstore.ErrNotFound) || (err == nil && parent.CompressedInto != cur) {
			break
		}
		if err != nil {
			return nil, err
		}
		seen[p] = true
		before = append([]string{p}, before...)
		cur = p
	}
	after, err := s.followInto(id)
	if err != nil {
		return nil, err
	}
	return append(before, after...), nil
}

// followInto returns id and the sessions its compressed_into links lead
// to, in order.
func (s *Store) followInto(id string) ([]string, error) {
	chain := []string{id}
	seen := map[string]bool{id: true}
	for cur := id; ; {
		sess, err := s.readDocument(cur, false)
		if err != nil {
			if len(chain) > 1 && errors.Is(err, fsstore.ErrNotFound) {
				return chain[:len(chain)-1], nil
			}
			return nil, err
		}
		next := sess.CompressedInto
		if next == "" || seen[next] || fsstore.CheckID("session id", next) != nil {
			return chain, nil
		}
		seen[next] = true
		chain = append(chain, next)
		cur = next
	}
}

// TranscriptSize is the size in bytes of id's transcript (0 when it has
// none): the measure of a history's length in tokens that needs no read.
func (s *Store) TranscriptSize(id string) (int64, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return 0, err
	}
	fi, err := os.Stat(s.logPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
