// Package memory keeps what the agent notes between sessions: MEMORY.md
// (about the work) and USER.md (about the user), each a list of entries
// bounded in characters, on the engine of package fsstore, so that no
// entry is lost however many processes, on however many hosts, change
// them at once.
//
// Layout, under <profile>/memory/:
//
//	log.jsonl   every change (Change), append-only: add, replace or
//	            remove of one entry of one file, numbered by seq (1, 2, 3
//	            … with no gap), with its time, author (agent, with its
//	            session, or user) and, for a revert, the change it undoes
//	log.lock    the lock every change holds
//	MEMORY.md   the memory entries, separated by lines of only "§"
//	USER.md     the user entries, likewise
//	state.cache both files' entries as of a log of a given size (a cache,
//	            in the engine's cache format: fsstore.CacheEncoder)
//
// The log is the truth; the two files are views of it. A change takes the
// lock, reads the state the log makes, applies the change, checks the
// bound, appends one line, synced (the commit point, and the change's one
// sync), and then writes the target's file again and the cache, each
// renamed over the old one whole but not synced: they are rebuilt from the
// log. Two writers never both read the same state and append after it,
// so a change is never lost to another; a change that passes the bound is
// refused before anything is written. A crash after the commit point, or
// a power cut before the disk has the file, leaves the file behind the log
// (the version before, or empty): the next change and fsck --repair write
// it again. Readers (a session's snapshot, the memory tool's view,
// `hermes memory show`) read the state from the log, never from the two
// files, so a stale file misleads nobody but a person reading it.
//
// The cache. Folding the log costs with its length (a thousand changes:
// several milliseconds of JSON decoding), while the state is bounded by
// the files' bounds. So each change also writes state.cache: the state
// and the size of the log it was made from, without a sync. A reader (or
// the next change) uses it only while the log has that size, read fresh
// (fsstore.FreshSize); a cache that is missing, does not parse (a power
// cut, another version of hermes) or is for another size is passed over
// and the log folded, and a reader that folded it writes the cache (under
// the shared lock no change appends, so the size is the one folded). fsck
// reports a cache for the log's size whose state is not the log's, and
// --repair writes it again. A revert folds the log, which it needs.
//
// Nothing a user wrote is lost by a change. A file that does not hold
// what the log said before a change (a person edited it, or a crash left
// it behind) is copied aside as <file>.replaced-<unix> before it is
// written again (an empty one holds nothing to keep), and the change
// warns, naming the copy; fsck reports the
// copies as notes. Every replaced or removed entry stays in the log, and
// Revert brings it back with a change of its own.
//
// Entries. An entry is UTF-8 text, trimmed, without control characters
// but newline and tab, and without a line of only "§". Adding an entry
// equal to one there changes nothing (a retried add is a no-op). Replace
// and Remove name an entry by a substring that must be in exactly one:
// none is ErrNotFound, several ErrInvalid naming them.
//
// Bounds. A file's size is the characters (runes) of its entries and of
// the separators between them. MaxChars (memory.max_chars, default 8,000)
// and UserMaxChars (memory.user_max_chars, default 4,000) bound them:
// about 2,000 and 1,000 tokens, four times the peers' defaults, which
// their users found too small. A change that would make a file larger
// than its bound is refused (ErrRefused) with both sizes and a hint; one
// that makes a file smaller is let through even past the bound (after the
// bound was lowered). From NoticeAt (90%) of its bound, every change and
// view of the file says how full it is.
package memory
