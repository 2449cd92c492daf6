// Package usage keeps what each model call cost: a Call, the tokens one
// call used, is stored on the transcript line of the message the call
// produced (its Extra "usage"), in the same write, so that a crash can
// never leave a call counted without its message or a message without its
// call. Nothing else holds a call: what reports keep to answer fast is a
// cache rebuilt from the transcripts.
//
// # The record
//
//	{"id":"20261128_061500_9f…","input":1843,"output":275,"cache_read":1664,
//	 "reasoning":256,"input_includes_cache":true,"model":"o4-mini-2025-04-16",
//	 "provider":"openai","request_id":"req_8f1c","latency_ms":812}
//
// Its fields:
//
//   - id: the call's identity, made when the call returns (NewID). A line
//     copied to another session (a fork, the turns a compression keeps) or
//     imported again keeps its id, so a call is counted once however many
//     lines hold it.
//   - input, output: the tokens the provider reports, as its API means
//     them. output counts reasoning tokens too (reasoning says how many of
//     them were). input_includes_cache says that input counts the cache
//     reads (OpenAI's prompt_tokens); without it input is only the tokens
//     read afresh (Anthropic's input_tokens). Fresh is the input less the
//     cache reads either way, the input a report shows.
//   - cache_read, cache_write_5m, cache_write_1h: tokens read from the
//     prompt cache, and written to it for five minutes or an hour, when the
//     provider says.
//   - model (as answered), provider, request_id (the upstream's, when it
//     gives one), latency_ms (from the request to the parsed reply).
//   - purpose: empty for a turn's call; "compress" for a compression's
//     summary, stored on the summary message that starts the new session;
//     "delegate" for a sub-agent's, stored in its child session.
//
// An import may find calls that made no message of the transcript it
// builds (a Claude Code response on an abandoned branch, the Python
// agent's session totals), and a call may fail after the provider counted
// its tokens ("failed": true, billed though it made no reply): they are
// kept in the Extra "usage_other" of a message (OtherField; for a failed
// call, the reply of the retry after it, or the engine's note of the
// failed turn), a list of calls each with its own "ts", and counted like
// the others.
//
// Zero counts and empty strings are left out but for input and output.
//
// # Reports
//
// Walk reads every session's transcript, in the order of the session ids
// (a fork's and a compression's come after their parent's), and yields
// each call once: a call whose id a line read before held is a copy, and
// is skipped, so that forks, compressions and a file imported twice under
// two ids never count a call twice. Report sums the calls a Filter picks by
// day or month (local time), session, model or source. A row's input is
// the fresh input (Call.Fresh), its cache create the cache writes, its
// total the four kinds each counted once: ccusage's columns.
// SessionRow sums one session's own calls: those its transcript holds
// less those its ancestors' (parent_session_id) hold.
//
// # The roll-up
//
// Reports read a Rollup, <profile>/usage, not the transcripts: days/<day>.jsonl
// holds a line per call and per session that holds it ({session_id,
// source, ts, usage}), filed by the UTC day of the call's time; a copy of
// a call keeps its time, so every holder of a call is in one file, and a
// report reads only the files of the days it covers (and the day on each
// side, for local days). The steps of a Sync, under usage/.lock:
//
//  1. Read state.json ({version, synced, catalog}). Missing, unreadable
//     or of another version: rebuild (step 5).
//  2. Ask the activity catalog for the sessions written since: from the
//     mark where the last Sync stopped reading it (Store.WrittenAfter),
//     or, when the catalog was compacted or rebuilt since, by time, from
//     synced less syncMargin (the hosts on a profile write with their own
//     clocks). Either costs what was written since, not the sessions.
//  3. Read each one's transcript; append, synced, the lines of its calls
//     that its days' files lack (a torn last line is moved aside first).
//  4. Write state.json with the time step 2 began and the catalog's end,
//     atomically but without a sync (a cache), unless step 2 found
//     nothing. A crash or a power cut before it makes the next Sync do
//     steps 2 and 3 again, which adds nothing twice.
//  5. A rebuild removes state.json, then the day files, files every
//     session's calls, and writes state.json last.
//
// Each reads a day's lines, drops those of sessions removed since
// (Store.Exists), and yields each call once, for the least session id
// among those that still hold it: what Walk yields from the transcripts,
// which the property test checks after random turns, forks,
// compressions, double imports, deletes and prunes. Check compares the
// roll-up with the transcripts (a call a transcript holds and the
// roll-up lacks, or one filed for a live session that does not hold it);
// a rebuild repairs either.
//
// # Prices
//
// Cost is computed when a report is made, from the tokens and the Table
// in force: config.yaml's pricing (Pricing: US dollars per million tokens
// of input, output, cache_read, cache_write_5m and cache_write_1h, by
// model name or path.Match pattern), then the shipped table of
// ShippedDate. A model's price is its exact name, else the longest pattern
// that matches it, in the config, then in the shipped table. A call has a
// price only when every kind of token it used has one; a report counts
// the others apart, never at 0. A malformed pricing entry is an
// fsstore.ErrInvalid error naming its key (pricing.gpt-4o.input).
package usage
