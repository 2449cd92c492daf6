// Package sessions keeps agent conversations: a Store holds the sessions
// of one profile, each a document and a transcript, on the engine of
// package fsstore.
//
// # Files
//
// A session is <id>.json (document: metadata and caches) and <id>.jsonl
// (transcript: one Message a line, each with seq 1, 2, 3 … and ts),
// guarded by <id>.lock. Names starting with '.' are the store's own: the
// activity catalog (.catalog.jsonl, catalog.go), whose lines say which
// session was written when, so that List reads only the most recent
// sessions, and what Stats counts, its lock, the title index (.titles/,
// titles.go) and the titles lock (.titles.lock).
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
// exact title, then a unique id prefix, so a title lookup never reads the
// directory. Check reports every session whose title an older
// one has (created_at, then id); with repair it renames it "TITLE (N)",
// the least N from 2 that no session holds, cut to the title limit.
//
// # The transcript is the truth
//
// The document's message_count and updated_at are caches of the
// transcript's last line. An append does not rewrite the document (only
// the first user message does, for the preview): it writes the transcript
// and the catalog and syncs both at once, which halves the syncs of a
// turn. So a document is behind its transcript by design, and every reader
// (Get, List, Prune, a rewrite) takes the count and the last activity from
// the transcript's last line, which costs one open and a small read. A
// document ahead of its transcript is damage, which Check reports and
// repairs. An append reads the last line of the transcript, not the whole
// file, so its cost does not grow with the history.
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
// # Times
//
// A message's own ts (an import's, a client's) is rewritten in
// fsstore.TimeLayout whatever zone it came in; one that is not RFC 3339,
// or that is more than a minute after the store's clock, is
// fsstore.ErrInvalid, and nothing is written. Check reports a document whose times are in another
// form (written before that rule) and repairs it without moving an
// instant.
//
// # Recovery
//
// A torn last line is skipped by readers and moved aside by the next
// writer (fsstore.OpenAppend). An unreadable document is quarantined by
// the read that finds it; Check with repair then makes a new one from the
// transcript, with source "recovered" and state active, so that no prune
// removes it before a person has looked. A catalog that lacks a session is
// rebuilt from the documents; so is a title index that lacks an entry.
//
// # Stats
//
// Stats reads the catalog only: each line carries the session's state,
// source, message count and transcript size as of that write, and a
// removal appends a line that says so (stats.go). A line from before
// these fields sends Stats to the session's document.
package sessions
