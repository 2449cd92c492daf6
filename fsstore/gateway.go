package fsstore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// GatewayStore keeps the state of the HTTP gateway of one profile in Dir
// (<profile>/gateway):
//
//	responses/<resp_id>.json      a stored response, written once
//	responses/.index.jsonl        the stored responses in the order they were
//	                              stored, one {"response_id","created_at"} a
//	                              line: eviction reads it, not the documents
//	responses/.index.lock         serializes writers of the index
//	conversations/<slug>.json     a conversation: {conversation, session_id,
//	                              response_id, message_count, …}
//	conversations/<slug>.lock     serializes writers of that conversation
//	state.json                    the current or last run: pid, addr,
//	                              started_at, stopped_at, …
//	clean_shutdown                written when a run stopped with every turn
//	                              finished; removed when the next run starts
//	serve.lock                    held by the running gateway, for its life
//
// The response documents are the truth for GET; the index is a cache of
// their order. It is appended to after the document is written, so a crash
// between the two leaves a document the index lacks: such documents are
// found when the index is first loaded (a directory listing, no document is
// read) and evicted first.
type GatewayStore struct {
	Dir         string
	LockTimeout time.Duration
	Now         func() time.Time
	Warn        func(string)

	mu  sync.Mutex
	idx *responseIndex // nil until loaded; reloaded when the file changed under us
}

// NewGatewayStore returns the gateway store of the profile whose directory
// is profileDir. Nothing is created until the first write.
func NewGatewayStore(profileDir string, lockTimeout time.Duration, warn func(string)) *GatewayStore {
	return &GatewayStore{Dir: filepath.Join(profileDir, "gateway"), LockTimeout: lockTimeout, Now: time.Now, Warn: warn}
}

func (g *GatewayStore) responsesDir() string     { return filepath.Join(g.Dir, "responses") }
func (g *GatewayStore) conversationsDir() string { return filepath.Join(g.Dir, "conversations") }
func (g *GatewayStore) responsePath(id string) string {
	return filepath.Join(g.responsesDir(), id+".json")
}
func (g *GatewayStore) indexPath() string     { return filepath.Join(g.responsesDir(), ".index.jsonl") }
func (g *GatewayStore) indexLockPath() string { return filepath.Join(g.responsesDir(), ".index.lock") }
func (g *GatewayStore) statePath() string     { return filepath.Join(g.Dir, "state.json") }

// CleanShutdownPath is the marker a run writes when it stopped with every
// turn finished.
func (g *GatewayStore) CleanShutdownPath() string { return filepath.Join(g.Dir, "clean_shutdown") }

// ServeLockPath is the lock the running gateway holds for its lifetime.
func (g *GatewayStore) ServeLockPath() string { return filepath.Join(g.Dir, "serve.lock") }

