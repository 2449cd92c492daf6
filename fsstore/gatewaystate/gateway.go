package gatewaystate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Store keeps the state of the HTTP gateway of one profile in Dir
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
//	keys/<sha256>.json            the turn of an Idempotency-Key
//	delivered/<session>.jsonl     how much of a session a client received,
//	                              a record a turn (an earlier build's
//	                              delivered/<session>.json is read until
//	                              the first)
//	successors/<session>.json     the session that replaced one the gateway ended
//	history/<xx>.jsonl            the session a conversation's history is in,
//	                              a line an entry, in the shard of its
//	                              digest's first two hex digits (history.go)
//	history/.lock                 serializes writers of the shards
//
// The response documents are what GET reads; the index is a cache of
// their order. It is appended to after the document is written, so a crash
// between the two leaves a document the index lacks: such documents are
// found when the index is first loaded (a directory listing, no document is
// read) and evicted first. A document whose id names its session is itself
// a cache of that session's transcript (CacheResponse).
type Store struct {
	Dir         string
	LockTimeout time.Duration
	Now         func() time.Time
	Warn        func(string)

	mu  sync.Mutex
	idx *responseIndex // nil until loaded; reloaded when the file changed under us

	histMu sync.Mutex
	hist   map[string]*historyShard // the history index's shards read, by name (history.go)

	convMu sync.Mutex
	cached map[string]bool // the mappings CacheConversation wrote, not synced since
}

// NewStore returns the gateway store of the profile whose directory
// is profileDir. Nothing is created until the first write.
func NewStore(profileDir string, lockTimeout time.Duration, warn func(string)) *Store {
	return &Store{Dir: filepath.Join(profileDir, "gateway"), LockTimeout: lockTimeout, Now: time.Now, Warn: warn}
}

func (g *Store) responsesDir() string     { return filepath.Join(g.Dir, "responses") }
func (g *Store) conversationsDir() string { return filepath.Join(g.Dir, "conversations") }
func (g *Store) responsePath(id string) string {
	return filepath.Join(g.responsesDir(), id+".json")
}
func (g *Store) indexPath() string     { return filepath.Join(g.responsesDir(), ".index.jsonl") }
func (g *Store) indexLockPath() string { return filepath.Join(g.responsesDir(), ".index.lock") }
func (g *Store) statePath() string     { return filepath.Join(g.Dir, "state.json") }

// CleanShutdownPath is the marker a run writes when it stopped with every
// turn finished.
func (g *Store) CleanShutdownPath() string { return filepath.Join(g.Dir, "clean_shutdown") }

// ServeLockPath is the lock the running gateway holds for its lifetime.
func (g *Store) ServeLockPath() string { return filepath.Join(g.Dir, "serve.lock") }

// Usage is the token count of a stored response, as the Responses
// API names it.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Response is the document of one response of the Responses API.
// Every field is always present in JSON, but those of Params, each only
// when the request sent it.
type Response struct {
	ID                 string          `json:"id"`
	SessionID          string          `json:"session_id"`
	CreatedAt          fsstore.Time    `json:"created_at"`
	Model              string          `json:"model"`
	Status             string          `json:"status"`
	OutputText         string          `json:"output_text"`
	Output             json.RawMessage `json:"output"` // the API's output items, as returned
	Usage              *Usage          `json:"usage"`
	PreviousResponseID string          `json:"previous_response_id"`
	Conversation       string          `json:"conversation"`
	Instructions       string          `json:"instructions"`
	// MessageCount is the length of the session's transcript once this
	// response's reply was stored: a request that continues from this
	// response continues from there.
	MessageCount int64 `json:"message_count"`
	// Params are the request's parameters that the API's response object
	// reports, as the client sent them; a document written before they
	// were kept has none, and reports the API's defaults.
	Params ResponseParams `json:"params"`
}

