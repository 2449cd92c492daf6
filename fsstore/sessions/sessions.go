package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/hermes/hermes/fsstore"
)

// Session states.
const (
	StateActive        = "active"
	StateEnded         = "ended"
	StateSuspended     = "suspended"
	StateResumePending = "resume_pending"
)

// Session is a session document: the metadata of one conversation. Its
// message_count, updated_at and preview are caches of the transcript; when
// they disagree with it, the transcript wins and the document is repaired.
// Every field is always present in JSON (empty when unset), so scripts can
// rely on the keys.
type Session struct {
	ID              string       `json:"id"`
	Title           string       `json:"title"`
	Source          string       `json:"source"`
	Model           string       `json:"model"`
	CreatedAt       fsstore.Time `json:"created_at"`
	UpdatedAt       fsstore.Time `json:"updated_at"`
	EndedAt         fsstore.Time `json:"ended_at"`
	EndReason       string       `json:"end_reason"`
	State           string       `json:"state"`
	ResumeReason    string       `json:"resume_reason"`
	ParentSessionID string       `json:"parent_session_id"`
	SessionKey      string       `json:"session_key"`
	MessageCount    int64        `json:"message_count"`
	Profile         string       `json:"profile"`
	// ResumePendingAt is when the session last became resume_pending, and
	// InterruptCount how many restarts in a row interrupted it (the
	// gateway suspends it at 3). A successful turn (SetState active)
	// clears both.
	ResumePendingAt fsstore.Time `json:"resume_pending_at"`
	InterruptCount  int          `json:"interrupt_count"`
	// Cwd is the working directory of the session's tools (the agent's
	// terminal, read_file, write_file): relative paths start there.
	Cwd string `json:"cwd"`
	// ForkSeq is where a fork (Fork) left its parent: its history began
	// as the parent's messages 1 to ForkSeq. 0 for a session that is no
	// fork.
	ForkSeq int64 `json:"fork_seq"`
	// CompressedInto is the session a compression continued this one in
	// (end_reason compression); see Compress.
	CompressedInto string `json:"compressed_into"`
	// GatewayKey names the gateway API key (gateway.api_keys) whose
	// client made the session; empty for the gateway's single key, for
	// none, and for sessions made elsewhere. Only that key's clients can
	// reach it through the gateway.
	GatewayKey string `json:"gateway_key,omitempty"`
	// Delegation, on a sub-agent's session (a child a delegate call made,
	// whose parent_session_id is the caller's), names the call and the
	// task; absent on every other session.
	Delegation *Delegation `json:"delegation,omitempty"`
	// Meta is what an imported session's source said of it beyond these
	// fields (its token counts, costs, model settings, …), kept as the
	// source wrote it; empty for a session made here.
	Meta    Meta   `json:"meta"`
	Preview string `json:"preview"`
	// Damaged, only on a session Inspect or List made from its transcript
	// because its document is damaged or missing, says so and what
	// repairs it; never stored.
	Damaged string `json:"damaged,omitempty"`
}

// Delegation is what a sub-agent's session records of the delegate call
// that made it: the call's id in the parent's transcript, the task's
// place in the call's list (from 0), and how many delegations deep the
// session is (1 for a child of a session the user drives).
type Delegation struct {
	ToolCallID string `json:"tool_call_id"`
	TaskIndex  int    `json:"task_index"`
	Depth      int    `json:"depth"`
}

// Meta is a JSON object kept as it was written. Empty, it is written {},
// never null, so that a reader can take its keys on every session.
type Meta json.RawMessage

// MarshalJSON writes m, or {} when it is empty.
func (m Meta) MarshalJSON() ([]byte, error) {
	if len(m) == 0 || string(m) == "null" {
		return []byte("{}"), nil
	}
	return json.RawMessage(m).MarshalJSON()
}

// UnmarshalJSON keeps a copy of data; null and {} are empty.
func (m *Meta) UnmarshalJSON(data []byte) error {
	if string(data) == "null" || string(data) == "{}" {
		*m = nil
		return nil
	}
	*m = append((*m)[:0], data...)
	return nil
}

// times are the document's time fields, by name.
func (s *Session) times() map[string]*fsstore.Time {
	return map[string]*fsstore.Time{
		"created_at": &s.CreatedAt, "updated_at": &s.UpdatedAt,
		"ended_at": &s.EndedAt, "resume_pending_at": &s.ResumePendingAt,
	}
}

