// Package sessions keeps agent conversations: a Store holds the sessions
// of one profile, each a document and a transcript, on the engine of
// package fsstore.
//
// # Files
//
// A session is <id>.json (document: metadata and caches) and <id>.jsonl
// (transcript: one Message a line, each with seq 1, 2, 3 … and ts),
// guarded by <id>.lock, which Delete removes last, under it. A writer that
// waited on a deleted session's lock makes the file again, and finds no
// session; a create that is refused leaves its lock too: CheckLocks
// reports such a lock file of no session, and removes it, with repair,
// when no one holds it. Names starting with '.' are the store's own: the
// activity catalog (.catalog.jsonl, catalog.go), whose lines say which
// session was written when, so that List reads only the most recent
// sessions, WrittenSince those written since a time (the usage roll-up
// catches up by it), and what Stats counts, its lock, the title index (.titles/,
// titles.go), the titles lock (.titles.lock) and the id index (.ids,
// .ids-recent and .ids.lock, ids.go), by which an id prefix is resolved
// without listing the directory. Copies kept aside by recovery are
// <id>.jsonl.torn-<unix>, <id>.jsonl.replaced-<unix> and
// <id>.json.corrupt-<unix>, each maybe with ".N"; a removal finds them by
// their whole name (fsstore.AsideOf), never by a pattern such as
// <id>.jsonl.*, which the files of session "<id>.jsonl.keep" match. A new
// session's id must pass fsstore.CheckNewID, which refuses such ids.
//
// # Titles
//
// A title is unique in a profile. The check and the write (Create with a
// title, Rename) are made under one profile-wide lock, .titles.lock, taken
// before the session's own lock and never after one, so two writers never
// both win one title. The check reads the title index, not every
// document: the index entry is synced before the document, so a titled
// document always has one, and an entry is trusted only when the document
// it names bears it out (titles.go). Resolve tries an exact id, then an
// exact title, then a unique id prefix, which the id index answers, so
// no lookup (a miss included) reads the directory. Check reports every session whose title an older
// one has (created_at, then id); with repair it renames it "TITLE (N)",
// the least N from 2 that no session holds, cut to the title limit.
//
// # The transcript is the truth
//
// The document's message_count and updated_at are caches of the
// transcript's last line. An append does not rewrite the document (only
// the first user message does, for the preview, synced without its
// directory: the name is committed, and a crash leaves the document
// before or after, never a mix): it writes the transcript and syncs it,
// then writes the catalog's line without a sync. The catalog is a cache,
// and its line comes after the sync, so a crash (a kill between the two,
// a power cut before the line reached the disk) can leave it behind the
// transcript, never ahead: one sync an append instead of two. A session
// whose last catalog line counts fewer messages than its transcript is
// reported by Check ("activity catalog counts N messages of session …")
// and the catalog rebuilt with repair; until then, or the session's next
// write, Stats counts the messages its line does, and the session lists
// as last active at that line's time. A failure to write the catalog's
// line or the preview, caches both, is warned of and the append succeeds
// (a caller told it failed would retry and store its messages twice); a
// failure of the transcript's own write or sync fails it, cut back. So a
// document is behind its transcript by design, and every reader
// (Get, List, Prune, a rewrite) takes the count and the last activity from
// the transcript's last line, which costs one open and a small read. A
// document ahead of its transcript is damage, which Check reports and
// repairs. An append reads the last line of the transcript, not the whole
// file, so its cost does not grow with the history.
//
// A store keeps the documents it read decoded (docCache, at most 1,024),
// each with the stamp of its file (device, inode, size, modification and
// change times: a fresh statx on Linux, as for sizes, an lstat
// elsewhere), so that a gateway turn's four reads of its session's
// document (routing, the engine, the two appends) cost a stat each, not
// a read and a decode. A document is kept only when an append read it
// under the session's lock and the transcript's time after the append,
// by the filesystem's own clock, is past the document's: a rewrite since
// (any process, any host: every writer takes the lock) then has a later
// time, and a different stamp, even if it landed on a reused inode with
// the same size; within one tick of a coarse clock (git's "racy" case) it
// is not kept. A reader whose stamp differs reads the document again.
//
// # A transcript read once a turn
//
// A transcript read whole (MessagesAt) says where the read ended, and an
// append (AppendAt) where it began and ended: a Point, the file (device
// and inode), the size and the modification time. A caller that keeps a
// transcript in memory, and appends to it, knows it is still the file's
// while each append begins at the Point the last one (or the read) ended
// at: a transcript is only appended to, a rewrite is another file, and
// any other append moves the size. The gateway's turn sends its provider
// the transcript routing read this way, rather than a second read. Its
// last messages (what the turn engine looks at before it stores the input:
// calls left without a result, a resume note) are taken from it too, when
// IsAt says the file still ends at the Point of the read or of the last
// append (an open and two stats), where Tail would read and decode them
// again. ObserveTranscriptReads lets a test count the reads.
//
// A create syncs its document and their directory and nothing else: its
// id index entry and its catalog line are written before the document,
// unsynced. A power cut may lose them and keep the document: the session
// is read by its id but not found by a prefix nor listed until fsck,
// which reports "id index lacks session …" and "activity catalog lacks
// session …", repairs both (a later append's line, if it survived, lists
// it sooner). A process killed loses neither (the kernel has the write).
//
// # Keyed appends
//
// AppendKeyed stores an append at most once for an idempotency key, so
// that a caller may retry an append whose outcome it could not know
// (fsstore.UnknownOutcomeError). Under the session's lock it reads the
// key's record (KeyRecords: the gateway's), writes it (synced) before the
// append, saying where the append begins, and completes it after. A
// record left begun (the append's outcome unknown) is settled by the
// transcript: the lines after where the append began are its messages
// (compared without seq and ts) or they are not, and then it is made. An
// append of several messages writes each line by itself, so one stopped
// between its lines (killed, or its filesystem gone silent) leaves the
// first of them: the lines after where it began that are its first
// messages are kept, and only the rest are appended, after whatever
// other writers appended since, so that each is stored once.
//
// # The truncation guard
//
// Save is the whole-transcript write: the stored messages are compared one
// by one with the written ones (ignoring seq and ts), and only the new tail
// is appended. A write that is shorter or diverges is refused with
// fsstore.ErrRefused, naming both lengths, and nothing changes; with force
// the old transcript is first copied to <id>.jsonl.replaced-<unix>, and
// renamed back if the document cannot be written after it, so a failed
// forced save changes nothing. CreateWith makes a session with its first
// transcript (an import) in one step: the document, written last, is its
// commit point.
//
// # Forks and compressions
//
// History is never shortened; stepping back makes a new session. Fork
// copies the first SEQ lines of a transcript into a new one as they are
// stored (seq and ts kept), streaming (io.Copy of the first bytes, which
// the kernel does with copy_file_range), and records parent_session_id
// and fork_seq; the parent is not written, and the child's document,
// written last, is the commit point. The end of line SEQ is found from the
// nearer end of the file, so a fork a few turns back reads only those.
// Compress makes a child from a summary and the kept messages (CreateWith)
// and then ends the parent (reason compression) naming the child in
// compressed_into: that write is its commit point, and a failure before
// it removes the child; a crash between the two leaves a child that no
// parent names, an ordinary session. Latest and Chain follow
// compressed_into; a fork is not in a chain.
//
// A sub-agent's session (cmd/agent's delegate tool) is a child too: its
// parent_session_id is the caller's, and its delegation field names the
// call and the task; List with ListOptions.Parent finds a session's
// children of every kind, reading each document the catalog lets through
// (the catalog does not hold the parent). Follow reads a transcript as it
// grows, a whole line at a time, until the session ends.
//
// # Idle sessions
//
// Idle lists the active sessions of a source last active before a cutoff
// (the gateway's gateway.idle_end). It reads the catalog backwards only as
// far as the caller's previous cutoff: every write to a session adds a
// catalog line, so a session whose latest line is older was as idle at
// the previous scan. EndIdle ends one under its lock, after reading it
// again.
//
// # Times
//
// A message's own ts (an import's, a client's) is rewritten in
// fsstore.TimeLayout whatever zone it came in; one that is not RFC 3339,
// or that is more than a minute after the store's clock, is
// fsstore.ErrInvalid, and nothing is written. Check reports a document whose times are in another
// form (written before that rule) and repairs it without moving an
// instant. A session made by CreateWith with its own created_at,
// updated_at and ended_at (an import's, from its history) keeps them: it
// was last active when its history says, and the catalog lists and the
// prune selects it by that time (catalog.go).
//
// # Search
//
// Search reads transcripts, never an index: its cost is the bytes read,
// not the number of sessions. One listing of the directory names the
// sessions; a fixed set of workers (one per processor, each with a buffer
// it keeps) take them by an atomic index and read them through raw
// descriptors, without a lock: appends add whole lines, so the bytes
// after the last newline (a torn tail, or an append in progress) are
// skipped, and a line is never seen half written. A transcript of size 0
// costs a stat and no open. The raw bytes are scanned for the query's
// rarest byte, in both cases; a line is decoded only around a raw match
// or a JSON escape that could spell part of the query, and a session's
// document (its title) is read only when its transcript matched. With a
// limit, reading stops once the newest sessions hold that many hits.
//
// A message matches in its text, in a tool call (the function's name and
// its arguments, as the model wrote them) or, for a tool result, in its
// content: what the Python hermes's full-text index covers. A hit in a
// tool call shows the call as its snippet, name(arguments), cut around
// the match like text: read_file({"path":"notes.md"}). Call ids and the
// keys of a line are not text.
//
// # Check's memory
//
// Check (fsck) reads the documents in parallel, then the transcripts,
// each once, a batch of 1,024 names at a time, and reports what it found
// (and repairs it) one at a time in the order of the names, so its
// findings are those of a sequential check. Its cross-checks (the
// catalog, the title index, the id index, a count ahead of its
// transcript) need every session at once, so it keeps of each, never its
// document: its name while the documents are read (the listing keeps
// only documents, transcripts, copies aside and temp files, sorted; locks
// are dropped as they are listed); of a document, its id (a part of the
// name, shared with the transcript's), its message_count, its state
// (interned), its transcript's count and its last catalog line's, and
// three flags, about 96 bytes with the name; of a titled
// one, also its title, its created_at as an instant and its title index
// bucket, about 70 bytes more. The catalog is read line by line into
// those flags; only the sessions whose last line gives another state
// than the document, and those it names without a document, are kept
// with what it says. The title index is read a bucket at a time beside
// the titles sorted by bucket, the id index line by line beside the
// sorted ids. So 100,000 titled sessions keep about 17 MB, and
// fsck sets the collector to half its default headroom over it, since
// what the check reads and drops is many times what it keeps: its peak
// resident size at 100,000 titled sessions of mixed sizes is under 60 MB
// (it was 340 MB when it kept every document).
//
// # Recovery
//
// A torn last line is skipped by readers and moved aside by the next
// writer (fsstore.OpenAppend). An unreadable document is quarantined by
// the read that finds it; Check with repair then makes a new one from the
// transcript, with source "recovered" and state active, so that no prune
// removes it before a person has looked. A catalog that lacks a session is
// rebuilt from the documents; so is a title index that lacks an entry,
// and an id index that lacks a document's id or is out of order.
//
// # Stats
//
// Stats reads the catalog only: each line carries the session's state,
// source, message count and transcript size as of that write, and a
// removal appends a line that says so (stats.go). A line from before
// these fields sends Stats to the session's document.
//
// # Filtered lists
//
// A list filtered by state or source (`sessions list --state ended`, the
// gateway's status) reads the same lines: a session whose last line has
// another state or source is passed over without its document being
// opened, and the document of each session that a line lets through is
// read and filtered again, since it is the truth. So a filtered list never
// lists a session whose document does not match, and it opens only the
// documents it lists. Its cost follows how far back in the catalog its
// page's sessions are: a filter that most recent sessions pass costs what
// the unfiltered list does, at 1,000 sessions or 100,000. A filter that
// few pass (fewer than one in 16 of the last 512 lines), or none, is read
// from a value index instead (values.go): per value of a source or state
// that a list has asked for, a file of the catalog's lines of the
// sessions that have it, kept up to date by the lists that read it, from
// the lines appended since the last, and written again from the catalog
// when it was compacted. Its cost follows the sessions that have the
// value and the appends since the last such list, not the number of
// sessions; the first such list after a compaction of the catalog walks
// it whole (0.25 s at 100,000 sessions, whole process) to write the file. A
// write to a session never touches it: a state changes with every end
// and reopen, and an append would pay for a list that may never come.
// The one case where the line is not the document is a
// document changed other than through the store (edited by hand), or a
// crash between a write's catalog line and its document: that session can
// be left out of a filtered list until its next write or `fsck --repair`,
// and fsck names it ("activity catalog says session … is active; its
// document says …").
package sessions
