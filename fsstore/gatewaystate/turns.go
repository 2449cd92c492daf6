package gatewaystate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Key is the record of an Idempotency-Key: the turn the key's first
// request ran, so that a retry with the same key gets that turn's reply and
// runs nothing. It is written, synced, before the turn runs.
type Key struct {
	// KeySHA256 names the key: a key is the client's text, of any bytes
	// and length, so only its digest touches a path.
	KeySHA256 string `json:"key_sha256"`
	// RequestSHA256 is the digest of the request the key first came with:
	// a key sent again with another request is refused, not replayed.
	RequestSHA256 string `json:"request_sha256"`
	// RequestFormat tells which of the request's fields RequestSHA256 is
	// the digest of, as the gateway numbers its formats; a record written
	// before formats were numbered has none (0).
	RequestFormat int    `json:"request_format,omitempty"`
	SessionID     string `json:"session_id"`
	// From is the length of the session's transcript before the turn, and
	// To its length after the turn (0 until the turn's reply is stored): the
	// turn's messages are those between.
	From      int64        `json:"from"`
	To        int64        `json:"to"`
	CreatedAt fsstore.Time `json:"created_at"`
}

// KeyDigest is the digest that names an idempotency key.
func KeyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// checkDigest refuses a digest that is not a SHA-256 in lower-case hex,
// before it names a file.
func checkDigest(what, digest string) error {
	if len(digest) != sha256.Size*2 || strings.Trim(digest, "0123456789abcdef") != "" {
		return fsstore.Invalidf("%s digest %q is not a SHA-256 in hex", what, digest)
	}
	return nil
}

func (g *Store) keysDir() string { return filepath.Join(g.Dir, "keys") }

// GetKey reads the record of key: ErrNotFound when the key is new. A
// record that does not parse is quarantined and reported.
func (g *Store) GetKey(key string) (Key, error) {
	digest := KeyDigest(key)
	k, ok, err := readDoc(g, filepath.Join(g.keysDir(), digest+".json"), "the record of key "+digest, func(k *Key) bool {
		return k.KeySHA256 == digest && k.SessionID != ""
	})
	if err == nil && !ok {
		err = fsstore.NotFoundf("idempotency key not found")
	}
	return k, err
}

// PutKey writes the record of a key (k.KeySHA256 set by KeyDigest),
// atomically and synced: a request acknowledged after it can always be
// replayed. The caller serializes requests with one key.
func (g *Store) PutKey(k Key) error {
	if err := fsstore.CheckID("session id", k.SessionID); err != nil {
		return err
	}
	if err := checkDigest("key", k.KeySHA256); err != nil {
		return err
	}
	if err := fsstore.EnsureDir(g.keysDir()); err != nil {
		return err
	}
	if k.CreatedAt == "" {
		k.CreatedAt = fsstore.TimeOf(g.Now())
	}
	return fsstore.WriteDoc(filepath.Join(g.keysDir(), k.KeySHA256+".json"), &k)
}

// PruneKeys removes the key records written before cutoff (a client
// retries within minutes, not days) and returns how many it removed. A
// record that does not parse is left for fsck.
func (g *Store) PruneKeys(cutoff time.Time) (int, error) {
	entries, err := os.ReadDir(g.keysDir())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		var k Key
		if fsstore.ReadDoc(filepath.Join(g.keysDir(), name), &k) != nil {
			continue
		}
		if at, err := k.CreatedAt.Instant(); err == nil && at.Before(cutoff) {
			if err := os.Remove(filepath.Join(g.keysDir(), name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return n, err
			}
			n++
		}
	}
	if n > 0 {
		return n, fsstore.SyncDir(g.keysDir())
	}
	return 0, nil
}

// SweepKeys is PruneKeys of the records older than lifetime, at most
// once a day (fsstore.SweepDaily): for the keys of sessions append --key,
// which no gateway may be running to prune. Its failures are not the
// caller's.
func (g *Store) SweepKeys(lifetime time.Duration) {
	fsstore.SweepDaily(g.keysDir(), func(now time.Time) { g.PruneKeys(now.Add(-lifetime)) })
}

// Delivery records how much of a session's transcript the gateway has
// sent to a client whole: a reply stored after that was never received,
// so a request that repeats its turn is a retry, not a user saying the
// same thing twice.
type Delivery struct {
	SessionID    string       `json:"session_id"`
	MessageCount int64        `json:"message_count"`
	At           fsstore.Time `json:"at"`
}

func (g *Store) deliveredPath(sid string) string {
	return filepath.Join(g.Dir, "delivered", sid+".jsonl")
}