// nonCanonicalTimes names the time fields that are set but not in
// TimeLayout (an unreadable one included), sorted.
func (s *Session) nonCanonicalTimes() []string {
	var out []string
	for name, p := range s.times() {
		if c, err := p.Canonical(); err != nil || c != *p {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// previewLen is how many characters of the first user message a session
// keeps as its preview.
const previewLen = 80

// Store keeps the sessions of one profile in Dir:
//
//	<id>.json        the document, rewritten atomically
//	<id>.jsonl       the transcript, append-only
//	<id>.lock        the sidecar lock that serializes writers of this session
//	.catalog.jsonl   the activity catalog (see catalog.go)
//
// Names starting with '.' are the store's own; ids cannot start with one.
type Store struct {
	Dir         string
	Profile     string
	LockTimeout time.Duration
	// Cancel, when it closes, ends a lock wait at once, with a
	// *fsstore.LockInterruptedError: a tool call's ctx.Done(). Nil never
	// closes. A copy of the store with its own Cancel serves one call.
	Cancel <-chan struct{}
	// Now is the clock; tests replace it.
	Now func() time.Time
	// Warn receives reports of recovered damage (a torn tail skipped or
	// moved aside, a document repaired). It must not be nil.
	Warn func(msg string)
	// compactMin, when not 0, stands for catalogCompactMin: tests compact
	// a catalog of a few hundred lines.
	compactMin int64
	// docs keeps documents decoded (see docCache); nil keeps none.
	docs *docCache
}

// NewStore returns the store of the profile whose directory is
// profileDir. Nothing is created until the first write.
func NewStore(profileDir, profile string, lockTimeout time.Duration, warn func(string)) *Store {
	return &Store{
		Dir:         filepath.Join(profileDir, "sessions"),
		Profile:     profile,
		LockTimeout: lockTimeout,
		Now:         time.Now,
		Warn:        warn,
		docs:        newDocCache(),
	}
}

func (s *Store) docPath(id string) string  { return filepath.Join(s.Dir, id+".json") }
func (s *Store) logPath(id string) string  { return filepath.Join(s.Dir, id+".jsonl") }
func (s *Store) lockPath(id string) string { return filepath.Join(s.Dir, id+".lock") }

// lock takes the writer lock of session id.
func (s *Store) lock(id string) (func(), error) {
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		return nil, err
	}
	return fsstore.LockUntil(s.lockPath(id), s.LockTimeout, s.Cancel)
}

// titlesLockName is the profile-wide lock under which a title is checked
// and written, so that two writers never give one title to two sessions.
// It is taken before any session's own lock, never after one.
const titlesLockName = ".titles.lock"

// lockTitles takes the titles lock.
func (s *Store) lockTitles() (func(), error) {
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		return nil, err
	}
	return fsstore.LockUntil(filepath.Join(s.Dir, titlesLockName), s.LockTimeout, s.Cancel)
}

// readSession reads the document of id, brought up to its transcript (see
// current). A document that does not parse is quarantined (under the
// session's lock, so a concurrent rewrite is not mistaken for damage) and
// reported as an error.
func (s *Store) readSession(id string, locked bool) (Session, error) {
	sess, err := s.readDocument(id, locked)
	if err != nil {
		return sess, err
	}
	return sess, s.current(&sess)
}

// readDocument reads the document of id as it is on disk: for Append,
// which reads the transcript's last line itself.
//
// A document that is missing while the transcript is there (quarantined,
// or lost) is not found, saying so and what repairs it.
func (s *Store) readDocument(id string, locked bool) (Session, error) {
	sess, _, _, err := s.readStamped(id, locked)
	return sess, err
}

// readStamped is readDocument that also returns the stamp of the file
// the document was read from, taken before the read, and whether it was
// kept decoded (docCache) rather than read.
func (s *Store) readStamped(id string, locked bool) (_ Session, _ docStamp, kept bool, _ error) {
	path := s.docPath(id)
	stamp := stampOf(path)
	if sess, ok := s.docs.get(path, stamp); ok {
		return sess, stamp, true, nil
	}
	sess, err := s.readRecord(id, locked)
	return sess, stamp, false, err
}

func (s *Store) readRecord(id string, locked bool) (Session, error) {
	sess, err := fsstore.ReadRecord(fsstore.Record{What: "session", ID: id, Path: s.docPath(id), Lock: s.lockPath(id),
		Locked: locked, Timeout: s.LockTimeout, Cancel: s.Cancel, Now: s.Now}, func(v *Session) string { return v.ID })
	if errors.Is(err, fsstore.ErrNotFound) {
		if _, lerr := os.Lstat(s.logPath(id)); lerr == nil {
			return sess, fsstore.NotFoundf("session %s has a transcript but no document (it was damaged and kept aside, or lost): hermes fsck --repair makes it a new document from the transcript", id)
		}
	}
	return sess, err
}

// current sets the message count and the last activity of sess from the
// last complete line of its transcript. An append does not rewrite the
// document (that would cost a second atomic write and two more syncs per
// message), so the document's message_count and updated_at are those of
// its last rewrite: caches that are behind by design, and the transcript
// wins (invariant 5). Every rewrite of the document stores the current
// values. A document ahead of its transcript is damage: fsck reports it.
// A transcript that is a symlink is not followed.
func (s *Store) current(sess *Session) error {
	f, size, err := fsstore.OpenSizedFlag(s.logPath(sess.ID), os.O_RDONLY|syscall.O_NOFOLLOW)
	if errors.Is(err, syscall.ELOOP) {
		return nil // the document's values stand; the writers refuse the link
	}
	if err != nil {
		return err
	}
	if f == nil {
		sess.MessageCount = 0
		return nil
	}
	defer f.Close()
	seq, ts, err := lastSeq(f, size)
	if err != nil {
		return err
	}
	sess.MessageCount = seq
	// An imported message may carry an older time than the document's
	// last change; a line stored before times were normalised may be in
	// another zone, so the instants are compared.
	sess.UpdatedAt = fsstore.Later(sess.UpdatedAt, ts)
	return nil
}

// Create makes a session document with an empty transcript. The id is
// sess.ID, or a new one when empty; created_at and updated_at are sess's
// (an import's, from its history), or now, and an ended session's
// ended_at is sess's, or its updated_at. Creating a session that exists
// is a no-op that returns the stored document and created=false: never an error
// that would stop later writes. A non-empty title must not be taken by
// another session; it is checked and written under the titles lock.
func (s *Store) Create(sess Session) (Session, bool, error) {
	return s.CreateWith(sess, nil)
}

// CreateWith is Create with a first transcript, msgs (an import): the
// session appears whole or not at all. The messages are appended and
// synced, then the catalog line, then the document, the commit point; a
// failure before it cuts the transcript back (removes it, if this call
// made it). The catalog line and the id index entry are not synced
// (caches: see doc.go). A session that exists is returned as it is with
// created=false, and msgs are not written. msgs are checked (their ts
// included) before anything is written.
// A new id must pass fsstore.CheckNewID.
func (s *Store) CreateWith(sess Session, msgs []Message) (_ Session, created bool, err error) {
	if sess.ID != "" {
		if err := fsstore.CheckNewID("session id", sess.ID); err != nil {
			return Session{}, false, err
		}
	}
	return s.createWith(sess, msgs)
}

// createWith is CreateWith for any id CheckID accepts: fsck's repair
// gives a document back to the transcript of a session made before the
// rule of CheckNewID.
func (s *Store) createWith(sess Session, msgs []Message) (_ Session, created bool, err error) {
	now := s.Now()
	if sess.ID == "" {
		sess.ID = fsstore.NewID(now)
	}
	if err := fsstore.CheckID("session id", sess.ID); err != nil {
		return Session{}, false, err
	}
	if err := stamp(msgs, now); err != nil {
		return Session{}, false, err
	}
	if err := checkUnicode(msgs); err != nil {
		return Session{}, false, err
	}
	if sess.Title != "" {
		if sess.Title, err = fsstore.NormalTitle(sess.Title); err != nil {
			return Session{}, false, err
		}
		unlockTitles, err := s.lockTitles()
		if err != nil {
			return Session{}, false, err
		}
		defer unlockTitles()
	} else if err := s.ensureTitles(); err != nil {
		return Session{}, false, err
	}
	unlock, err := s.lock(sess.ID)
	if err != nil {
		return Session{}, false, err
	}
	defer unlock()
	old, err := s.readSession(sess.ID, true)
	if err == nil {
		return old, false, nil
	}
	if !errors.Is(err, fsstore.ErrNotFound) {
		return Session{}, false, err
	}
	if sess.Title != "" {
		if err := s.claimTitle(sess.Title, sess.ID); err != nil {
			return Session{}, false, err
		}
	}
	undoID, err := s.indexNewID(sess.ID)
	if err != nil {
		return Session{}, false, err
	}
	defer func() {
		if err != nil {
			undoID()
		}
	}()
	ts := fsstore.TimeOf(now)
	if sess.State == "" {
		sess.State = StateActive
	}
	for _, p := range []*fsstore.Time{&sess.CreatedAt, &sess.UpdatedAt} {
		if *p == "" {
			*p = ts
		}
	}
	if sess.State == StateEnded && sess.EndedAt == "" {
		sess.EndedAt = sess.UpdatedAt
	}
	for name, p := range map[string]*fsstore.Time{"created_at": &sess.CreatedAt, "updated_at": &sess.UpdatedAt, "ended_at": &sess.EndedAt} {
		if *p != "" {
			if *p, err = p.Canonical(); err != nil {
				return Session{}, false, fsstore.Invalidf("%s: %w", name, err)
			}
		}
	}
	// An import's last activity is its history's, which the catalog
	// records as such.
	active, err := sess.UpdatedAt.Instant()
	if err != nil {
		return Session{}, false, err
	}
	if active.After(now.Add(maxFutureTS)) {
		return Session{}, false, fsstore.Invalidf("updated_at %s is more than %v in the future (the clock says %s)", sess.UpdatedAt, maxFutureTS, ts)
	}
	sess.Profile = s.Profile
	// A transcript may exist without a document (its document was
	// quarantined): it is kept, and the new document counts it. One this
	// call makes is removed again if the create fails (a full disk), so a
	// failed create leaves no transcript without a document. Its name is
	// committed by the document's write, which syncs their directory.
	path := s.logPath(sess.ID)
	_, lerr := os.Lstat(path)
	made := errors.Is(lerr, os.ErrNotExist)
	f, moved, err := fsstore.OpenAppendUncommitted(path, now)
	if err != nil {
		if made {
			os.Remove(path)
		}
		return Session{}, false, err
	}
	defer f.Close()
	s.warnMoved(moved)
	fi, err := f.Stat()
	if err != nil {
		return Session{}, false, err
	}
	seq, _, err := lastSeq(f, fi.Size())
	if err != nil {
		return Session{}, false, err
	}
	lines, seq, err := numberLines(&sess, msgs, seq)
	if err != nil {
		return Session{}, false, err
	}
	sess.MessageCount = seq
	err = fsstore.AppendThen(f, made, lines, func() error {
		return s.addCatalogThen(&sess, active, now, func() error { return s.writeDoc(&sess, nil) })
	})
	if err != nil {
		return Session{}, false, err
	}
	return sess, true, nil
}

// numberLines numbers msgs on from seq and encodes each as a transcript
// line; a session without a preview gets the first user message's. It
// returns the lines and the last seq.
func numberLines(sess *Session, msgs []Message, seq int64) ([][]byte, int64, error) {
	lines := make([][]byte, len(msgs))
	for i := range msgs {
		seq++
		msgs[i].Seq = seq
		b, err := msgs[i].MarshalJSON()
		if err != nil {
			return nil, 0, err
		}
		lines[i] = append(b, '\n')
		if sess.Preview == "" && msgs[i].Role == "user" {
			sess.Preview = preview(msgs[i].Text())
		}
	}
	return lines, seq, nil
}

func (s *Store) warnMoved(moved string) {
	if moved != "" {
		s.Warn(fmt.Sprintf("torn tail moved aside to %s", moved))
	}
}

// Get returns the document of id with its message count and last activity
// taken from the transcript.
func (s *Store) Get(id string) (Session, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return Session{}, err
	}
	return s.readSession(id, false)
}

