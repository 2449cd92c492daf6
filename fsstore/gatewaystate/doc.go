// Package gatewaystate keeps what the HTTP gateway needs across restarts:
// the responses it stored (for previous_response_id and GET), the
// conversations it routes to sessions, and the state of its runs (the last
// run, whether it stopped cleanly, the lock a running gateway holds). The
// conversations' messages themselves live in package sessions.
//
// A response is a document written once; an index (.index.jsonl) keeps
// their order so that eviction reads no document. The index is appended to
// after the document is written, and not synced, so a crash between the
// two, or a power cut before the line reached the disk, leaves a document
// the index lacks: such documents are found from a directory listing when
// the index is first loaded, and evicted first.
//
// A response's id names its session (ResponseSession), and the gateway
// stores what its document holds beyond the reply in the reply's lines of
// that session's transcript, synced with them: the document is then a
// cache (CacheResponse), written without a sync, neither it nor its
// directory. A power cut may lose it, leave it empty, or lose it with its
// index line; the gateway rebuilds it from the transcript when a read
// misses it, and fsck --repair does for every one (RestoreResponse). A
// response evicted is not rebuilt (Evicted): the responses stored are
// those the index lists, with the lost ones put in time order among them,
// and the oldest beyond the limit are evicted ones. Responses whose id
// names no session (made before ids did, or of a session whose id is too
// long to be in one) are synced with their directory (PutResponse).
//
// A conversation's mapping (conversations/<slug>.json) is written before
// the turn when its session changes, and only then: it names the session,
// whose transcript holds the turns and their responses, so a turn in the
// same session leaves it alone. A change is synced with its directory
// (PutConversation). A Responses conversation's first mapping is a cache
// (CacheConversation), written without a sync: its first session's
// document, synced, names the conversation (session_key), and a mapping
// lost or left empty by a power cut is written again from it
// (LevelConversation) by the gateway that starts after a run that did not
// stop cleanly, and by fsck --repair. A run that stops cleanly syncs the
// mappings it cached (SyncConversations) before it says so, so a power cut
// after a clean stop loses none.
//
// state.json names the run's host and pid. Whether a gateway runs is
// never judged by that pid, which means nothing on another host that
// shares the profile: the serve lock (flock) says, on every host.
//
// Two records let a stored turn be answered instead of run again: the
// record of each idempotency key (keys/<sha256 of the key>.json: the
// session and where the key's turn lies in it), written and synced before
// the turn runs, and the delivery marks of each session
// (delivered/<session>.jsonl: how much of its transcript a client received
// whole, a line appended after each reply is sent), without a sync: a
// record a power cut loses, empties or tears reads as none (the line
// before it counts), so a repeat of the turn gets its stored reply again
// and runs nothing. A log, not a document replaced each turn: a replace
// makes a new file, which costs a file system far more than an append
// (SetDelivered). The keys of `hermes sessions
// append --key` are kept with the idempotency keys (the digest of
// "sessions append", a NUL and the key, which no header's key can be).
//
// The history index (history/<xx>.jsonl, 256 shards by the digest's first
// two hex digits) maps the digest of a conversation as its client holds it
// to the session that holds it, so that a client that re-sends its whole
// conversation and names none finds its session with one read. An entry
// is a line appended to its shard, without a sync, never a file of its
// own; a store remembers where each digest's line is in the shards it
// read, and reads at each lookup only what was appended since, by any
// process (history.go). It is a cache, checked against the transcript it
// names, and rebuilt from the transcripts by fsck --repair.
package gatewaystate