// legacyDeliveredPath is where builds before the log kept a session's
// delivery record, one document rewritten each turn.
func (g *Store) legacyDeliveredPath(sid string) string {
	return filepath.Join(g.Dir, "delivered", sid+".json")
}

// deliveredCompactAt is the size past which SetDelivered writes the log
// afresh with its new record alone, rather than append: about 40 turns of
// a session, so that the log stays small to read and a new file (which
// costs more than the append itself) is made once in that many turns.
const deliveredCompactAt = 4 << 10

// SetDelivered records that a client received the transcript of session
// sid up to count messages. It is written after the reply was sent, and
// its loss (a power cut right after the send) only makes a repeat of that
// turn count as a retry, which gets the stored reply again and runs
// nothing (invariant 12 forbids running a turn twice, not sending a
// stored reply twice). So it is a cache, written without a sync: a
// process killed loses nothing, and a power cut may leave the log without
// its last records or with a torn last line, which Delivered reads past.
//
// The records of a session are a log (delivered/<session>.jsonl), one
// line appended a turn, not a document replaced: a replace makes a new
// file each turn, whose allocation costs a file system such as ext4 tens
// to hundreds of microseconds of CPU, where an append costs a few. Past
// deliveredCompactAt, or after a torn line, the log is written afresh
// (fsstore.WriteCacheFile) with the new record alone; the first record
// makes the log in place, as an append to a new file, so that a
// conversation's first turn makes one file here, not a temp file and its
// rename (TestDeliveredFirstRecordInPlace). The appends take no
// lock: each is one write of one line to a file opened O_APPEND, and a
// session's deliveries are one after another (its turns are).
func (g *Store) SetDelivered(sid string, count int64) error {
	if err := fsstore.CheckID("session id", sid); err != nil {
		return err
	}
	path := g.deliveredPath(sid)
	line, err := json.Marshal(Delivery{SessionID: sid, MessageCount: count, At: fsstore.TimeOf(g.Now())})
	if err != nil {
		return err
	}
	line = append(line, '\n')
	f, err := fsstore.OpenFile(path, os.O_RDWR|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		if err := fsstore.EnsureDir(filepath.Dir(path)); err != nil {
			return err
		}
		// The first record of the log: the document an earlier build
		// kept, if any, is replaced by it. The log is made in place (a
		// torn first line is read past, as any torn line).
		os.Remove(g.legacyDeliveredPath(sid))
		var moved string
		if f, moved, err = fsstore.OpenAppendUncommitted(path, g.Now()); err != nil {
			return err
		}
		if moved != "" {
			g.Warn(fmt.Sprintf("%s: torn tail moved aside to %s", path, moved))
		}
	}
	if err != nil {
		return fsstore.PathErr("open", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fsstore.PathErr("open", path, err)
	}
	if !endsLine(f, fi.Size()) {
		g.Warn(fmt.Sprintf("%s: a torn last line (a power cut's): the log is written afresh", path))
		return fsstore.WriteCacheFile(path, line)
	}
	if fi.Size() >= deliveredCompactAt {
		return fsstore.WriteCacheFile(path, line)
	}
	if _, err := f.Write(line); err != nil {
		return fsstore.PathErr("append to", path, err)
	}
	return nil
}

// endsLine reports whether the first size bytes of f are empty or end
// with a newline: whether a line appended there stands on its own.
func endsLine(f *os.File, size int64) bool {
	if size == 0 {
		return true
	}
	last := make([]byte, 1)
	_, err := f.ReadAt(last, size-1)
	return err == nil && last[0] == '\n'
}

// Delivered returns how many messages of session sid a client received
// whole: 0 when nothing was recorded. It reads the log's last complete
// line (a torn one after it, what a power cut may leave, is passed over),
// or, when there is no log, the document of an earlier build. An
// unreadable record counts as 0, so a repeat counts as a retry: a
// document is quarantined, a log's line warned of, and neither is
// returned as an error, which would fail the request that asked.
func (g *Store) Delivered(sid string) (int64, error) {
	if err := fsstore.CheckID("session id", sid); err != nil {
		return 0, err
	}
	path := g.deliveredPath(sid)
	f, err := fsstore.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return g.legacyDelivered(sid)
	}
	if err != nil {
		return 0, fsstore.PathErr("open", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fsstore.PathErr("open", path, err)
	}
	line, off, err := fsstore.LastLine(f, fi.Size())
	if err != nil || line == nil {
		return 0, err
	}
	var d Delivery
	if err := json.Unmarshal(line, &d); err != nil || d.SessionID != sid {
		g.Warn(fmt.Sprintf("the delivery of session %s counts as none: %s: the record at offset %d is not one of its deliveries", sid, path, off))
		return 0, nil
	}
	return d.MessageCount, nil
}

func (g *Store) legacyDelivered(sid string) (int64, error) {
	d, _, err := readDoc(g, g.legacyDeliveredPath(sid), "the delivery of session "+sid, func(d *Delivery) bool { return d.SessionID == sid })
	if errors.As(err, new(*fsstore.CorruptError)) {
		g.Warn(fmt.Sprintf("the delivery of session %s counts as none: %v", sid, err))
		return 0, nil
	}
	return d.MessageCount, err
}

// Successor records the session that replaced one the gateway ended (a
// suspended session, an expired resume_pending one), so that a client
// that still names the old session reaches the new one instead of a new
// session at every request.
type Successor struct {
	SessionID string       `json:"session_id"`
	Successor string       `json:"successor_session_id"`
	At        fsstore.Time `json:"at"`
}

func (g *Store) successorPath(sid string) string {
	return filepath.Join(g.Dir, "successors", sid+".json")
}

// SetSuccessor records that session next replaced session old, synced:
// it is written before next's first turn.
func (g *Store) SetSuccessor(old, next string) error {
	for _, id := range []string{old, next} {
		if err := fsstore.CheckID("session id", id); err != nil {
			return err
		}
	}
	if err := fsstore.EnsureDir(filepath.Dir(g.successorPath(old))); err != nil {
		return err
	}
	return fsstore.WriteDoc(g.successorPath(old), &Successor{SessionID: old, Successor: next, At: fsstore.TimeOf(g.Now())})
}

// SuccessorOf returns the session that replaced old: "" when none did. A
// record that does not parse is quarantined and reported.
func (g *Store) SuccessorOf(old string) (string, error) {
	if err := fsstore.CheckID("session id", old); err != nil {
		return "", err
	}
	s, _, err := readDoc(g, g.successorPath(old), "the successor of session "+old, func(s *Successor) bool {
		return s.SessionID == old && fsstore.CheckID("session id", s.Successor) == nil
	})
	return s.Successor, err
}

// History is an entry of the history index: the session whose stored
// history, at a turn's end, has Digest (of the conversation as its client
// sees it), and the transcript's length then. A client that re-sends its
// whole conversation and names none is found by the digest of what it
// sends before its new messages. The index is a cache: an entry is
// checked against the transcript it names before it is used (LastTS).
type History struct {
	Digest       string `json:"digest"`
	SessionID    string `json:"session_id"`
	MessageCount int64  `json:"message_count"`
	// LastTS is the ts of the transcript's message MessageCount: a
	// transcript rewritten since (save --force, import --force) has
	// other times there, and the entry is not used.
	LastTS fsstore.Time `json:"last_ts"`
	// Request, in the entry of a conversation's opening messages, is the
	// digest of the request whose turn stored them, as the gateway
	// computes it: only the same request is that turn's retry.
	Request string       `json:"request,omitempty"`
	At      fsstore.Time `json:"at"`
}

// PutHistory records that session h.SessionID had, after a turn,
// h.MessageCount messages, the last stored at h.LastTS, whose conversation
// has digest h.Digest (a SHA-256 in hex); At is set here. It is a cache,
// appended without a sync to the log of its digest's shard (history.go):
// a power cut may lose recent entries, which fsck --repair writes again
// from the transcripts.
func (g *Store) PutHistory(h History) error {
	if err := checkDigest("history", h.Digest); err != nil {
		return err
	}
	if err := fsstore.CheckID("session id", h.SessionID); err != nil {
		return err
	}
	h.At = fsstore.TimeOf(g.Now())
	line, err := json.Marshal(&h)
	if err != nil {
		return err
	}
	return g.appendHistory(h.Digest, append(line, '\n'))
}

// GetHistory returns the entry of digest: ok is false when there is none.
// The latest entry of the digest's shard is it; without one, an earlier
// build's document (history/<digest>.json), which is quarantined and
// reported when it does not parse.
func (g *Store) GetHistory(digest string) (h History, ok bool, err error) {
	if err := checkDigest("history", digest); err != nil {
		return History{}, false, err
	}
	if h, ok, err := g.lookupHistory(digest); ok || err != nil {
		return h, ok, err
	}
	return readDoc(g, g.legacyHistoryPath(digest), "the history entry "+digest, func(h *History) bool {
		return h.Digest == digest && fsstore.CheckID("session id", h.SessionID) == nil
	})
}