// Inspect is Get for a reader that shows a session: a session whose
// document is damaged (quarantined as it was read, or earlier) or missing
// while its transcript is there is returned as its transcript has it,
// marked Damaged, rather than not found, so that it does not vanish from
// sight until a repair. Writers keep Get's answer: they refuse such a
// session (see readDocument).
func (s *Store) Inspect(id string) (Session, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return Session{}, err
	}
	sess, err := s.readSession(id, false)
	if err == nil || errors.Is(err, fsstore.ErrInvalid) {
		return sess, err
	}
	if damaged, ok := s.damaged(id); ok {
		return damaged, nil
	}
	return sess, err
}

// damaged is the session id as its transcript has it, when the transcript
// exists and the document does not (it was quarantined, or lost): its
// message count, last activity, and Damaged naming the repair.
//
// A session being created has its transcript before its document (the
// commit point, see CreateWith), under its lock: the lock is tried, and a
// session whose lock is held is not judged, so that no reader sees a
// create before its commit point.
func (s *Store) damaged(id string) (Session, bool) {
	if _, err := os.Lstat(s.logPath(id)); err != nil {
		return Session{}, false
	}
	unlock, err := fsstore.Lock(s.lockPath(id), 0)
	if err != nil {
		return Session{}, false
	}
	defer unlock()
	if _, err := os.Lstat(s.docPath(id)); err == nil {
		return Session{}, false
	}
	sess := Session{ID: id, Profile: s.Profile}
	if err := s.current(&sess); err != nil {
		return Session{}, false
	}
	aside := "its document is missing"
	if names, _ := filepath.Glob(filepath.Join(s.Dir, id+".json.corrupt-*")); len(names) > 0 {
		aside = fmt.Sprintf("its document is damaged (kept aside as %s)", filepath.Base(names[len(names)-1]))
	}
	sess.Damaged = aside + " and its transcript intact: hermes fsck --repair makes it a new document from the transcript"
	return sess, true
}

// rewriteDoc stores the document of id with the count and last activity of
// its transcript: fsck's repair of a document ahead of its transcript.
func (s *Store) rewriteDoc(id string) error {
	unlock, err := s.lock(id)
	if err != nil {
		return err
	}
	defer unlock()
	sess, err := s.readSession(id, true)
	if err != nil {
		return err
	}
	return fsstore.WriteDoc(s.docPath(id), &sess)
}

// transcriptCount is the seq of the last complete line of the transcript.
func (s *Store) transcriptCount(id string) (int64, error) {
	f, size, err := fsstore.OpenSized(s.logPath(id))
	if f == nil || err != nil {
		return 0, err
	}
	defer f.Close()
	n, _, err := lastSeq(f, size)
	return n, err
}

// lastSeq returns the seq and ts of the last complete line of the first size
// bytes of a transcript (0 and "" when it has none). Lines begin with seq,
// so only the line's first bytes are read unless it was written elsewhere.
func lastSeq(f *os.File, size int64) (int64, fsstore.Time, error) {
	start, end, err := fsstore.LastLineSpan(f, size)
	if err != nil || start < 0 {
		return 0, "", err
	}
	head := make([]byte, min(end-start, lineHead))
	if _, err := f.ReadAt(head, start); err != nil {
		return 0, "", fsstore.PathErr("read", f.Name(), err)
	}
	if seq, ts, ok := headPosition(head); ok {
		return seq, ts, nil
	}
	line := make([]byte, end-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return 0, "", fsstore.PathErr("read", f.Name(), err)
	}
	seq, ts, err := linePosition(line)
	if err != nil {
		return 0, "", &fsstore.CorruptError{Path: f.Name(), Offset: start, Err: err}
	}
	return seq, ts, nil
}

// lineHead is how many first bytes of a line headPosition needs.
const lineHead = 256

// headPosition returns the seq and ts of a line from its first lineHead
// bytes, if the line is in the store's form.
func headPosition(head []byte) (int64, fsstore.Time, bool) {
	var pos struct {
		Seq int64        `json:"seq"`
		TS  fsstore.Time `json:"ts"`
	}
	if cut := prefixObject(head); cut != nil && json.Unmarshal(cut, &pos) == nil && pos.Seq > 0 {
		return pos.Seq, pos.TS, true
	}
	return 0, "", false
}