// NewResponseID returns a new response id: "resp_", the time to the
// microsecond and 8 random bytes, e.g.
// resp_20261121_020734_123456_a1b2c3d4e5f60718. A listing sorts by
// creation (the index can be rebuilt from one), and a gateway storing many
// responses a second needs more than NewID's 3 random bytes.
func NewResponseID(now time.Time) string {
	ts := strings.Replace(now.UTC().Format("20060102_150405.000000"), ".", "_", 1)
	return "resp_" + ts + "_" + randomHex(8)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// GatewayUsage is the token count of a stored response, as the Responses
// API names it.
type GatewayUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// StoredResponse is the document of one response of the Responses API.
// Every field is always present in JSON.
type StoredResponse struct {
	ID                 string          `json:"id"`
	SessionID          string          `json:"session_id"`
	CreatedAt          string          `json:"created_at"`
	Model              string          `json:"model"`
	Status             string          `json:"status"`
	OutputText         string          `json:"output_text"`
	Output             json.RawMessage `json:"output"` // the API's output items, as returned
	Usage              *GatewayUsage   `json:"usage"`
	PreviousResponseID string          `json:"previous_response_id"`
	Conversation       string          `json:"conversation"`
	Instructions       string          `json:"instructions"`
	// MessageCount is the length of the session's transcript once this
	// response's reply was stored: a request that continues from this
	// response continues from there.
	MessageCount int64 `json:"message_count"`
}

// Conversation maps a client's conversation slug to the session that holds
// it and the last response in it. It outlives the responses it names.
type Conversation struct {
	Conversation string `json:"conversation"`
	SessionID    string `json:"session_id"`
	ResponseID   string `json:"response_id"`
	MessageCount int64  `json:"message_count"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
}

// GatewayState describes the current run of the gateway, or the last one.
type GatewayState struct {
	PID       int    `json:"pid"`
	Addr      string `json:"addr"`
	StartedAt string `json:"started_at"`
	StoppedAt string `json:"stopped_at"`
	// DrainTimedOut says the last run stopped before its turns in flight
	// finished; InterruptedSessions are the sessions it left resume_pending.
	DrainTimedOut       bool     `json:"drain_timed_out"`
	InterruptedSessions []string `json:"interrupted_sessions"`
	Version             string   `json:"version"`
}

// PutResponse stores r (its ID set by the caller) and then evicts the oldest
// stored responses beyond max (max <= 0 keeps them all). It returns the ids
// it evicted.
func (g *GatewayStore) PutResponse(r StoredResponse, max int) ([]string, error) {
	if err := CheckID("response id", r.ID); err != nil {
		return nil, err
	}
	if err := EnsureDir(g.responsesDir()); err != nil {
		return nil, err
	}
	if r.Output == nil {
		r.Output = json.RawMessage("[]")
	}
	if err := writeDoc(g.responsePath(r.ID), &r); err != nil {
		return nil, err
	}
	// g.mu first: writers in this process queue on it instead of polling
	// the flock, which is then only contended by other processes.
	g.mu.Lock()
	defer g.mu.Unlock()
	unlock, err := Lock(g.indexLockPath(), g.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	idx, err := g.loadIndexLocked(r.ID)
	if err != nil {
		return nil, err
	}
	line, _ := json.Marshal(indexEntry{ResponseID: r.ID, CreatedAt: r.CreatedAt})
	if err := idx.append(g.indexPath(), append(line, '\n'), g.Now()); err != nil {
		g.idx = nil
		return nil, err
	}
	idx.ids = append(idx.ids, r.ID)
	if max <= 0 || len(idx.ids) <= max {
		return nil, nil
	}
	var evicted []string
	for _, id := range idx.ids[idx.evicted : len(idx.ids)-max] {
		err := os.Remove(g.responsePath(id))
		if err == nil {
			evicted = append(evicted, id)
		} else if !errors.Is(err, os.ErrNotExist) {
			return evicted, fmt.Errorf("evict response %s: %w", id, err)
		}
	}
	// The removes are not synced here: the next document written to this
	// directory syncs it. A crash before that brings back at most the
	// documents this call evicted; the index still lists them first, and
	// the next store evicts them again.
	idx.evicted = len(idx.ids) - max
	// The index keeps the names of evicted responses until it is twice
	// the limit, then is rewritten with the live ones only.
	if len(idx.ids) >= 2*max+64 {
		if err := g.rewriteIndexLocked(idx.ids[idx.evicted:]); err != nil {
			return evicted, err
		}
	}
	return evicted, nil
}

type indexEntry struct {
	ResponseID string `json:"response_id"`
	CreatedAt  string `json:"created_at"`
}

// responseIndex is the index in memory: the ids in the order they were
// stored, how many of the first are known to be evicted, and the size of
// the file it was read from (a different size means another writer: read
// it again).
type responseIndex struct {
	ids     []string
	evicted int
	size    int64
}

func (x *responseIndex) append(path string, line []byte, now time.Time) error {
	f, _, err := OpenAppend(path, now)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := AppendLines(f, [][]byte{line}); err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	x.size = fi.Size()
	return nil
}

// loadIndexLocked returns the index, reading it when it is not in memory or
// the file changed. A missing index is rebuilt from the directory; one with
// a corrupt line is quarantined and rebuilt. Documents the index lacks (a
// crash between the document and its index line) are put first, so they go
// first; adding is the document being stored, not yet indexed. The caller
// holds the index lock and g.mu.
func (g *GatewayStore) loadIndexLocked(adding string) (*responseIndex, error) {
	fi, err := os.Stat(g.indexPath())
	if err == nil && g.idx != nil && fi.Size() == g.idx.size {
		return g.idx, nil
	}
	g.idx = nil
	var ids []string
	if err == nil {
		ids, err = g.readIndex()
		var corrupt *CorruptError
		if errors.As(err, &corrupt) {
			qerr := quarantine(g.indexPath(), g.Now().Unix(), err)
			g.Warn(qerr.Error() + "; rebuilding the response index from the documents")
			ids, err = nil, nil
		}
	} else if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	docs, err := g.responseIDsOnDisk()
	if err != nil {
		return nil, err
	}
	indexed := make(map[string]bool, len(ids))
	for _, id := range ids {
		indexed[id] = true
	}
	var missing []string
	for _, id := range docs {
		if !indexed[id] && id != adding {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 || fi == nil {
		ids = append(missing, ids...)
		if err := g.rewriteIndexLocked(ids); err != nil {
			return nil, err
		}
		return g.idx, nil
	}
	g.idx = &responseIndex{ids: ids, size: fi.Size()}
	return g.idx, nil
}

func (g *GatewayStore) readIndex() ([]string, error) {
	f, err := os.Open(g.indexPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var ids []string
	torn, err := ScanLines(f, fi.Size(), func(line []byte, off int64) error {
		var e indexEntry
		if err := json.Unmarshal(line, &e); err != nil || CheckID("response id", e.ResponseID) != nil {
			return &CorruptError{Path: f.Name(), Offset: off, Err: fmt.Errorf("not an index entry: %q", line)}
		}
		ids = append(ids, e.ResponseID)
		return nil
	})
	if torn != nil {
		g.Warn(torn.String())
	}
	return ids, err
}

// responseIDsOnDisk lists the stored response documents by name, oldest
// first (ids are time-ordered to the second).
func (g *GatewayStore) responseIDsOnDisk() ([]string, error) {
	ids, err := docIDs(g.responsesDir())
	slices.Reverse(ids)
	return ids, err
}

func (g *GatewayStore) rewriteIndexLocked(ids []string) error {
	var b bytes.Buffer
	for _, id := range ids {
		line, _ := json.Marshal(indexEntry{ResponseID: id})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := EnsureDir(g.responsesDir()); err != nil {
		return err
	}
	if err := WriteFileAtomic(g.indexPath(), b.Bytes()); err != nil {
		g.idx = nil
		return err
	}
	g.idx = &responseIndex{ids: append([]string(nil), ids...), size: int64(b.Len())}
	return nil
}

// StoredResponseCount is how many response documents are stored (a
// directory listing; no document is read).
func (g *GatewayStore) StoredResponseCount() (int, error) {
	ids, err := g.responseIDsOnDisk()
	return len(ids), err
}

// GetResponse reads the stored response id. An unknown or evicted id is
// ErrNotFound; a document that does not parse is quarantined and reported.
func (g *GatewayStore) GetResponse(id string) (StoredResponse, error) {
	if err := CheckID("response id", id); err != nil {
		return StoredResponse{}, err
	}
	var r StoredResponse
	err := readDoc(g.responsePath(id), &r)
	if errors.Is(err, os.ErrNotExist) {
		return StoredResponse{}, NotFoundf("response %s not found", id)
	}
	if err == nil && r.ID != id {
		err = &CorruptError{Path: g.responsePath(id), Err: fmt.Errorf("document has id %q, not %q", r.ID, id)}
	}
	var corrupt *CorruptError
	if errors.As(err, &corrupt) {
		return StoredResponse{}, quarantine(g.responsePath(id), g.Now().Unix(), err)
	}
	return r, err
}

// LockConversation takes the writer lock of conversation slug. The caller
// holds it across reading the mapping, the turn and writing it back, so one
// conversation never gets two sessions.
func (g *GatewayStore) LockConversation(slug string) (func(), error) {
	if err := CheckID("conversation", slug); err != nil {
		return nil, err
	}
	if err := EnsureDir(g.conversationsDir()); err != nil {
		return nil, err
	}
	return Lock(filepath.Join(g.conversationsDir(), slug+".lock"), g.LockTimeout)
}

// GetConversation reads the mapping of slug: ErrNotFound when the
// conversation is new. A document that does not parse is quarantined and
// reported; it is never replaced by an empty mapping.
func (g *GatewayStore) GetConversation(slug string) (Conversation, error) {
	if err := CheckID("conversation", slug); err != nil {
		return Conversation{}, err
	}
	path := filepath.Join(g.conversationsDir(), slug+".json")
	var c Conversation
	err := readDoc(path, &c)
	if errors.Is(err, os.ErrNotExist) {
		return Conversation{}, NotFoundf("conversation %s not found", slug)
	}
	if err == nil && (c.Conversation != slug || c.SessionID == "") {
		err = &CorruptError{Path: path, Err: fmt.Errorf("document is not the mapping of conversation %q", slug)}
	}
	var corrupt *CorruptError
	if errors.As(err, &corrupt) {
		return Conversation{}, quarantine(path, g.Now().Unix(), err)
	}
	return c, err
}

// PutConversation writes the mapping of c.Conversation, atomically. The
// caller holds LockConversation.
func (g *GatewayStore) PutConversation(c Conversation) error {
	if err := CheckID("conversation", c.Conversation); err != nil {
		return err
	}
	if err := CheckID("session id", c.SessionID); err != nil {
		return err
	}
	if err := EnsureDir(g.conversationsDir()); err != nil {
		return err
	}
	now := Timestamp(g.Now())
	if c.CreatedAt == "" {
		c.CreatedAt = now
	}
	c.UpdatedAt = now
	return writeDoc(filepath.Join(g.conversationsDir(), c.Conversation+".json"), &c)
}

// ReadState reads state.json; ok is false when no run was ever recorded. A
// state.json that does not parse is quarantined and reported as an error.
func (g *GatewayStore) ReadState() (st GatewayState, ok bool, err error) {
	err = readDoc(g.statePath(), &st)
	if errors.Is(err, os.ErrNotExist) {
		return GatewayState{}, false, nil
	}
	var corrupt *CorruptError
	if errors.As(err, &corrupt) {
		return GatewayState{}, false, quarantine(g.statePath(), g.Now().Unix(), err)
	}
	return st, err == nil, err
}

// WriteState writes state.json atomically. Only the holder of the serve
// lock writes it.
func (g *GatewayStore) WriteState(st GatewayState) error {
	if err := EnsureDir(g.Dir); err != nil {
		return err
	}
	if st.InterruptedSessions == nil {
		st.InterruptedSessions = []string{}
	}
	return writeDoc(g.statePath(), &st)
}

// CleanShutdown reports whether the last run left the clean-shutdown marker.
func (g *GatewayStore) CleanShutdown() (bool, error) {
	_, err := os.Lstat(g.CleanShutdownPath())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// SetCleanShutdown writes the marker (clean) or removes it, and commits
// the change to the directory.
func (g *GatewayStore) SetCleanShutdown(clean bool, at time.Time) error {
	if clean {
		if err := EnsureDir(g.Dir); err != nil {
			return err
		}
		return WriteFileAtomic(g.CleanShutdownPath(), []byte(Timestamp(at)+"\n"))
	}
	err := os.Remove(g.CleanShutdownPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return SyncDir(g.Dir)
}

// LockServe takes the serve lock, waiting at most timeout: the gateway of a
// profile runs once. The caller holds it until it exits.
func (g *GatewayStore) LockServe(timeout time.Duration) (func(), error) {
	if err := EnsureDir(g.Dir); err != nil {
		return nil, err
	}
	return Lock(g.ServeLockPath(), timeout)
}

// Serving reports whether a process holds the serve lock. It tries the lock
// without waiting and drops it at once; a gateway starting at that moment
// waits for it (LockServe's timeout).
func (g *GatewayStore) Serving() (bool, error) {
	if _, err := os.Stat(g.ServeLockPath()); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	unlock, err := Lock(g.ServeLockPath(), 0)
	var timeout *LockTimeoutError
	if errors.As(err, &timeout) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	unlock()
	return false, nil
}

// ActiveSince returns the sessions with activity (a write of any kind) at
// or after cutoff, most recent first. It reads the activity catalog
// backwards and stops a little before cutoff (appends of concurrent writers
// may land slightly out of order), so its cost follows the number of
// recently active sessions, not the profile's size.
func (s *SessionStore) ActiveSince(cutoff time.Time) ([]Session, error) {
	f, size, err := s.openCatalog()
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	stop := cutoff.Add(-10 * time.Second)
	seen := map[string]bool{}
	var out []Session
	err = eachLineBackward(f, size, func(line []byte) bool {
		var e catalogEntry
		if json.Unmarshal(line, &e) != nil || CheckID("session id", e.SessionID) != nil {
			return true
		}
		at, err := time.Parse(time.RFC3339Nano, e.At)
		if err != nil {
			return true
		}
		if at.Before(stop) {
			return false
		}
		if seen[e.SessionID] || at.Before(cutoff) {
			return true
		}
		seen[e.SessionID] = true
		sess, err := s.readSession(e.SessionID, false)
		if err != nil {
			var corrupt *CorruptError
			if errors.As(err, &corrupt) {
				s.Warn(err.Error())
			}
			return true
		}
		out = append(out, sess)
		return true
	})
	return out, err
}

// MarkInterrupted records that a restart interrupted session id: its
// interrupt_count grows by one and it becomes resume_pending with reason,
// or suspended once the count reaches limit (a session that every restart
// interrupts is a stuck loop). An ended or suspended session is left as
// it is.
func (s *SessionStore) MarkInterrupted(id, reason string, limit int) (Session, error) {
	return s.update(id, func(sess *Session) error {
		if sess.State == StateEnded || sess.State == StateSuspended {
			return nil
		}
		sess.InterruptCount++
		sess.ResumeReason = reason
		if limit > 0 && sess.InterruptCount >= limit {
			sess.State = StateSuspended
			sess.ResumePendingAt = ""
			return nil
		}
		sess.State = StateResumePending
		sess.ResumePendingAt = Timestamp(s.Now())
		return nil
	})
}

// CopyMessages returns msgs ready to be appended to another transcript:
// seq cleared (the store numbers them), ts kept, so a fork keeps when each
// message was said.
func CopyMessages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.Seq = 0
		out[i] = m
	}
	return out
}
