// Package importer reads conversations written by other agent tools and
// returns them as hermes sessions: metadata plus a transcript of
// sessions.Message values with Seq left 0 (the store numbers them) and TS
// set, in RFC 3339 UTC, wherever the source gives a time. It writes
// nothing; storing the result, and the truncation guard, are the caller's.
//
// Parse first reads a prefix of the input, DetectLimit bytes (1 MiB): the
// format is detected from it, and an input that does not start with a
// JSON object (after a BOM and blank lines) is refused there, so a large
// file that is not a transcript (500 MB of NUL bytes) costs a megabyte,
// not its size. A transcript is then read whole. Detection looks at the
// keys of the first object within the prefix; a compact hermes-json
// snapshot whose first megabyte holds no key but "messages" is taken for
// hermes-jsonl, and --format says what it is.
//
// Input it cannot read is an error matching fsstore.ErrInvalid whose
// message names the format and, for line-based formats and for a JSON
// syntax error, the line ("claude-code: line 13: malformed JSON: …").
// Nothing is skipped to make a broken file import: a torn last line (a
// tool killed mid-write) is an error too, since importing the rest would
// silently drop a turn. Blank lines, CRLF line ends and a UTF-8 BOM are
// accepted.
//
// Times: a time without a zone (Python's isoformat() of datetime.now())
// is local time where the file was written, read in this process's zone
// (TZ), and stored as UTC; Unix seconds (a float) are rounded to the
// microsecond, which is all a float64 of them holds. When no message has
// a time (a snapshot), each gets the session's last activity as the
// source states it (last_updated, else ended_at, else the start);
// otherwise a message without one gets the time of the message before it,
// and one before any timed message (a system prompt put first) the
// session's start. Session.UpdatedAt, the last activity, is then the
// latest message time, and a missing start the first one.
//
// Lossless: Session.Meta holds, as a JSON object, what a hermes snapshot
// or export, or a Codex session_meta, says of the session beyond the
// Session's fields (tokens, costs, model_config, user_id, base_url,
// tools, git, cli_version, …), leaving out null and "" values and keys
// that start with "_". A message key that starts with "_" (the Python
// agent's _db_persisted, set once a message reaches its database) is
// private to its writer and dropped, so that a grown snapshot extends
// the session it was imported into.
//
// Every message built satisfies sessions.ParseMessage. Content is a string
// when the source had one text, a list of {"type":"text"} and
// {"type":"image_url"} parts otherwise, and null for an assistant message
// that only calls tools. Tool calls are OpenAI function calls,
// {"id","type":"function","function":{"name","arguments"}}, with arguments a
// JSON string.
//
// # hermes-json
//
// The Python hermes agent's snapshot session_<id>.json: one object with
// session_id, model, platform, session_start, last_updated, system_prompt,
// message_count and messages (OpenAI chat messages).
//
//   - ID = session_id, Model = model, Title = title if present, Source =
//     platform ("import:hermes-json" without one), CreatedAt = session_start,
//     UpdatedAt = last_updated (ISO or Unix seconds), and
//     parent_session_id, end_reason, ended_at and session_key when present.
//   - system_prompt becomes a leading system message unless the first
//     message is already a system message with the same text.
//   - Each message is checked by sessions.ParseMessage; keys it does not know
//     (reasoning, finish_reason, …) are kept in Extra. seq is zeroed; ts, or
//     failing that a "timestamp" key (ISO or Unix seconds, then removed from
//     Extra), becomes TS. A ts that is not a time is an error.
//   - Other top-level keys (base_url, tools, …) go to Meta; message_count
//     is a cache the store recomputes.
//
// # hermes-jsonl
//
// `hermes sessions export`: one session document a line (id, title,
// source, model, created_at, …) with its transcript in "messages". One
// Session per line, in file order. Messages are read as for hermes-json,
// keeping ts and zeroing seq. Source = source ("import:hermes-jsonl"
// without one). started_at (the Python agent's export, with Unix-second
// times and a "timestamp" on each message) stands in for a missing
// created_at, and a system_prompt field is handled as in hermes-json.
// parent_session_id, end_reason, ended_at and session_key are kept; the
// document fields the store recomputes or sets itself (state,
// message_count, profile, preview, …) are dropped, and every other key
// (the Python row's tokens and costs, an export's own meta) goes to Meta.
//
// # claude-code
//
// ~/.claude/projects/<dir>/<uuid>.jsonl. Each line is an entry with type,
// uuid, parentUuid, sessionId, timestamp and, for "user" and "assistant",
// message {role, content}.
//
//   - A sub-agent's transcript (<session>/subagents/agent-<agentId>.jsonl,
//     every entry a sidechain carrying the main sessionId) is a session of
//     its own: ID = <sessionId>-agent-<agentId> (the chain root's uuid
//     without an agentId), ParentSessionID = sessionId.
//   - The conversation is the parentUuid chain from the last user or
//     assistant entry that is not a sidechain (sub-agent) back to the root,
//     emitted root first (a sub-agent's agent-*.jsonl, all sidechain, is
//     read from its own last entry). Entries off the chain (a regenerated reply, an
//     edited prompt) are dropped. A compaction boundary has no parentUuid;
//     the chain follows its logicalParentUuid, so history before a
//     compaction is kept.
//   - Claude Code writes one API response as several assistant entries
//     (one per content block) with the same message.id; consecutive ones
//     become one assistant message, stamped with the first one's time.
//   - Assistant text blocks -> content; tool_use {id,name,input} ->
//     tool_calls with the input's JSON as arguments.
//   - A user entry's tool_result blocks -> one tool message each, in order,
//     with tool_call_id = tool_use_id and the result's text (a string, or
//     its text blocks joined by newlines) as content; its text and image
//     blocks (base64 -> data: URL) -> a user message after them.
//   - ID = sessionId, Model = the first assistant message's model (other
//     than "<synthetic>"), CreatedAt = the first chain entry's timestamp,
//     Title = the summary entry whose leafUuid is on the chain, else the
//     first summary. Source = "import:claude-code". Cwd = the last cwd
//     the chain's entries give; Meta = the last gitBranch, version,
//     userType and entrypoint they give, under those names.
//   - Thinking and redacted_thinking blocks are kept as they came,
//     signatures included, in the assistant message's thinking_blocks
//     (provider.ThinkingBlocks), so that a session resumed on the
//     anthropic provider sends them back unchanged.
//   - Dropped: server tool blocks,
//     images inside tool results, is_error (the result text is kept),
//     a response that was only thinking, "system" entries (hook and
//     compaction notices), file-history-snapshot and other bookkeeping
//     entries, and per-message metadata (toolUseResult).
//   - Usage: a response's call (usage.Call) is stored on the assistant
//     message it makes, once per message.id (the lines of one response
//     each carry its counts so far; a response id met again later is the
//     same call): the message.usage of the line with the most tokens (the
//     last, in a streamed response; the later of equals), as ccusage
//     counts it,
//     input_tokens as input, cache_read_input_tokens as cache_read,
//     cache_creation's ephemeral_5m and ephemeral_1h as the cache writes
//     (the rest of cache_creation_input_tokens as 5m), output_tokens, the
//     model, provider "anthropic", requestId. Its id is "claude-code:" and
//     the message.id, so that a file imported twice counts it once. The
//     calls of the file's responses that make no message of the chain (an
//     abandoned branch, a main file's sidechain entries, a response that
//     was only thinking) are paid for too: they go to usage_other, a list,
//     each with its own ts, on the last message of its time or before (the
//     first message for one before all), where a grown file puts them
//     again. "<synthetic>" notices call no model and count nothing.
//
// # codex
//
// ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl. Each line is
// {"timestamp","type","payload"}; the first is session_meta {id,
// timestamp, cwd, instructions, base_instructions, …}. Its
// base_instructions.text (Codex 0.16x and later) is the system prompt,
// which no message carries: it becomes the first, system, message. Its
// cwd is the Session's Cwd; its
// other keys but id and timestamp go to Meta. Session.Skipped counts the
// lines and items the import leaves out, by type. The older rollout (before Codex
// moved to the wrapper) is read too: a bare meta object on the first line,
// then bare response items, with {"record_type":…} lines skipped; its
// messages have no TS.
//
//   - response_item message: role developer -> system, user, assistant and
//     system kept; input_text/output_text -> text, input_image -> image_url.
//   - function_call {name, arguments, call_id} -> a tool call on the
//     assistant message just before it when the last message is an
//     assistant one (its text, or earlier calls of the same turn), else on a
//     new assistant message with null content. custom_tool_call (its input
//     string as arguments) and local_shell_call (name "local_shell", its
//     action as arguments) are read the same way.
//   - function_call_output / custom_tool_call_output {call_id, output} -> a
//     tool message. A string output is kept as it is (often itself JSON,
//     which is what the model saw); an object gives its "content" or
//     "output", a list its text items.
//   - ID = session_meta id, CreatedAt = its timestamp, Model = the first
//     turn_context's model. instructions become a leading system message
//     only when no message already carries them (Codex usually records
//     them as a user message too). Source = "import:codex"; no Title.
//   - Dropped: reasoning (summaries and encrypted content), ghost_snapshot,
//     web_search_call and other items, event_msg lines but token_count
//     (they repeat the response items for the UI), turn_context apart from
//     the model, and compacted lines (the items before a compaction stay
//     in the file and are imported).
//   - Usage: a token_count event whose total_token_usage moved is a call:
//     last_token_usage's input_tokens (which count the cached ones,
//     input_includes_cache), cached_input_tokens as cache_read,
//     output_tokens, reasoning_output_tokens, the last turn_context's
//     model, provider "openai" (without last_token_usage, the difference
//     of the totals). It is stored on the last assistant message that
//     holds no call, or the next one; its id is "codex:<session id>:<n>",
//     n its rank among the session's calls, the same at each import of a
//     file that grew. A file imported while its last response had no
//     token_count yet holds that message without its call, and the next
//     import of the grown file is refused (exit 4) as one that changes a
//     stored message.
package importer