// linePosition returns the seq and ts of a whole line, as lastSeq reads
// them: from its head when it is in the store's form, else from the line.
func linePosition(line []byte) (int64, fsstore.Time, error) {
	if seq, ts, ok := headPosition(line[:min(len(line), lineHead)]); ok {
		return seq, ts, nil
	}
	var pos struct {
		Seq int64        `json:"seq"`
		TS  fsstore.Time `json:"ts"`
	}
	if err := json.Unmarshal(line, &pos); err != nil {
		return 0, "", err
	}
	return pos.Seq, pos.TS, nil
}

// prefixObject turns the head of a line written by Message.MarshalJSON,
// `{"seq":N,"ts":"…",…`, into the object `{"seq":N,"ts":"…"}`, or nil.
func prefixObject(head []byte) []byte {
	const p = `{"seq":`
	if !strings.HasPrefix(string(head), p) {
		return nil
	}
	i := strings.Index(string(head), `","role":`)
	if i < 0 {
		return nil
	}
	return append(append([]byte{}, head[:i+1]...), '}')
}

// Append adds msgs to the end of the transcript of id, numbering them from
// the last stored seq, and returns the new message count. Each message is
// one write. The transcript is synced before it returns, so an
// acknowledged append is durable and a crash leaves at most a torn tail;
// the activity catalog's line is written after that sync, unsynced (a
// cache that a crash leaves behind, never ahead: see doc.go). The document is rewritten only when a field
// of its own changes (the preview, at the first user message): its count
// and activity time follow the transcript (see current). A ts already set
// on a message is kept.
func (s *Store) Append(id string, msgs []Message) (int64, error) {
	seq, _, err := s.AppendAt(id, msgs)
	return seq, err
}

// AppendAt is Append, and also says where the transcript was before the
// append and after it (Extent), for a caller that keeps the transcript
// it read (MessagesAt) and its own appends in memory.
func (s *Store) AppendAt(id string, msgs []Message) (int64, Extent, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return 0, Extent{}, err
	}
	unlock, err := s.lock(id)
	if err != nil {
		return 0, Extent{}, err
	}
	sess, stamp, kept, err := s.readStamped(id, true)
	if err != nil {
		unlock()
		return 0, Extent{}, err
	}
	read := sess.clone()
	seq, ext, due, err := s.appendLockedAt(&sess, msgs)
	if err == nil && !kept && sess.Preview == read.Preview {
		// The document is as read (no preview written): keep it, now that
		// the transcript's time is past its own (docCache).
		s.docs.put(s.docPath(id), stamp, read, stampOf(s.logPath(id)).MTime)
	}
	unlock()
	if due {
		// After the session's lock: its next writer need not wait.
		s.compactCatalogIfDue()
	}
	if errors.As(err, new(*fsstore.UnknownOutcomeError)) {
		err = fmt.Errorf("%w: check with `hermes sessions show %s` before appending again", err, id)
	}
	return seq, ext, err
}

func (s *Store) appendLocked(sess *Session, msgs []Message) (int64, bool, error) {
	seq, _, due, err := s.appendLockedAt(sess, msgs)
	return seq, due, err
}

func (s *Store) appendLockedAt(sess *Session, msgs []Message) (int64, Extent, bool, error) {
	now := s.Now()
	ts := fsstore.TimeOf(now)
	if err := stamp(msgs, now); err != nil {
		return 0, Extent{}, false, err
	}
	if err := checkUnicode(msgs); err != nil {
		return 0, Extent{}, false, err
	}
	f, moved, err := fsstore.OpenAppend(s.logPath(sess.ID), now)
	if err != nil {
		return 0, Extent{}, false, err
	}
	defer f.Close()
	s.warnMoved(moved)
	fi, err := f.Stat()
	if err != nil {
		return 0, Extent{}, false, err
	}
	seq, _, err := lastSeq(f, fi.Size())
	if err != nil {
		return 0, Extent{}, false, err
	}
	old := *sess
	hadPreview := sess.Preview != ""
	lines, seq, err := numberLines(sess, msgs, seq)
	if err != nil {
		return 0, Extent{}, false, err
	}
	if err := fsstore.AppendLines(f, lines); err != nil {
		return 0, Extent{}, false, err
	}
	ext := Extent{From: Point{file: fi, size: fi.Size()}, To: Point{size: -1}}
	if after, err := f.Stat(); err == nil {
		ext.To = Point{file: after, size: after.Size()}
	}
	// The session was last active at its last message's time: now, but
	// for an import extending an old history.
	active := now
	if n := len(msgs); n > 0 {
		if at, err := msgs[n-1].TS.Instant(); err == nil {
			active = at
		}
	}
	// The catalog's line is written once the transcript is synced, and
	// not synced itself: it is a cache, which a crash can leave only
	// behind the transcript (its line lost), never ahead of it; Check
	// finds such a session and repair levels the catalog.
	counted := *sess
	counted.MessageCount = seq
	var entry catalogEntry
	if ext.To.size >= 0 {
		entry = entrySized(&counted, active, now, ext.To.size)
	} else {
		entry = s.entryOf(&counted, active, now)
	}
	catalog, due, cerr := s.appendCatalog(entry)
	if catalog != nil {
		catalog.Close()
	}
	if errors.Is(cerr, fsstore.ErrRefused) {
		// A catalog that breaks a rule (a symlink) refuses the append, as
		// a transcript would: its lines, synced, are taken back.
		return 0, Extent{}, false, fsstore.CutBack(f, fi.Size(), cerr)
	}
	// The commit point was the transcript's sync: the lines are durable,
	// and the append has happened whatever follows. The catalog and the document's preview
	// are caches of the transcript (invariant 5), and a failure to write
	// them is told, not returned: an append reported as failed whose
	// lines are stored would be stored twice by a caller that retries.
	if cerr != nil {
		s.Warn(fmt.Sprintf("session %s: messages up to %d stored, but the activity catalog was not updated (%v): hermes fsck --repair rebuilds it", sess.ID, seq, cerr))
	}
	sess.MessageCount, sess.UpdatedAt = seq, fsstore.Later(sess.UpdatedAt, ts)
	if !hadPreview && sess.Preview != "" {
		if err := s.writePreview(sess, &old); err != nil {
			s.Warn(fmt.Sprintf("session %s: messages up to %d stored, but its document (the preview) was not rewritten (%v): the next user message appended writes it", sess.ID, seq, err))
		}
	}
	return seq, ext, due, nil
}

// maxFutureTS is how far after the store's clock a message's own ts may
// be: a client's clock a little ahead of ours is not an error, but a ts
// in 2099 would pin its session at the top of every listing and keep it
// from every prune.
const maxFutureTS = time.Minute