// ResponseParams are a Responses request's parameters as its response
// reports them: each the request's JSON value, as sent.
type ResponseParams struct {
	Temperature       json.RawMessage `json:"temperature,omitempty"`
	TopP              json.RawMessage `json:"top_p,omitempty"`
	MaxOutputTokens   json.RawMessage `json:"max_output_tokens,omitempty"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls,omitempty"`
	Tools             json.RawMessage `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	Text              json.RawMessage `json:"text,omitempty"`
	Reasoning         json.RawMessage `json:"reasoning,omitempty"`
	User              json.RawMessage `json:"user,omitempty"`
}

// Conversation maps a client's conversation slug to the session that holds
// it. It is written when that session changes, never after a turn: the
// turns and their responses are the session's (a mapping written before
// that held response_id and message_count, which nothing reads).
type Conversation struct {
	Conversation string       `json:"conversation"`
	SessionID    string       `json:"session_id"`
	CreatedAt    fsstore.Time `json:"created_at"`
	UpdatedAt    fsstore.Time `json:"updated_at"`
}

// State describes the current run of the gateway, or the last one.
type State struct {
	// Host is the host the run is on (fsstore.ThisHost), where PID means
	// something; none in a state written before hosts were recorded.
	Host      string       `json:"host"`
	PID       int          `json:"pid"`
	Addr      string       `json:"addr"`
	StartedAt fsstore.Time `json:"started_at"`
	StoppedAt fsstore.Time `json:"stopped_at"`
	// DrainTimedOut says the last run stopped before its turns in flight
	// finished; InterruptedSessions are the sessions it left resume_pending.
	DrainTimedOut       bool     `json:"drain_timed_out"`
	InterruptedSessions []string `json:"interrupted_sessions"`
	Version             string   `json:"version"`
}

// Process names the run's process in messages: its pid, and its host
// when that is another one, where the pid is not this host's to look up.
// Whether a gateway runs is never judged by its pid: the serve lock says.
func (st State) Process() string {
	if st.Host == "" || st.Host == fsstore.ThisHost() {
		return fmt.Sprintf("pid %d", st.PID)
	}
	return fmt.Sprintf("pid %d on host %s", st.PID, st.Host)
}

// PutResponse stores r (its ID set by the caller), synced with its
// directory, and then evicts the oldest stored responses beyond max (max
// <= 0 keeps them all). It returns the ids it evicted.
func (g *Store) PutResponse(r Response, max int) ([]string, error) {
	return g.putResponse(r, max, true)
}

// CacheResponse is PutResponse for a response whose id names its session
// (ResponseSession) and whose reply's line in that session's transcript
// holds what the document holds beyond the reply: the document is then a
// cache, written without a sync. A crash that loses it (or leaves it
// empty) leaves a response that the transcript rebuilds (RestoreResponse),
// unless it was evicted meanwhile (Evicted).
func (g *Store) CacheResponse(r Response, max int) ([]string, error) {
	if sid := ResponseSession(r.ID); sid == "" || sid != r.SessionID {
		return nil, fsstore.Invalidf("response id %s does not name its session %s", r.ID, r.SessionID)
	}
	return g.putResponse(r, max, false)
}

// ResponseSession is the session a response id names: "resp_", the time to
// the microsecond, 8 random bytes in hex, then "_" and the session id (e.g.
// resp_20261121_020734_123456_a1b2c3d4e5f60718_20261121_020700_a1b2c3). ""
// for an id of the form before (no session), or one that is not an id.
func ResponseSession(id string) string {
	const head = len("resp_20261121_020734_123456_a1b2c3d4e5f60718")
	if len(id) <= head+1 || id[head] != '_' || !strings.HasPrefix(id, "resp_") || fsstore.CheckID("response id", id) != nil {
		return ""
	}
	sid := id[head+1:]
	if fsstore.CheckID("session id", sid) != nil {
		return ""
	}
	return sid
}

func (g *Store) putResponse(r Response, max int, sync bool) ([]string, error) {
	if err := fsstore.CheckID("response id", r.ID); err != nil {
		return nil, err
	}
	if err := fsstore.EnsureDir(g.responsesDir()); err != nil {
		return nil, err
	}
	if r.Output == nil {
		r.Output = json.RawMessage("[]")
	}
	if err := g.writeResponse(r, sync); err != nil {
		return nil, err
	}
	// g.mu first: writers in this process queue on it instead of polling
	// the flock, which is then only contended by other processes.
	g.mu.Lock()
	defer g.mu.Unlock()
	unlock, err := fsstore.Lock(g.indexLockPath(), g.LockTimeout)
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
	// The removes are not synced here: the next document written synced
	// to this directory syncs it, or the filesystem's own commit. A crash
	// before that brings back documents evicted since; the index still
	// lists them first, and the next store evicts them again.
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

func (g *Store) writeResponse(r Response, sync bool) error {
	if sync {
		return fsstore.WriteDoc(g.responsePath(r.ID), &r)
	}
	b, err := fsstore.EncodeDoc(g.responsePath(r.ID), &r)
	if err != nil {
		return err
	}
	return fsstore.WriteCacheFile(g.responsePath(r.ID), b)
}

// Evicted returns which of ids, responses whose documents are missing,
// were evicted, with at most max kept (max <= 0: none is). The responses
// stored are taken to be those the index lists, in its order, with those
// of ids it does not list each put after the last listed one older than
// it: a crash loses the index's latest lines, and a rewrite of the index
// drops the names of evicted responses, which are older than every one it
// lists. One that max of them come after was evicted; any other was lost
// by a crash, and its transcript rebuilds it. A read that misses one
// document knows of no other lost one, so a crash that lost the index's
// latest lines may let it rebuild a response evicted just before; the
// next store evicts it again, as it does a document whose remove the
// crash undid.
func (g *Store) Evicted(ids []string, max int) (map[string]bool, error) {
	evicted := map[string]bool{}
	if max <= 0 || len(ids) == 0 {
		return evicted, nil
	}
	idx, err := g.readIndexLocked()
	if err != nil || idx == nil {
		return evicted, err
	}
	all := idx.ids
	for _, id := range ids {
		if !slices.Contains(all, id) {
			all = insertByTime(all, id)
		}
	}
	if n := len(all) - max; n > 0 {
		for _, id := range all[:n] {
			if slices.Contains(ids, id) {
				evicted[id] = true
			}
		}
	}
	return evicted, nil
}

// readIndexLocked is the index, read under its lock (a copy: the caller
// holds no lock); nil when no response was ever stored.
func (g *Store) readIndexLocked() (*responseIndex, error) {
	if _, err := os.Lstat(g.responsesDir()); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	unlock, err := fsstore.Lock(g.indexLockPath(), g.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	idx, err := g.loadIndexLocked("")
	if err != nil {
		return nil, err
	}
	return &responseIndex{ids: slices.Clone(idx.ids)}, nil
}

// insertByTime is ids with id put after the last of them older than it
// (ids are time-ordered), in a new slice.
func insertByTime(ids []string, id string) []string {
	at := 0
	for i, x := range ids {
		if x < id {
			at = i + 1
		}
	}
	return slices.Insert(slices.Clone(ids), at, id)
}

// OldestKept is when the oldest of the last max responses the index lists
// was made (the time its id begins with): a response made before it and
// not listed was evicted (Evicted). The zero time when the index lists no
// more than max.
func (g *Store) OldestKept(max int) (time.Time, error) {
	idx, err := g.readIndexLocked()
	if err != nil || idx == nil || max <= 0 || len(idx.ids) <= max {
		return time.Time{}, err
	}
	return responseTime(idx.ids[len(idx.ids)-max]), nil
}

// responseTime is the time a response id begins with (resp_, then
// 20261121_020734_123456); the zero time when it has none.
func responseTime(id string) time.Time {
	const layout = "20060102_150405.000000"
	ts, ok := strings.CutPrefix(id, "resp_")
	if !ok || len(ts) < len(layout) {
		return time.Time{}
	}
	t, err := time.Parse(layout, ts[:15]+"."+ts[16:len(layout)])
	if err != nil {
		return time.Time{}
	}
	return t
}

// RestoreResponse writes the document of r again, as CacheResponse does,
// after it was lost (Evicted says it was not evicted), and lists it in the
// index when the index lacks it. Nothing is evicted.
func (g *Store) RestoreResponse(r Response) error {
	if sid := ResponseSession(r.ID); sid == "" || sid != r.SessionID {
		return fsstore.Invalidf("response id %s does not name its session %s", r.ID, r.SessionID)
	}
	if err := fsstore.EnsureDir(g.responsesDir()); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	unlock, err := fsstore.Lock(g.indexLockPath(), g.LockTimeout)
	if err != nil {
		return err
	}
	defer unlock()
	if err := g.writeResponse(r, false); err != nil {
		return err
	}
	idx, err := g.loadIndexLocked(r.ID)
	if err != nil || slices.Contains(idx.ids, r.ID) {
		return err
	}
	if n := len(idx.ids); n > 0 && idx.ids[n-1] > r.ID {
		// Listed in its place, so that eviction takes it in its turn.
		return g.rewriteIndexLocked(insertByTime(idx.ids, r.ID))
	}
	line, _ := json.Marshal(indexEntry{ResponseID: r.ID, CreatedAt: r.CreatedAt})
	if err := idx.append(g.indexPath(), append(line, '\n'), g.Now()); err != nil {
		g.idx = nil
		return err
	}
	idx.ids = append(idx.ids, r.ID)
	return nil
}

type indexEntry struct {
	ResponseID string       `json:"response_id"`
	CreatedAt  fsstore.Time `json:"created_at"`
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
	f, _, err := fsstore.OpenAppend(path, now)
	if err != nil {
		return err
	}
	defer f.Close()
	// Not synced: a crash that loses the line leaves a document the index
	// lacks, which the next load finds (loadIndexLocked).
	if err := fsstore.WriteLines(f, [][]byte{line}); err != nil {
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
func (g *Store) loadIndexLocked(adding string) (*responseIndex, error) {
	fi, err := os.Stat(g.indexPath())
	if err == nil && g.idx != nil && fi.Size() == g.idx.size {
		return g.idx, nil
	}
	g.idx = nil
	var ids []string
	if err == nil {
		ids, err = g.readIndex()
		var corrupt *fsstore.CorruptError
		if errors.As(err, &corrupt) {
			qerr := fsstore.Quarantine(g.indexPath(), g.Now().Unix(), err)
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

func (g *Store) readIndex() ([]string, error) {
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
	torn, err := fsstore.ScanLines(f, fi.Size(), func(line []byte, off int64) error {
		var e indexEntry
		if err := json.Unmarshal(line, &e); err != nil || fsstore.CheckID("response id", e.ResponseID) != nil {
			return &fsstore.CorruptError{Path: f.Name(), Offset: off, Err: fmt.Errorf("not an index entry: %q", line)}
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
func (g *Store) responseIDsOnDisk() ([]string, error) {
	ids, err := fsstore.DocIDs(g.responsesDir())
	slices.Reverse(ids)
	return ids, err
}

func (g *Store) rewriteIndexLocked(ids []string) error {
	var b bytes.Buffer
	for _, id := range ids {
		line, _ := json.Marshal(indexEntry{ResponseID: id})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := fsstore.EnsureDir(g.responsesDir()); err != nil {
		return err
	}
	if err := fsstore.WriteFileAtomic(g.indexPath(), b.Bytes()); err != nil {
		g.idx = nil
		return err
	}
	g.idx = &responseIndex{ids: append([]string(nil), ids...), size: int64(b.Len())}
	return nil
}

// StoredResponseCount is how many response documents are stored (a
// directory listing; no document is read).
func (g *Store) StoredResponseCount() (int, error) {
	ids, err := g.responseIDsOnDisk()
	return len(ids), err
}

// GetResponse reads the stored response id. An unknown or evicted id is
// ErrNotFound; a document that does not parse is quarantined and reported.
func (g *Store) GetResponse(id string) (Response, error) {
	if err := fsstore.CheckID("response id", id); err != nil {
		return Response{}, err
	}
	r, ok, err := readDoc(g, g.responsePath(id), "response "+id, func(r *Response) bool { return r.ID == id })
	if err == nil && !ok {
		err = fsstore.NotFoundf("response %s not found", id)
	}
	return r, err
}

// LockConversation takes the writer lock of conversation slug. The caller
// holds it across reading the mapping, the turn and writing it back, so one
// conversation never gets two sessions.
func (g *Store) LockConversation(slug string) (func(), error) {
	if err := fsstore.CheckID("conversation", slug); err != nil {
		return nil, err
	}
	if err := fsstore.EnsureDir(g.conversationsDir()); err != nil {
		return nil, err
	}
	return fsstore.Lock(filepath.Join(g.conversationsDir(), slug+".lock"), g.LockTimeout)
}

// GetConversation reads the mapping of slug: ErrNotFound when the
// conversation is new. A document that does not parse is quarantined and
// reported; it is never replaced by an empty mapping.
func (g *Store) GetConversation(slug string) (Conversation, error) {
	if err := fsstore.CheckID("conversation", slug); err != nil {
		return Conversation{}, err
	}
	c, ok, err := readDoc(g, filepath.Join(g.conversationsDir(), slug+".json"), "the mapping of conversation "+slug, func(c *Conversation) bool {
		return c.Conversation == slug && c.SessionID != ""
	})
	if err == nil && !ok {
		err = fsstore.NotFoundf("conversation %s not found", slug)
	}
	return c, err
}

// readDoc reads the document at path, written by this store: ok is false
// when there is none. One that does not parse, or that belongs says is
// not what it should hold (what names it) ("null", "{}", another id: taking it for one would
// rewrite it as an empty default), is quarantined and reported; nothing
// takes its place.
func readDoc[T any](g *Store, path, what string, belongs func(*T) bool) (v T, ok bool, err error) {
	var zero T
	err = fsstore.ReadDoc(path, &v)
	if errors.Is(err, os.ErrNotExist) {
		return zero, false, nil
	}
	if err == nil && !belongs(&v) {
		err = &fsstore.CorruptError{Path: path, Err: fmt.Errorf("document is not %s", what)}
	}
	var corrupt *fsstore.CorruptError
	if errors.As(err, &corrupt) {
		return zero, false, fsstore.Quarantine(path, g.Now().Unix(), err)
	}
	return v, err == nil, err
}

// PutConversation writes the mapping of c.Conversation, atomically. The
// caller holds LockConversation.
func (g *Store) PutConversation(c Conversation) error {
	path, err := g.conversationPath(c)
	if err != nil {
		return err
	}
	now := fsstore.TimeOf(g.Now())
	if c.CreatedAt == "" {
		c.CreatedAt = now
	}
	c.UpdatedAt = now
	return fsstore.WriteDoc(path, &c)
}

// conversationPath is where the mapping c is written, once its ids are
// checked and its directory made.
func (g *Store) conversationPath(c Conversation) (string, error) {
	if err := fsstore.CheckID("conversation", c.Conversation); err != nil {
		return "", err
	}
	if err := fsstore.CheckID("session id", c.SessionID); err != nil {
		return "", err
	}
	if err := fsstore.EnsureDir(g.conversationsDir()); err != nil {
		return "", err
	}
	return filepath.Join(g.conversationsDir(), c.Conversation+".json"), nil
}

// CacheConversation writes the first mapping of conversation
// c.Conversation, made with the conversation's first session, without a
// sync, neither it nor its directory: the session, whose session_key
// names the conversation, is durable, and the mapping is rebuilt from it
// (see doc.go). SyncConversations syncs what it wrote. The caller holds
// LockConversation.
func (g *Store) CacheConversation(c Conversation) error {
	path, err := g.conversationPath(c)
	if err != nil {
		return err
	}
	now := fsstore.TimeOf(g.Now())
	c.CreatedAt, c.UpdatedAt = now, now
	b, err := fsstore.EncodeDoc(path, &c)
	if err != nil {
		return err
	}
	if err := fsstore.WriteCacheFile(path, b); err != nil {
		return err
	}
	g.convMu.Lock()
	defer g.convMu.Unlock()
	if g.cached == nil {
		g.cached = map[string]bool{}
	}
	g.cached[c.Conversation] = true
	return nil
}

// SyncConversations makes the mappings CacheConversation wrote in this
// process durable: each rewritten synced, under its lock, then their
// directory. A gateway that stops cleanly calls it before it says so.
func (g *Store) SyncConversations() error {
	g.convMu.Lock()
	slugs := make([]string, 0, len(g.cached))
	for slug := range g.cached {
		slugs = append(slugs, slug)
	}
	g.cached = nil
	g.convMu.Unlock()
	if len(slugs) == 0 {
		return nil
	}
	slices.Sort(slugs)
	for _, slug := range slugs {
		if err := g.syncConversation(slug); err != nil {
			return err
		}
	}
	return fsstore.SyncDir(g.conversationsDir())
}

func (g *Store) syncConversation(slug string) error {
	unlock, err := g.LockConversation(slug)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := g.GetConversation(slug)
	if errors.Is(err, fsstore.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return g.rewriteConversation(c)
}

// rewriteConversation writes c again as it is, synced, not its directory.
func (g *Store) rewriteConversation(c Conversation) error {
	path := filepath.Join(g.conversationsDir(), c.Conversation+".json")
	b, err := fsstore.EncodeDoc(path, &c)
	if err != nil {
		return err
	}
	return fsstore.ReplaceFile(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// LevelConversation brings the mapping of conversation slug level with
// sess, the conversation's first session (see doc.go): a mapping missing,
// or quarantined as unreadable, is written again, synced, naming sess; one
// there is left as it is, and made durable when sync is set (one that a
// run that did not stop cleanly may have written without a sync). It
// reports whether it wrote the mapping again.
func (g *Store) LevelConversation(slug, sess string, sync bool) (bool, error) {
	unlock, err := g.LockConversation(slug)
	if err != nil {
		return false, err
	}
	defer unlock()
	c, err := g.GetConversation(slug)
	switch {
	case err == nil:
		if !sync {
			return false, nil
		}
		if err := g.rewriteConversation(c); err != nil {
			return false, err
		}
		return false, fsstore.SyncDir(g.conversationsDir())
	case errors.Is(err, fsstore.ErrNotFound) || errors.As(err, new(*fsstore.CorruptError)):
		return true, g.PutConversation(Conversation{Conversation: slug, SessionID: sess})
	}
	return false, err
}

// ReadState reads state.json; ok is false when no run was ever recorded. A
// state.json that does not parse is quarantined and reported as an error.
func (g *Store) ReadState() (st State, ok bool, err error) {
	err = fsstore.ReadDoc(g.statePath(), &st)
	if errors.Is(err, os.ErrNotExist) {
		return State{}, false, nil
	}
	var corrupt *fsstore.CorruptError
	if errors.As(err, &corrupt) {
		return State{}, false, fsstore.Quarantine(g.statePath(), g.Now().Unix(), err)
	}
	return st, err == nil, err
}

// WriteState writes state.json atomically. Only the holder of the serve
// lock writes it.
func (g *Store) WriteState(st State) error {
	if err := fsstore.EnsureDir(g.Dir); err != nil {
		return err
	}
	if st.InterruptedSessions == nil {
		st.InterruptedSessions = []string{}
	}
	return fsstore.WriteDoc(g.statePath(), &st)
}

// CleanShutdown reports whether the last run left the clean-shutdown marker.
func (g *Store) CleanShutdown() (bool, error) {
	_, err := os.Lstat(g.CleanShutdownPath())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// SetCleanShutdown writes the marker (clean) or removes it, and commits
// the change to the directory.
func (g *Store) SetCleanShutdown(clean bool, at time.Time) error {
	if clean {
		if err := fsstore.EnsureDir(g.Dir); err != nil {
			return err
		}
		return fsstore.WriteFileAtomic(g.CleanShutdownPath(), []byte(fsstore.TimeOf(at)+"\n"))
	}
	err := os.Remove(g.CleanShutdownPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return fsstore.SyncDir(g.Dir)
}

// LockServe takes the serve lock, waiting at most timeout: the gateway of a
// profile runs once. The caller holds it until it exits.
func (g *Store) LockServe(timeout time.Duration) (func(), error) {
	if err := fsstore.EnsureDir(g.Dir); err != nil {
		return nil, err
	}
	return fsstore.Lock(g.ServeLockPath(), timeout)
}

// Serving reports whether a process holds the serve lock. It takes the
// lock, waiting at most servingWait, and drops it at once; a gateway
// starting at that moment waits for it (LockServe's timeout). The short
// wait is for a LockServe that gave up while the lock was held: its
// waiter, blocked in the kernel, may take the lock for an instant as it
// is let go, before it drops it (fsstore's blocking lock wait).
func (g *Store) Serving() (bool, error) {
	if _, err := os.Stat(g.ServeLockPath()); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	unlock, err := fsstore.Lock(g.ServeLockPath(), servingWait)
	var timeout *fsstore.LockTimeoutError
	if errors.As(err, &timeout) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	unlock()
	return false, nil
}

// servingWait is how long Serving waits for the serve lock.
const servingWait = 50 * time.Millisecond

// Check checks the gateway's stored responses, conversations and state
// (see CheckTree). Run it with --repair while no gateway serves the
// profile: a document the server is rewriting could look torn.
func (g *Store) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	return fsstore.CheckTree(g.Dir, func(log string) string {
		if filepath.Dir(log) == g.historyDir() {
			return g.historyLockPath()
		}
		return g.indexLockPath()
	}, g.LockTimeout, repair, lostFound)
}
