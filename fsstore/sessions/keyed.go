package sessions

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/hermes/hermes/fsstore"
)

// KeyRecord is the record of an append's idempotency key: the session,
// the digest of the messages the key first came with, and the length of
// the transcript before the append (From) and after it (To, 0 until the
// append is known to be stored).
type KeyRecord struct {
	SessionID string
	Digest    string
	From, To  int64
}

// KeyRecords keeps the records of idempotency keys: the gateway's store
// of its Idempotency-Key records (gatewaystate), which keeps them for a
// day. A record written is synced.
type KeyRecords interface {
	GetKey(key string) (KeyRecord, bool, error)
	PutKey(key string, r KeyRecord) error
}

// AppendKeyed is Append with an idempotency key: the messages are stored
// at most once for key, whatever the number of calls, so that a caller
// may retry an append whose outcome it does not know. Under the
// session's lock, a key seen before with other messages is ErrInvalid; a key whose append is known to be stored
// returns that append's count and again=true, writing nothing. Otherwise
// the key's record, saying where the append begins, is written (synced)
// before the append and completed after it. A record that says an append
// began but not that it ended (its outcome was unknown) is settled by
// the transcript: the lines after where it began are the messages (it
// was stored: again=true), or the first of them (it was stopped between
// its lines: the rest are appended now), or not (they are appended now).
func (s *Store) AppendKeyed(id, key string, msgs []Message, keys KeyRecords) (count int64, again bool, err error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return 0, false, err
	}
	digest := keyDigest(msgs)
	// The key's record is read under the session's lock, so that two
	// calls with one key never both find it new.
	unlock, err := s.lock(id)
	if err != nil {
		return 0, false, err
	}
	sess, err := s.readDocument(id, true)
	if err != nil {
		unlock()
		return 0, false, err
	}
	rec, found, err := keys.GetKey(key)
	switch {
	case err != nil:
		unlock()
		return 0, false, err
	case found && (rec.SessionID != id || rec.Digest != digest):
		unlock()
		return 0, false, fsstore.Invalidf("key %q was used before for another append (to session %s)", key, rec.SessionID)
	case found && rec.To > 0:
		unlock()
		return rec.To, true, nil
	}
	rest := msgs
	if found {
		stored, err := s.storedAt(id, rec.From, msgs)
		if err != nil || stored == len(msgs) {
			unlock()
			if err == nil {
				rec.To = rec.From + int64(len(msgs))
				if perr := keys.PutKey(key, rec); perr != nil {
					s.Warn(fmt.Sprintf("key %q: its append is stored, but its record was not completed: %v", key, perr))
				}
			}
			return rec.To, err == nil, err
		}
		// The first append was stopped between its lines (each is a
		// write of its own): the rest is appended, after the lines any
		// other writer appended since, and the record keeps where the
		// append began.
		rest = msgs[stored:]
	}
	if len(rest) == len(msgs) {
		from, err := s.transcriptCount(id)
		if err == nil {
			rec = KeyRecord{SessionID: id, Digest: digest, From: from}
			err = keys.PutKey(key, rec)
		}
		if err != nil {
			unlock()
			return 0, false, err
		}
	}
	seq, due, err := s.appendLocked(&sess, rest)
	unlock()
	if due {
		s.compactCatalogIfDue()
	}
	if err != nil {
		return 0, false, err
	}
	rec.To = seq
	if perr := keys.PutKey(key, rec); perr != nil {
		// The record says the append began: a retry finds its lines.
		s.Warn(fmt.Sprintf("key %q: the append is stored, but its record was not completed: %v", key, perr))
	}
	return seq, false, nil
}

// storedAt is how many of msgs the lines of id's transcript after seq
// from begin with, as a keyed append would have stored them: all of them
// when the append was stored, fewer when it was stopped between lines.
func (s *Store) storedAt(id string, from int64, msgs []Message) (int, error) {
	tail, err := s.Tail(id, func(m Message) bool { return m.Seq <= from+1 })
	if err != nil {
		return 0, err
	}
	var after []Message
	for _, m := range tail {
		if m.Seq > from {
			after = append(after, m)
		}
	}
	n := 0
	for n < len(msgs) && n < len(after) && keyDigest(after[n:n+1]) == keyDigest(msgs[n:n+1]) {
		n++
	}
	return n, nil
}

// keyDigest is the digest of what msgs say, without their seq and ts,
// which the store gives: what a key's messages are compared by.
func keyDigest(msgs []Message) string {
	h := sha256.New()
	for _, m := range msgs {
		m.Seq, m.TS = 0, ""
		b, _ := m.MarshalJSON()
		h.Write(bytes.TrimSpace(b))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