// stamp gives each message without a ts the time now, and rewrites the
// others (an import's own times) in TimeLayout whatever zone they came in,
// so that stored times sort. A ts that is not RFC 3339, or that is more
// than maxFutureTS after now, is ErrInvalid.
func stamp(msgs []Message, now time.Time) error {
	ts := fsstore.TimeOf(now)
	for i := range msgs {
		if msgs[i].TS == "" {
			msgs[i].TS = ts
			continue
		}
		canon, err := msgs[i].TS.Canonical()
		if err != nil {
			return err
		}
		if at, _ := canon.Instant(); at.After(now.Add(maxFutureTS)) {
			return fsstore.Invalidf("message %d: ts %s is more than %v in the future (the clock says %s)", i+1, canon, maxFutureTS, ts)
		}
		msgs[i].TS = canon
	}
	return nil
}

func preview(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > previewLen {
		return string(r[:previewLen-1]) + "…"
	}
	return text
}

// SaveResult says what a guarded whole-transcript write did.
type SaveResult struct {
	Appended int    `json:"appended"`
	Count    int64  `json:"message_count"`
	Replaced string `json:"replaced"` // with force: where the old transcript was kept
}

// Save is the guarded whole-transcript write: msgs is the full history as
// the caller knows it. If it extends the stored transcript (the stored
// messages are its prefix), only the new tail is appended. If it is shorter
// or diverges, Save refuses with ErrRefused, naming both lengths, and
// changes nothing, unless force is set: then the old transcript is kept
// beside the new one as <id>.jsonl.replaced-<unix> and msgs replaces it.
func (s *Store) Save(id string, msgs []Message, force bool) (SaveResult, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return SaveResult{}, err
	}
	unlock, err := s.lock(id)
	if err != nil {
		return SaveResult{}, err
	}
	due := false
	// Deferred before the unlock, so run after it, as Append does.
	defer func() {
		if due {
			s.compactCatalogIfDue()
		}
	}()
	defer unlock()
	sess, err := s.readSession(id, true)
	if err != nil {
		return SaveResult{}, err
	}
	stored, divergeAt, err := s.comparePrefix(id, msgs)
	if err != nil {
		return SaveResult{}, err
	}
	var why string
	switch {
	case stored > int64(len(msgs)):
		why = fmt.Sprintf("would shorten history: session %s has %d messages, the write has %d", id, stored, len(msgs))
	case divergeAt > 0:
		why = fmt.Sprintf("write diverges from the history of session %s at message %d (stored %d messages, the write has %d)", id, divergeAt, stored, len(msgs))
	}
	if why == "" {
		tail := msgs[stored:]
		if len(tail) == 0 {
			return SaveResult{Count: stored}, nil
		}
		var n int64
		n, due, err = s.appendLocked(&sess, tail)
		return SaveResult{Appended: len(tail), Count: n}, err
	}
	if !force {
		return SaveResult{}, fsstore.Refusedf("%s; nothing written (--force replaces it and keeps the old transcript)", why)
	}
	return s.replaceLocked(&sess, msgs)
}

// comparePrefix streams the stored transcript of id against msgs. It
// returns the stored count and the 1-based position of the first stored
// message that msgs contradicts (0 if none).
func (s *Store) comparePrefix(id string, msgs []Message) (stored int64, divergeAt int64, err error) {
	f, size, err := fsstore.OpenSized(s.logPath(id))
	if f == nil || err != nil {
		return 0, 0, err
	}
	defer f.Close()
	torn, err := fsstore.ScanLines(f, size, func(line []byte, off int64) error {
		m, err := ParseMessage(line)
		if err != nil {
			return &fsstore.CorruptError{Path: f.Name(), Offset: off, Err: err}
		}
		stored++
		if divergeAt == 0 && (stored > int64(len(msgs)) || !m.SameAs(msgs[stored-1])) {
			divergeAt = stored
		}
		return nil
	})
	if torn != nil {
		s.Warn(torn.String())
	}
	return stored, divergeAt, err
}

// replaceLocked replaces the transcript of sess with msgs: the old one is
// copied aside, the catalog gets its line, the new transcript is renamed
// over the old one, then the document is written, the commit point. If the
// document cannot be written, the copy is renamed back over the
// transcript (a rename needs no space on a full disk), so a failure
// leaves the session as it was and no copy behind.
func (s *Store) replaceLocked(sess *Session, msgs []Message) (_ SaveResult, err error) {
	now := s.Now()
	path := s.logPath(sess.ID)
	ts := fsstore.TimeOf(now)
	if err := stamp(msgs, now); err != nil {
		return SaveResult{}, err
	}
	if err := checkUnicode(msgs); err != nil {
		return SaveResult{}, err
	}
	kept, err := fsstore.CopyAside(path, fmt.Sprintf(".replaced-%d", now.Unix()))
	if err != nil {
		return SaveResult{}, err
	}
	replaced := false
	defer func() {
		if err == nil {
			return
		}
		switch {
		case replaced && kept == "":
			os.Remove(path) // there was no transcript
		case replaced:
			if rerr := os.Rename(kept, path); rerr != nil {
				err = fmt.Errorf("%w; the old transcript is kept at %s (putting it back failed: %w)", err, kept, rerr)
				return
			}
		case kept != "":
			os.Remove(kept)
		}
		fsstore.SyncDir(s.Dir)
	}()
	err = fsstore.WriteAtomic(path, func(w io.Writer) error {
		for i := range msgs {
			msgs[i].Seq = int64(i + 1)
			b, err := msgs[i].MarshalJSON()
			if err != nil {
				return err
			}
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return SaveResult{}, err
	}
	replaced = true
	sess.MessageCount = int64(len(msgs))
	sess.UpdatedAt = ts
	sess.Preview = ""
	for _, m := range msgs {
		if m.Role == "user" {
			sess.Preview = preview(m.Text())
			break
		}
	}
	if err := s.touchCatalogThen(sess, now, now, func() error { return fsstore.WriteDoc(s.docPath(sess.ID), sess) }); err != nil {
		return SaveResult{}, err
	}
	return SaveResult{Appended: len(msgs), Count: sess.MessageCount, Replaced: kept}, nil
}

// Transcript is a read-only view of a transcript as of the moment it was
// opened: the messages a writer had completed by then.
type Transcript struct {
	f    *os.File
	size int64
	warn func(string)
}

// OpenTranscript opens the transcript of id for reading. It takes the
// session's lock shared just long enough to learn the size of the completed
// writes, so a reader never mistakes a write in progress for a torn tail and
// never holds writers up for the length of a read.
func (s *Store) OpenTranscript(id string) (*Transcript, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return nil, err
	}
	if _, err := os.Stat(s.Dir); err != nil {
		return nil, fsstore.NotFoundf("session %s not found", id)
	}
	// A writer holds the lock for one append; one that holds it longer is
	// stuck (a stopped process), and a reader does not wait for it: it
	// reads what is complete, a write in progress looking like a torn tail.
	unlock, err := fsstore.RLockUntil(s.lockPath(id), min(s.LockTimeout, readerLockWait), s.Cancel)
	var timeout *fsstore.LockTimeoutError
	switch {
	case errors.As(err, &timeout):
		s.Warn(fmt.Sprintf("session %s: a writer holds %s; reading what it has completed", id, timeout.Path))
	case err != nil:
		return nil, err
	default:
		defer unlock()
	}
	readObservers.Tell(s.logPath(id))
	f, err := fsstore.OpenFile(s.logPath(id), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		if _, derr := os.Stat(s.docPath(id)); derr != nil {
			return nil, fsstore.NotFoundf("session %s not found", id)
		}
		return &Transcript{warn: s.Warn}, nil
	}
	if err != nil {
		return nil, err
	}
	size, err := fsstore.FreshSize(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Transcript{f: f, size: size, warn: s.Warn}, nil
}

// readerLockWait is the longest a reader waits for a writer.
const readerLockWait = time.Second

// Close releases the transcript.
func (t *Transcript) Close() error {
	if t.f == nil {
		return nil
	}
	return t.f.Close()
}

// EachLine calls fn with each stored line, raw JSON without its newline,
// valid only during the call. A torn tail is skipped and reported.
func (t *Transcript) EachLine(fn func(line []byte) error) error {
	if t.f == nil {
		return nil
	}
	torn, err := fsstore.ScanLines(t.f, t.size, func(line []byte, _ int64) error { return fn(line) })
	if torn != nil {
		t.warn(torn.String())
	}
	return err
}

// Each calls fn with each stored message in order. A line that does not
// parse is a *CorruptError with its offset.
func (t *Transcript) Each(fn func(Message) error) error {
	if t.f == nil {
		return nil
	}
	torn, err := fsstore.ScanLines(t.f, t.size, func(line []byte, off int64) error {
		// The message may outlive the call: it must not alias the
		// scanner's buffer. Its strings are cut from the same copy, which
		// is never written after this (what unsafe.String asks).
		line = bytes.Clone(line)
		m, ok := parseStored(line, unsafe.String(unsafe.SliceData(line), len(line)))
		if !ok {
			var err error
			if m, err = ParseMessage(line); err != nil {
				return &fsstore.CorruptError{Path: t.f.Name(), Offset: off, Err: err}
			}
		}
		return fn(m)
	})
	if torn != nil {
		t.warn(torn.String())
	}
	return err
}

// MessagesAt is Messages, and also says where the transcript ended when
// it was read (Point).
func (s *Store) MessagesAt(id string) ([]Message, Point, error) {
	t, err := s.OpenTranscript(id)
	if err != nil {
		return nil, Point{}, err
	}
	defer t.Close()
	msgs, err := t.All()
	return msgs, t.point(), err
}

// Messages returns the whole transcript of id in memory: for callers that
// need all of it at once (a model call). Streaming callers use
// OpenTranscript.
func (s *Store) Messages(id string) ([]Message, error) {
	t, err := s.OpenTranscript(id)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return t.All()
}

// All reads the whole view into memory and parses it; the messages alias
// that one buffer. It is Each for callers that need every message at once
// (a model call): one allocation for the bytes and one for the slice,
// instead of one per line. A large transcript is read and parsed in
// line-aligned parts, one per processor.
func (t *Transcript) All() ([]Message, error) {
	if t.f == nil {
		return nil, nil
	}
	buf := make([]byte, t.size)
	// The strings of the messages are cut from buf itself, viewed as a
	// string: buf is never written after it is read, which is what
	// unsafe.String asks, and the messages keep it alive.
	str := unsafe.String(unsafe.SliceData(buf), len(buf))
	parts := int(min(int64(runtime.GOMAXPROCS(0)), t.size/parallelPartSize+1, 16))
	bounds := make([]int, parts+1)
	for k := range parts {
		bounds[k+1] = int(t.size) * (k + 1) / parts
	}
	if err := inParallel(parts, func(k int) error {
		_, err := t.f.ReadAt(buf[bounds[k]:bounds[k+1]], int64(bounds[k]))
		if err != nil && err != io.EOF {
			return fsstore.PathErr("read", t.f.Name(), err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Move each inner bound past the end of the line it falls in.
	for k := 1; k < parts; k++ {
		if i := bytes.IndexByte(buf[bounds[k]:], '\n'); i >= 0 {
			bounds[k] += i + 1
		} else {
			bounds[k] = len(buf)
		}
		bounds[k] = max(bounds[k], bounds[k-1])
	}
	counts := make([]int, parts+1)
	inParallel(parts, func(k int) error {
		counts[k+1] = bytes.Count(buf[bounds[k]:bounds[k+1]], []byte{'\n'})
		return nil
	})
	for k := range parts {
		counts[k+1] += counts[k]
	}
	// Room is left for the turn a caller appends.
	msgs := make([]Message, counts[parts], counts[parts]+8)
	err := inParallel(parts, func(k int) error {
		return t.parse(buf, str, bounds[k], bounds[k+1], msgs[counts[k]:counts[k+1]])
	})
	if err != nil {
		return nil, err
	}
	if last := bytes.LastIndexByte(buf, '\n'); last < len(buf)-1 {
		t.warn((&fsstore.TornTail{Path: t.f.Name(), Offset: int64(last + 1), Size: int64(len(buf) - last - 1)}).String())
	}
	return msgs, nil
}

// parallelPartSize is the least a part of a parallel read holds; tests
// lower it to split small transcripts.
var parallelPartSize int64 = 4 << 20

// parse parses the complete lines of buf[from:to] into out, which has
// room for exactly as many.
func (t *Transcript) parse(buf []byte, str string, from, to int, out []Message) error {
	n := 0
	for off := from; off < to; {
		i := bytes.IndexByte(buf[off:to], '\n')
		if i < 0 {
			break // a torn tail: reported by All
		}
		line := buf[off : off+i]
		m, ok := parseStored(line, str[off:off+i])
		if !ok {
			var err error
			if m, err = ParseMessage(line); err != nil {
				return &fsstore.CorruptError{Path: t.f.Name(), Offset: int64(off), Err: err}
			}
		}
		out[n] = m
		n++
		off += i + 1
	}
	return nil
}

// inParallel runs fn(0) … fn(n-1) at once and returns their errors
// joined, lowest k first.
func inParallel(n int, fn func(k int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = fn(k)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// update applies change to the document of id under its lock and writes it
// back with a fresh updated_at.
func (s *Store) update(id string, change func(*Session) error) (Session, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return Session{}, err
	}
	unlock, err := s.lock(id)
	if err != nil {
		return Session{}, err
	}
	defer unlock()
	sess, err := s.readSession(id, true)
	if err != nil {
		return Session{}, err
	}
	old := sess
	if err := change(&sess); err != nil {
		return Session{}, err
	}
	now := s.Now()
	sess.UpdatedAt = fsstore.TimeOf(now)
	return sess, s.touchCatalogThen(&sess, now, now, func() error { return s.writeDoc(&sess, &old) })
}

// writeDoc writes sess as the document of its session, whose document was
// old (nil: none). A write that fails after its rename (the directory's
// sync) has replaced the document all the same: the old one is put back
// (or the new one removed), so that a write reported as failed is not
// seen. When that fails too, the document is the new one, and the
// catalog follows it (retract).
func (s *Store) writeDoc(sess, old *Session) error {
	return s.writeDocWith(sess, old, fsstore.WriteDoc)
}

// writePreview is writeDoc for the first user message's preview: the
// document is synced, not its directory, since its name is committed: a
// crash leaves the new document or the one before, which lacks only the
// preview (what a list shows of the first message, never a message).
func (s *Store) writePreview(sess, old *Session) error {
	return s.writeDocWith(sess, old, func(path string, v any) error {
		b, err := fsstore.EncodeDoc(path, v)
		if err != nil {
			return err
		}
		return fsstore.ReplaceFile(path, func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		})
	})
}

func (s *Store) writeDocWith(sess, old *Session, write func(path string, v any) error) error {
	path := s.docPath(sess.ID)
	err := write(path, sess)
	if err == nil {
		return nil
	}
	want, _ := json.Marshal(sess)
	var now Session
	if fsstore.ReadDoc(path, &now) != nil {
		return err
	}
	if got, _ := json.Marshal(&now); !bytes.Equal(got, want) {
		return err
	}
	if old == nil {
		if os.Remove(path) == nil {
			fsstore.SyncDir(s.Dir)
		}
		return err
	}
	write(path, old)
	return err
}

// SetCwd records dir as the working directory of id's tools.
func (s *Store) SetCwd(id, dir string) (Session, error) {
	return s.update(id, func(sess *Session) error {
		sess.Cwd = dir
		return nil
	})
}

// Tail returns the last messages of id's transcript, oldest first: it
// reads lines backwards from the end and stops after the first message for
// which stop returns true (included), or at the start of the transcript.
// Its cost is that of the messages it returns, whatever the length of the
// transcript. A torn last line is skipped, as by every reader.
func (s *Store) Tail(id string, stop func(Message) bool) ([]Message, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return nil, err
	}
	readObservers.Tell(s.logPath(id))
	f, size, err := fsstore.OpenSized(s.logPath(id))
	if err != nil {
		return nil, err
	}
	if f == nil {
		if _, err := os.Stat(s.docPath(id)); err != nil {
			return nil, fsstore.NotFoundf("session %s not found", id)
		}
		return nil, nil
	}
	defer f.Close()
	var rev []Message
	var corrupt error
	err = fsstore.EachLineBackward(f, size, func(line []byte, off int64) bool {
		m, err := ParseMessage(line)
		if err != nil {
			corrupt = &fsstore.CorruptError{Path: f.Name(), Offset: off, Err: err}
			return false
		}
		rev = append(rev, m)
		return !stop(m)
	})
	if err = errors.Join(err, corrupt); err != nil {
		return nil, err
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev, nil
}

// Rename sets the title of id. Titles are unique in a profile: a title that
// another session has is refused. The check and the writes are made under
// the titles lock: the title's index entry, then the document, then the
// removal of the old title's entry.
func (s *Store) Rename(id, title string) (Session, error) {
	if strings.TrimSpace(title) == "" {
		return Session{}, fsstore.Invalidf("empty title")
	}
	if err := fsstore.CheckID("session id", id); err != nil {
		return Session{}, err
	}
	title, err := fsstore.NormalTitle(title)
	if err != nil {
		return Session{}, err
	}
	unlock, err := s.lockTitles()
	if err != nil {
		return Session{}, err
	}
	defer unlock()
	// A session that does not exist gets no index entry.
	if _, err := s.readDocument(id, false); err != nil {
		return Session{}, err
	}
	if err := s.claimTitle(title, id); err != nil {
		return Session{}, err
	}
	var old string
	sess, err := s.update(id, func(sess *Session) error { old, sess.Title = sess.Title, title; return nil })
	if err == nil && old != "" && old != title {
		s.dropTitle(old, id)
	}
	return sess, err
}

// End marks id ended. Ending an ended session is a no-op: the first reason
// and time stay.
func (s *Store) End(id, reason string) (Session, error) {
	return s.update(id, func(sess *Session) error {
		if sess.State == StateEnded {
			return nil
		}
		sess.State = StateEnded
		sess.EndedAt = fsstore.TimeOf(s.Now())
		sess.EndReason = reason
		return nil
	})
}

// Reopen makes an ended, suspended or resume-pending session active again.
func (s *Store) Reopen(id string) (Session, error) {
	return s.update(id, func(sess *Session) error {
		sess.State = StateActive
		sess.EndedAt, sess.EndReason, sess.ResumeReason = "", "", ""
		sess.ResumePendingAt, sess.InterruptCount = "", 0
		return nil
	})
}

// SetState moves id to state with reason (the resume reason for
// resume_pending, the end reason for ended).
func (s *Store) SetState(id, state, reason string) (Session, error) {
	return s.update(id, func(sess *Session) error {
		sess.State = state
		switch state {
		case StateEnded:
			if sess.EndedAt == "" {
				sess.EndedAt, sess.EndReason = fsstore.TimeOf(s.Now()), reason
			}
		case StateResumePending:
			sess.ResumeReason = reason
			sess.ResumePendingAt = fsstore.TimeOf(s.Now())
		case StateActive:
			sess.EndedAt, sess.EndReason, sess.ResumeReason = "", "", ""
			sess.ResumePendingAt, sess.InterruptCount = "", 0
		}
		return nil
	})
}

// Removal is one session removed (or, in a dry run, that would be).
type Removal struct {
	SessionID string       `json:"session_id"`
	Title     string       `json:"title"`
	State     string       `json:"state"`
	UpdatedAt fsstore.Time `json:"updated_at"`
	Files     []string     `json:"files"`
	Bytes     int64        `json:"bytes"`
}

// Delete removes session id: its document, transcript, the copies of them
// kept aside (<id>.jsonl.torn-<unix>, .replaced-, <id>.json.corrupt-, each
// maybe with .N, matched exactly: never the files of a session whose id
// begins with this one's) and its lock. An active or resume-pending session is refused
// (end it first). With dryRun it only says what it would remove.
func (s *Store) Delete(id string, dryRun bool) (Removal, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return Removal{}, err
	}
	r, err := s.deleteOne(id, dryRun)
	if err == nil {
		s.forgetTitle(r, dryRun)
	}
	return r, err
}

func (s *Store) deleteOne(id string, dryRun bool) (Removal, error) {
	unlock, err := s.lock(id)
	if err != nil {
		return Removal{}, err
	}
	defer unlock()
	sess, err := s.readSession(id, true)
	if err != nil {
		return Removal{}, err
	}
	if sess.State == StateActive || sess.State == StateResumePending {
		return Removal{}, fsstore.Refusedf("session %s is %s; end it first (hermes sessions end %s)", id, sess.State, id)
	}
	return s.removeLocked(sess, dryRun)
}

// forgetTitle drops the index entry of a removed session, under the
// titles lock, which is taken after the session's own lock is released
// (never while holding it). A crash before it leaves a stale entry.
func (s *Store) forgetTitle(r Removal, dryRun bool) {
	if dryRun || r.Title == "" {
		return
	}
	unlock, err := s.lockTitles()
	if err != nil {
		s.Warn(fmt.Sprintf("title index: the stale entry of session %s is left: %v", r.SessionID, err))
		return
	}
	defer unlock()
	s.dropTitle(r.Title, r.SessionID)
}

func (s *Store) removeLocked(sess Session, dryRun bool) (Removal, error) {
	r := Removal{SessionID: sess.ID, Title: sess.Title, State: sess.State, UpdatedAt: sess.UpdatedAt}
	// The document goes first, so that from then on the session does not
	// exist for readers; the lock goes last.
	paths := []string{s.docPath(sess.ID), s.logPath(sess.ID)}
	aside, err := fsstore.CopiesAside(s.Dir, sess.ID+".json", sess.ID+".jsonl")
	if err != nil {
		return r, fmt.Errorf("delete session %s: %w", sess.ID, err)
	}
	paths = append(paths, aside...)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		r.Files = append(r.Files, p)
		r.Bytes += fi.Size()
		if dryRun {
			continue
		}
		if err := os.Remove(p); err != nil {
			return r, fmt.Errorf("delete session %s: %w", sess.ID, err)
		}
	}
	if dryRun {
		return r, nil
	}
	os.Remove(s.lockPath(sess.ID))
	if err := fsstore.SyncDir(s.Dir); err != nil {
		return r, err
	}
	s.unindexID(sess.ID)
	// The removal is done; the catalog's line only keeps stats from
	// counting the session, and fsck rebuilds a catalog that lacks it.
	if err := s.recordRemoval(sess.ID, s.Now()); err != nil {
		s.Warn(fmt.Sprintf("activity catalog: the removal of session %s is not recorded: %v", sess.ID, err))
	}
	return r, nil
}

// Prune removes the ended sessions whose last activity is before cutoff
// (and whose source is source, when set). Active, suspended and
// resume-pending sessions are never removed. With dryRun it only lists.
func (s *Store) Prune(cutoff time.Time, source string, dryRun bool) ([]Removal, error) {
	all, err := s.All()
	if err != nil {
		return nil, err
	}
	var out []Removal
	for _, sess := range all {
		if !prunable(sess, cutoff, source) {
			continue
		}
		r, err := s.pruneOne(sess.ID, cutoff, source, dryRun)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		if r.SessionID != "" {
			s.forgetTitle(r, dryRun)
			out = append(out, r)
		}
	}
	return out, nil
}

func prunable(sess Session, cutoff time.Time, source string) bool {
	if sess.State != StateEnded || (source != "" && sess.Source != source) {
		return false
	}
	t, err := sess.UpdatedAt.Instant()
	return err == nil && t.Before(cutoff)
}

// pruneOne re-reads the session under its lock, so a session that became
// active since the scan is kept.
func (s *Store) pruneOne(id string, cutoff time.Time, source string, dryRun bool) (Removal, error) {
	unlock, err := s.lock(id)
	if err != nil {
		return Removal{}, err
	}
	defer unlock()
	sess, err := s.readSession(id, true)
	if err != nil || !prunable(sess, cutoff, source) {
		return Removal{}, err
	}
	return s.removeLocked(sess, dryRun)
}

// IDs returns the ids of all sessions with a document, newest first (ids
// sort by creation).
func (s *Store) IDs() ([]string, error) { return fsstore.DocIDs(s.Dir) }

// All reads every session document, newest first. Unreadable documents are
// quarantined and reported, and the scan goes on.
func (s *Store) All() ([]Session, error) { return s.all(s.readSession) }

// Documents is All without the transcripts, of the sessions whose id keep
// keeps (nil: every one): each document's own fields, its counts and last
// activity as the document says them.
func (s *Store) Documents(keep func(id string) bool) ([]Session, error) {
	return s.all(func(id string, locked bool) (Session, error) {
		if keep != nil && !keep(id) {
			return Session{}, fsstore.ErrNotFound
		}
		return s.readDocument(id, locked)
	})
}

// all reads every session with read: readSession for callers that need the
// counts and last activity, readDocument for those that need only the
// document's own fields (a title lookup reads no transcript).
func (s *Store) all(read func(id string, locked bool) (Session, error)) ([]Session, error) {
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	out := make([]Session, 0, len(ids))
	for _, id := range ids {
		sess, err := read(id, false)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue
		}
		var corrupt *fsstore.CorruptError
		if errors.As(err, &corrupt) {
			s.Warn(err.Error())
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, nil
}

// Resolve turns what a user typed into a session id: an exact id, then an
// exact title (the newest session with it), then a unique id prefix. A
// title comes before a prefix so that finding a session by its title
// reads one bucket of the title index and one document, never the
// directory; a prefix is looked up in the id index (ids.go), which a
// miss reads too. An ambiguous prefix is ErrInvalid listing the candidates;
// nothing matching is ErrNotFound. A ref that could not be an id is
// refused before it touches a path, unless it is the exact title of a
// session.
func (s *Store) Resolve(ref string) (string, error) {
	if err := fsstore.CheckID("session id", ref); err != nil {
		// Titles are free text ("fix a/b bug"): a ref that cannot be an id
		// may still name one. It is only compared, never used in a path;
		// when it names nothing, it is not found, like any other ref.
		if ref == "" || fsstore.CheckTitle(ref) != nil {
			return "", err
		}
		byTitle, terr := s.titleIDs(ref)
		if terr != nil {
			return "", terr
		}
		if len(byTitle) == 0 {
			return "", fsstore.NotFoundf("no session titled %q (and it cannot be an id: %v)", ref, err)
		}
		return byTitle[0], nil
	}
	if _, err := os.Stat(s.docPath(ref)); err == nil {
		return ref, nil
	}
	byTitle, err := s.titleIDs(ref)
	if err != nil {
		return "", err
	}
	if len(byTitle) > 0 {
		return byTitle[0], nil
	}
	matches, ok, err := s.prefixIDs(ref, ambiguousShown)
	if err != nil {
		return "", err
	}
	if !ok {
		ids, err := s.IDs()
		if err != nil {
			return "", err
		}
		matches = fsstore.WithPrefix(ids, ref)
	}
	switch len(matches) {
	case 0:
		if _, err := os.Lstat(s.logPath(ref)); err == nil {
			// A session whose document is damaged or missing: its id
			// still names it (Inspect shows it; writers refuse it).
			return ref, nil
		}
		return "", fsstore.NotFoundf("no session with id, id prefix or title %q", ref)
	case 1:
		return matches[0], nil
	default:
		return "", fsstore.Ambiguous(ref, matches)
	}
}

// ByTitle returns the session whose title is title (the newest, if
// sessions shared it before titles were unique); ErrNotFound if none.
func (s *Store) ByTitle(title string) (string, error) {
	ids, err := s.titleIDs(title)
	if err != nil {
		return "", err
	}
	if len(ids) == 0 {
		return "", fsstore.NotFoundf("no session titled %q", title)
	}
	return ids[0], nil
}
