// Package gateway is the HTTP API of hermes (`hermes gateway serve`): an
// OpenAI-compatible server whose conversations are hermes sessions, so that
// a conversation survives restarts, evictions and timed-out drains as one
// session, never as N unlinked ones and never reset.
//
// Routes: POST /v1/chat/completions, POST /v1/responses,
// GET /v1/responses/{id}, GET /v1/models, GET /health. Replies come from
// the configured provider (cmd/provider; echo by default). Every response
// that concerns a session carries its id in the X-Hermes-Session-Id header,
// errors included (a failed turn names the session that keeps the request's
// messages). The state of the gateway itself is kept by
// gatewaystate.Store under <profile>/gateway.
//
// # One path for both APIs
//
// Each endpoint reads as four steps. Decode (decodeChat, decodeResponses)
// turns its wire shape into one request: the messages (a chat client's
// whole conversation, or a Responses input), the model, the tools and the
// parameters in chat completions' terms, and the fields that name a
// conversation. Route (the router of route.go: routeRequest) finds or
// makes the session by one set of rules: an Idempotency-Key seen before,
// X-Hermes-Session-Id, then, for chat, the history; for Responses,
// conversation, previous_response_id, a client's thread headers, then the
// history. Run
// (run) answers from a stored reply or runs the engine's turn. Encode
// writes the reply in the endpoint's shape, whole or streamed.
//
// # Anthropic's Messages API
//
// POST /v1/messages decodes (decodeMessages) into a chat completion's
// request, and is routed as one: by its history (or the session header, an
// idempotency key); one that carries X-Claude-Code-Session-Id, Claude
// Code's session, is routed as a Responses request naming its thread
// (routeThread), so that a compacted history goes on in its session. One
// that carries it and offers no tools is a side request of Claude Code's (a
// title, a quota check; the conversation's turns all offer its tools): it
// is answered by one call of the provider (runSide), routed nowhere, stored
// nowhere, and carries no X-Hermes-Session-Id. The request's system (a
// string, or text blocks as text parts) is a system message first; a user
// message's tool_result blocks are tool messages (content as a string or
// parts; is_error kept in the message's is_error), its other blocks one
// user message after them; an assistant message's text blocks are its
// content, its tool_use blocks its tool calls (the input as arguments), its
// thinking and redacted_thinking blocks kept in provider.ThinkingBlocks,
// other blocks (server tools') left out. Blocks pass as content parts: text
// as text parts, a base64 image as an image_url part with a data: URL, a
// url image as an image_url part, any other block as it came; every one
// without its cache_control, which a client moves from request to request
// and which would otherwise make each turn's history differ from the stored
// one. The history comparison ignores thinking blocks as it ignores every
// field besides role, content, name and tool calls: the stored copy (the
// provider's, as the API gave it) is what a provider is sent. Tools of a
// type other than custom (the API's server tools) have no function form and
// are left out. tool_choice maps to chat completions' (any is required,
// tool a named function, disable_parallel_tool_use parallel_tool_calls
// false), stop_sequences to stop. thinking, output_config,
// context_management and the anthropic-beta values are for an anthropic
// provider alone (provider.AnthropicParams).
//
// The reply is a message object (messageObject): the thinking blocks of
// the reply's last assistant message, its text, a tool_use block for each
// call it ends with; stop_reason tool_use with calls, else the stop reason
// the provider stored (provider.StopReason), else end_turn; usage from the
// provider's, input_tokens being the uncached part. Streamed, each block
// is in its place: an anthropic provider's thinking blocks first, each
// whole as it ends (provider.BlockWriter: a client that takes the last
// block for the answer, as claude -p does, must find the text after
// them), the text as one text block as it arrives, then the tool_use and
// other blocks whole after the turn, each a content_block_start, its
// deltas and a content_block_stop; then message_delta and message_stop. A
// failure after the stream began is an error event.
//
// Every error on /v1/messages and below is in the Messages API's shape,
// its type from the status (messagesErrorType); fail, the one place
// errors are written, chooses the shape by path. count_tokens decodes the
// request as a message's, stores nothing, and answers the provider's own
// count when it has one (provider.TokenCounter: anthropic), else
// (len(system) +
// each message's content and role + 8 + each tool) / 3 tokens: JSON bytes
// over 3, above the 4 or so bytes a token English text runs at, so that a
// client that compacts at a token budget does it early rather than late.
//
// # A turn
//
// A turn is the chat command's, run by the same engine (cmd/agent): the
// request's new messages are stored (and synced) before the provider is
// called with the whole stored history (the transcript as routing read it
// to match the client's history, and the messages the turn stored since,
// not a second read of the file: agent.Turn's Stored, given up for the
// file when anything else wrote to the transcript in between), and the
// reply is stored after; a
// provider failure (502) or a client that goes away (which cancels the
// call) loses at most the reply. The gateway runs the built-in tools that
// gateway.tools names (none by default), approved only when tools.approval
// is auto (it never prompts); a reply that calls any other tool ends the
// turn and goes back to the client, which sends the results in its next
// request. Turns on one
// session never interleave: a per-session mutex in the server (and a
// per-conversation one, taken first), besides the store's file locks. The
// reply's text is the text of its assistant messages joined by newlines
// (what the providers stream); a reply that ends with tool calls returns
// them (finish_reason tool_calls, or function_call output items).
//
// # What the model gets
//
// Each endpoint decodes what its request asks besides the messages into
// one request value, in the chat completions API's terms (the provider's:
// provider.Request.Model and Params), and every provider call of the turn
// is sent it:
//   - model: the request's, else the configured one (gateway: provider
//     settings' model; the provider's name when none). A model that
//     gateway.models lists (Options.Models) is answered by that entry's
//     provider, asked by the entry's upstream name; any other goes to the
//     configured provider by the name the request gives, unless
//     gateway.models_only (Options.ModelsOnly) is set: then a model that
//     is neither listed nor the configured one is a 404 model_not_found,
//     OpenAI's answer to an unknown model, before anything is stored.
//     GET /v1/models lists the configured model, then the listed ones.
//     Responses report the model that answered: what the upstream's reply
//     names, else the request's, else the configured one. The echo
//     provider ignores it (its reply reports the request's), and the exec
//     provider finds it in $HERMES_PARAMS (cmd/provider). A session the
//     gateway makes (new, a fork, a successor) records the model of the
//     request that made it, else the configured one; a later request
//     naming another model leaves the document as it is.
//   - tools: the client's, after the gateway's own (gateway.tools). A
//     client's tool that has the name of one of the gateway's, or a name
//     given twice, is a 400 naming it (param tools[i]): neither the model
//     nor the gateway could tell whose a call is. Chat completions' tools
//     are passed as they are. A Responses function tool ({"type":
//     "function","name",…}) becomes {"type":"function","function":{"name",
//     …}}. A Responses custom tool (Codex's apply_patch: free-form input
//     in a grammar) becomes a function of the same name with one string
//     parameter, input, its description followed by the input's format (the
//     grammar's syntax and definition); a call of it comes back to the
//     client as a custom_tool_call whose input is that argument, and a
//     custom_tool_call the client sends back is stored as such a call
//     ({"input": …}), so the stored and the re-sent history agree. The
//     Responses API's hosted tools (web_search, file_search, mcp, computer
//     use, local_shell) have no chat completions form and are left out.
//     A namespace tool ({"type":"namespace","name":N,"tools":[…]}, how
//     Codex CLI sends an MCP server's tools, N being mcp__SERVER) offers
//     each of its function and custom tools as NAMESPACE__NAME, the name
//     MCP clients give such a tool (mcp__SERVER__TOOL); a call of one
//     comes back as the client named it, with "namespace": N, and a call
//     the client sends back with its namespace is stored under the
//     upstream name, so the history matches.
//   - tool_choice: chat's as sent; a Responses one naming a tool
//     ({"type":"function","name":…}, custom too) becomes {"type":
//     "function","function":{"name":…}}, allowed_tools likewise, "auto",
//     "none" and "required" as they are.
//   - parallel_tool_calls, temperature, top_p, user: as sent.
//   - the token limit: chat's max_tokens and max_completion_tokens as sent;
//     Responses' max_output_tokens as max_completion_tokens.
//   - stop, seed, presence_penalty, frequency_penalty: chat's, as sent (the
//     Responses API has none).
//   - structured outputs: chat's response_format as sent; Responses'
//     text.format as response_format, a json_schema format's name, schema,
//     description and strict moved into its json_schema member.
//   - reasoning: chat's reasoning_effort; Responses' reasoning.effort.
//
// A parameter sent as null is not sent; values are passed as they are,
// the upstream being their judge. An upstream that refuses the request
// (400, 404, 422: a model it does not serve, a value it does not take)
// is answered with that status, type invalid_request_error, the
// upstream's error code and its message; client libraries do not retry
// those. A 5xx, a timeout or a network failure stays a 502 provider_error.
// The tools and parameters are the request's: a request that retries a
// turn (its input stored, no reply) runs it with what that request
// carries, and one answered from a stored reply (a replay) calls no
// model at all.
//
// # A stored turn is answered, never run twice
//
// Once a turn's reply is stored, nothing after it turns the request into a
// failure that a client would retry: a response document that cannot be
// written (a full disk) is reported in the server's log and the client
// gets its reply, and a response whose document was not written is rebuilt from its reply's lines when it is read (a
// response whose id names no session cannot be chained from: 404, as if
// evicted). A session that
// cannot be made active again after its reply stays as it was until its
// next turn.
//
// A request that repeats a turn already stored gets the stored reply, and
// nothing is stored or run:
//   - By Idempotency-Key, on both routes: the key's record
//     (gateway/keys/<sha256 of the key>.json: the session and where the
//     turn begins and ends in it) is written, synced, before the turn runs.
//     A retry with the key gets that turn's reply from the same session; if
//     the turn never got its reply (a crash, a provider error), the retry
//     runs it again on what was stored, without storing its input twice.
//     The key sent with a different request is a 400
//     (idempotency_key_reused): the record holds the digest of the request
//     as decoded, tools and parameters included (request_format 1). A
//     record from a build that read fewer fields (no request_format) is
//     compared on the fields that build read (model, messages or input,
//     instructions, previous_response_id, conversation, store, stream,
//     stream_options), so a retry across an upgrade is still its retry.
//     Records live 24 hours (KeyLifetime); a
//     gateway that starts removes older ones. The official SDKs (openai
//     for Node and Python) send no Idempotency-Key unless the caller adds
//     it (a header of the request options); on their own retries they send
//     the same body with X-Stainless-Retry-Count, which names no turn: it
//     only tells a retried first turn from a new conversation (see
//     retryOpening below).
//   - Without a key, for a session named by the request (X-Hermes-Session-Id,
//     conversation, previous_response_id): when its input repeats the last
//     stored user input of the session, and that turn's reply was stored but
//     never delivered. The gateway records, after a reply is written whole to
//     the connection, how much of the session a client has received
//     (gateway/delivered/<session>.jsonl, a line appended a turn). A reply stored after that mark
//     never reached the client (the gateway was killed, or the connection
//     broke, between the store and the send), so the same input is the
//     client's retry: it gets that reply. Once the reply was delivered, the
//     same input is a person saying the same thing twice, and is a new
//     turn. For chat completions the repeat is a history that ends with
//     that turn's input (without the reply), which would otherwise fork.
//     The mark is written after the send without a sync (a cache: a
//     process killed loses nothing): lost in a power cut right after a
//     send, or left empty by one, the next repeat of that turn's input
//     counts as a retry and gets the stored reply again, which runs
//     nothing. A turn syncs the client's message and the reply, and a
//     conversation's first turn also its session's document, its
//     directory and its preview (TestTurnSyncs): 2 and 5 syncs, on both
//     routes. A Responses turn's document is a cache of its reply's lines
//     (see Responses: where a request goes), and a conversation's first
//     mapping a cache of its first session (below), so a conversation's
//     first turn makes 5 too; a later turn leaves the mapping alone.
//
// A turn cut short inside one of the gateway's own tools (the gateway was
// killed while the tool ran, the client left during the call, the
// provider failed after the results) stored part of a reply that no
// client received: the gateway's calls, maybe their results. Routing
// sees the transcript without that part (transcript, agent.Engine.CutAt),
// so every way of naming the conversation finds the turn one that got no
// reply, and its retry runs it on without storing its input again: the
// engine answers each call left without a result as interrupted (nothing
// is run again) and calls the model, and the client gets the whole reply,
// the cut part included, as it would have without the cut. A reply is
// never built from a cut one, so a call of a gateway tool never reaches a
// client as if it were the client's to run. When the session was
// suspended (or its resume_pending expired) meanwhile, the retry goes on
// in a successor, which begins with the client's messages only; it stores
// the cut reply, each call answered as interrupted, after the retried
// message (carried, also through successors a kill left empty), so the
// model learns of the calls instead of making them again.
//
// A conversation that names no session and has no reply yet (a chat
// client's first turn) is recorded in the history index once its turn
// stored it (indexOpening): a retry of that turn, after the client dropped
// the stream, the gateway died or the provider failed (a client library
// retries a 502 by itself), continues that session and stores its
// messages once (retryOpening), so no session is left holding only the
// failed attempt's message. A request is taken for that retry when it
// sends the same opening messages (as the index's digest compares them)
// and either says it is one, with X-Stainless-Retry-Count above 0 (the
// official client libraries number their automatic retries so, the
// first attempt sending 0 or nothing), or comes within
// OpeningRetryWindow (2 minutes) of the stored messages, longer than
// the libraries' own waits between retries. Otherwise (an unmarked
// request later than that, or the same opening after its reply was
// delivered) the same words begin a new conversation: two people who
// both open with "hello" get a session each. A first turn whose reply was
// stored but never delivered hands that reply only to the same request,
// body for body (requestDigest: its tools and parameters included, as a
// library's retry re-sends it; the opening's index entry keeps the
// digest of the request that stored it): a client with tools of its own
// gets a turn of its own, with its tools offered, in a new session.
//
// These rules hold at every instant. The router holds the lock of a
// session it makes from before the session exists until the request's
// handler returns, so a request that finds a first turn by its opening
// while it runs waits for it. A reply's send is recorded, under the
// session's lock, before the handler returns, and ends once the delivered
// record is written (or the send failed): a request that repeats the turn
// waits for it (undelivered) before it decides that the reply never
// reached its client. So a second client that sends the same opening as
// soon as the first has read its reply finds that reply delivered, and
// starts its own conversation; it never gets the first's reply, session
// or tools. A request that does not repeat the turn waits for no send: a
// client that stopped reading holds up only its own retries, until the
// write timeout drops it.
//
// After a crash, only sessions whose last turn did not finish (their
// transcript does not end with a reply that calls no tool) are marked as
// interrupted by the restart (see below): a turn that got its reply before
// the crash gets no restart note.
//
// # A conversation that names no session: found by its history
//
// Most clients (chat front-ends, the SDKs' loops, Codex CLI with
// store:false) re-send the whole conversation at every turn and name no
// session. Such a request (chat completions without X-Hermes-Session-Id;
// a Responses request without conversation or previous_response_id) is
// found by its history: the messages up to its last assistant message,
// in the canonical form of conversationDigest (roles and texts; a reply
// as the API returned it, its text and the tool calls it ends with;
// nothing a client drops: notes, stored instructions, reasoning, ids,
// timestamps, the gateway's own tool steps). After every such turn, and
// every chat completions turn (whose client always sends the whole
// conversation, so that it may later leave out its session's id), the
// gateway records the digest of the conversation its client now holds
// (what it sent and the reply) in the history index (a line appended to
// gateway/history/<xx>.jsonl), with the session and the transcript's
// length then. The index is a cache, written
// without a sync: a power cut may lose its latest entries, and fsck
// --repair writes them again from the transcripts (RebuildHistory). The next request's
// history has that digest: one file read, whatever the number of
// sessions, and after a restart too. The entry is checked against the
// transcript it names (the digest of its first messages) and not used
// when they differ. What a turn costs beyond that grows with the history
// only by reading what the client sent once: the body is checked once
// (sessions.ValidJSON), its messages member is cut out of it before
// encoding/json decodes the rest (decodeChatBody), the messages are cut
// out of that without being decoded or copied (rawList) and each is read
// by the store's fast path (sessions.ParseValidMessage), then hashed once
// for the lookup, each text that is a JSON string without escapes from
// the bytes the client sent (walkConversation): the stored history is
// matched by that digest (one index file), never by encoding what is
// stored again. A 1,000-message conversation's turn costs 2.5 ms of CPU
// more than a 20-message one's, where it cost 2.9 ms more
// (BenchmarkStatelessTurn, cpu-ns/op). Then (routeHistory): the session
// continues; or, when it already holds the new messages and no reply, the
// turn is retried without storing them again; or, when it answered them and the answer
// was never delivered, the stored reply is returned; or, when it moved on
// otherwise (a regenerate, an edited message), the conversation forks: a
// new session, parent the old, holding the history up to that point. A
// conversation with no assistant message yet, or whose history no
// session has (an edited first message shares nothing with any session),
// starts a new session. Two clients whose conversations are the same text
// share its session until they differ, and then fork, as one client's
// regenerate does: one gateway serves one user.
//
// # Chat completions: where a request goes
//
// With X-Hermes-Session-Id the session continues; an unknown id is a 404
// (code session_not_found) rather than a new session, so a typo never
// starts a stranger's conversation; an id that cannot be one is a 400.
// Without it, the session is found by the conversation's history (above),
// or is a new one (source gateway). The client sends its whole
// conversation; it is compared with the stored transcript message by
// message (sessions.Message.SameAs on role, content, tool calls, tool call id
// and name; extra fields that client libraries echo back, such as refusal or
// annotations, are not compared). Messages hermes added itself carry the
// extra field "hermes_note": true (the resume note) and are skipped, so they
// never make a client's history look contradictory. A client's assistant
// message also matches a run of stored assistant and tool messages whose
// text is what the gateway returned for it (an agent's tool loop inside one
// turn). When the stored history is a prefix of the client's, only the rest
// is appended (nothing, for a retry of a turn that got no reply); when it is
// not (an edit, or a shorter history), the client's whole conversation goes
// to a new session whose parent_session_id is the named one, which is left
// untouched.
//
// # Responses: where a request goes
//
// In this order, the first that applies: an Idempotency-Key seen before
// (its turn's session), X-Hermes-Session-Id, conversation,
// previous_response_id, the thread a client names in its own headers
// (Codex CLI's thread-id or session-id: a conversation whose slug is
// "thread-" and the id, whose input is the whole history, or a compacted
// one, continued as with X-Hermes-Session-Id; prompt_cache_key is not
// used, since clients share one key across conversations), then the
// input's history (above), else a new session.
//
// X-Hermes-Session-Id continues that session, as on chat completions (an
// unknown id is a 404 session_not_found, an invalid one a 400), and wins
// over conversation and previous_response_id, whose mapping and chain it
// leaves alone. Its input is new items, appended, unless it begins with
// the session's whole history, instructions aside (a client that re-sends
// it each time, as Codex does with store:false): then only the rest is
// appended, nothing for the retry of a turn that got no reply. Such a
// history that departs from the stored one (more than one message, the
// first as stored: a regenerate, an edit) goes whole to a new session
// whose parent is the named one, as on chat completions.
//
// conversation (a slug, or {"id": slug}; checked with fsstore.CheckID) maps
// to a session through conversations/<slug>.json, written when the
// conversation starts (before its first turn, so a crash during it does not
// lose the mapping) and when its session changes, and only then: it names
// the session, whose transcript holds the responses. The first mapping is
// written without a sync: the conversation's first session names it
// (session_key conversation:<slug>), so a gateway that starts after a run
// that did not stop cleanly writes again a mapping lost or left empty
// (LevelConversations, reading every session's document: a cost of such a
// start alone), and so does fsck --repair; a clean stop syncs the mappings
// it wrote first. A change of session is synced. The mapping does not
// depend on the response documents: after an eviction or a
// restart the conversation continues in its session. previous_response_id
// continues the session of that response; unknown (never stored, evicted,
// store:false) it is a 404 as in the API. Both together are a 400, as in
// the API. A previous_response_id that is not the latest answered turn of
// its session branches: a new session (parent the old) starts with the
// history up to that response. New input is appended, except when it
// repeats exactly the messages of a turn that got no reply (a client's
// retry after a failure or a restart). instructions are stored as a system
// message marked "hermes_instructions": true before the input, and only when
// they differ from the last instructions stored. store:false keeps no
// response document (so no GET and no chaining), but the turn is in the
// session like any other: hermes keeps transcripts.
//
// A stored response costs its turn no sync. Its id names its session
// (resp_, the time, 8 random bytes, the session id), and every message the
// turn stores after its input carries, in the field hermes_response
// (stampField, through agent.Turn.Mark), the response's id, what its
// request said that the response reports (created_at, model,
// previous_response_id, conversation, instructions, the parameters as
// sent) and the names of the gateway's own tools: synced with the reply,
// it is what the client is told is stored. The document is then a cache
// of it, written without a sync (gatewaystate.CacheResponse) before the
// reply is sent. A read that misses it or finds it unreadable (GET,
// previous_response_id, item_reference), after a power cut, rebuilds it
// from those lines (router.response) and writes it again: the same
// document, but for its usage and model, taken from the reply's usage
// records (what the provider reported, summed) rather than from the
// provider's reply. A turn that did not end (its lines end inside one of
// the gateway's own tools, or hold no reply: agent.Ended) is not a
// response, and is not rebuilt. fsck --repair rebuilds every one lost
// (RebuildResponses), reading the sessions written since the oldest
// response kept. What is gone stays gone: the responses of a deleted
// session have no transcript to come back from, and an evicted response
// (gatewaystate.Store.Evicted: max_stored_responses newer ones stored,
// those whose index lines a crash lost counted by their time) is not
// rebuilt; fsck --repair counts every one lost, and a read knows of its
// own alone, so after a crash that lost the index's latest lines a read
// may bring back a response evicted just before them, until the next
// stored response evicts it again (as one whose remove the crash undid).
// A reply answered from a stored one (a retry) gets a new response id
// that no line carries: its document is synced, as is one whose session
// id is too long to be in a response id (96 bytes). Input items, as Codex
// CLI and the SDKs send them:
//   - message (string content, or input_text/output_text/input_image parts;
//     developer becomes system): a message;
//   - function_call, custom_tool_call and local_shell_call: a tool call of
//     an assistant message (calls in a row are one message, as parallel
//     calls are in the chat API). A custom tool's free-form input is its
//     arguments as sent, or {"input": …} when the request offers that
//     custom tool (see What the model gets); a local shell call is a call of local_shell whose
//     arguments are its action (the command, its directory, timeout and
//     environment), since Codex answers it with a function_call_output. A
//     call without a call_id (a local shell call's id stands in) is a 400:
//     nothing could answer it;
//   - function_call_output and custom_tool_call_output: a tool message;
//   - item_reference ({"type":"item_reference","id":…}, which the Vercel AI
//     SDK sends for the previous reply's items): the output item of a
//     stored response that it names, read as if the client had sent it
//     whole. Output item ids name their response: kind, the response id
//     without resp_, and the item's index (msg_…_0, fc_…_1, ctc_…_1; the
//     streamed events use the same ids), so no index is needed to find
//     one. An id no stored response of an existing session holds (a
//     response sent with store:false, evicted, of a deleted session, or
//     made before ids had that form) is a 400 naming it. The gateway
//     gives no reasoning items, so a reference to one is unknown too;
//   - reasoning and web_search_call: skipped. A reasoning item is not a
//     message: its summary is the model's notes and its encrypted content
//     only OpenAI's models can read. A web search is a call the API ran
//     itself, whose findings are in the message after it; stored as a tool
//     call it would have no result, a history the chat API rejects.
//
// An input of skipped items only is a 400, as an empty one is; other item
// types are a 400 naming the type. The object returned has the API's fields (no output_text
// convenience field: the SDKs compute it). Stored responses beyond
// gateway.max_stored_responses (default 1000) are evicted oldest first,
// through an index, without reading documents.
//
// # Streaming
//
// stream:true answers with server-sent events in each API's shapes, the
// text sent as the provider produces it (provider.Request.Stream). Chat:
// data: chat.completion.chunk lines (the first with the role, the last with
// finish_reason, one with usage when stream_options.include_usage and the
// provider reported it), then data: [DONE]; a failure after the stream began
// is a data: {"error": …} line and no [DONE]. Responses: response.created,
// response.in_progress, response.output_item.added, content_part.added,
// output_text.delta …, output_text.done, content_part.done,
// output_item.done, then for each function call the reply ends with
// output_item.added (its arguments empty), function_call_arguments.delta,
// function_call_arguments.done (with the name) and output_item.done (for a
// custom tool: custom_tool_call_input.delta and .done with its input), as the
// API streams them, so a client that appends the deltas to the added item
// (openai-node's ResponseStream) ends with the arguments once; then
// response.completed. Each event has type and sequence_number; a failure is
// response.failed. The response is stored before response.completed is
// sent, so a client may chain from it at once. usage, in response objects
// and chat completions, is given when the provider reported it and left out
// (not null) when it did not. A response object (whole, in
// response.created and response.completed, and from GET
// /v1/responses/{id}) reports its request's temperature, top_p, tools,
// tool_choice, parallel_tool_calls, max_output_tokens, text, reasoning and
// user as the client sent them (tools and tool_choice in the Responses
// shape, untranslated), and the API's defaults for those it did not send
// (1, 1, [], "auto", true, null, text format, null effort and summary,
// null); a response stored before they were kept reports the defaults.
//
// # Sessions that a restart interrupted
//
// On SIGTERM or SIGINT the server stops accepting and lets turns in flight
// finish within --drain-timeout; a second signal ends the wait at once. If
// they all finish, gateway/clean_shutdown is written. If not, the sessions
// with turns in flight become resume_pending with reason restart_timeout
// (SIGTERM, what service managers send to restart) or shutdown_timeout
// (SIGINT, a person's Ctrl-C), their turns are canceled (the user message
// stays), state.json records them, and no marker is written. The process
// exits 0 either way: it stopped as asked; the message on stderr says what
// it left resume_pending.
//
// A start without the marker but with a previous run recorded (state.json)
// means the last run crashed, was killed, or timed out its drain: the
// gateway sessions (source gateway) active or resume_pending whose last
// activity (any write, as the activity catalog records it) is less than 2
// minutes old become resume_pending with reason restart_interrupted. The
// sessions that the last run's own drain marked (restart_timeout or
// shutdown_timeout, after that run started) are left as they are: one
// restart interrupts a session once. Each interruption adds one to the
// session's interrupt_count; the third in a row makes it suspended (a stuck
// loop) instead. A successful turn makes the session active and clears the
// count and resume_pending_at. An append's catalog line is written after
// its transcript is synced, unsynced, as is a new session's (package
// sessions): a crash between the two, or a power cut that loses the line, leaves the session's
// activity at its write before, so a session whose last write before the
// crash was its first in 2 minutes is not marked (its turn is retried as
// any other, without the restart note).
//
// A request for a session that is:
//   - resume_pending, marked (resume_pending_at) within
//     gateway.resume_freshness (default 1h): continues it; a system note
//     naming the reason (agent.ResumeNote) is stored before the new
//     messages, marked hermes_note, and the provider sees it;
//   - resume_pending for longer: a new session, parent the old, which ends
//     with reason resume_pending_expired;
//   - suspended: a new session, parent the old, which ends with reason
//     suspended;
//   - ended by the gateway for one of those two reasons: the session that
//     replaced it (recorded in gateway/successors/<old>.json when it was
//     made), and so on to the newest; a chat client that kept the old id
//     continues there, and the response header names it. A previous
//     response of the old session gets a new session (its history is the
//     old one's), but for the retry of a turn chained from its latest
//     answered one (the same input: a client's after a kill), which goes
//     on in the successor its first attempt was given, as long as that
//     holds only the turn (retryInSuccessor): rather than run it in a new
//     session at each retry. Ended otherwise (a person ended it):
//     reopened, as chat --resume does.
//
// The new sessions of these cases start empty: what they continue is
// reachable through parent_session_id (a chat client's request then stores
// its whole history there, as for any new session). A conversation's
// mapping moves to the new session before the turn.
//
// # Idle sessions
//
// A conversation with no request for gateway.idle_end (Options.IdleEnd,
// default 24h) has its session ended, reason idle, by the running gateway,
// so that a prune can remove it in time. A sweep runs at start and then
// every tenth of IdleEnd (at most every 10 minutes); it ends only the
// gateway's own active sessions (source gateway), each under its lock,
// and leaves one a request holds for the next sweep. The next request to
// such a conversation, however it finds the session, reopens it (admit):
// the same session, only its state changed. The gateway never compresses
// a session: its client sends the history itself.
//
// # Safety
//
// One gateway per profile: it holds an flock on gateway/serve.lock for its
// lifetime; a second serve waits a second for it (long enough to outlast a
// status probe) and then exits 4 naming the running one's pid and address.
// The default address is loopback (127.0.0.1:8642). A non-loopback address
// needs an API key, in the environment variable that gateway.api_key_env
// names (default HERMES_GATEWAY_API_KEY; it wins when both are set) or in
// gateway.api_key; without one serve exits 2. When the key is set it is
// required on every route but /health, whatever the address:
// Authorization: Bearer <key> (the scheme in any case, RFC 9110), else
// 401 with an OpenAI error body (code invalid_api_key), answered before
// the body is read. gateway.api_keys adds named keys (Options.Keys), and
// each key's clients reach only what that key's made (see Key in
// scope.go): every key is compared in constant time, and the request's
// context carries the name of the one it matched.
//
// A tool of gateway.tools runs as the gateway's user for whoever sends
// the request: on loopback, any local account. So gateway.tools naming
// any tool needs the key too (serve exits 2 saying so), unless
// gateway.unauthenticated_tools is true, which starts it with a warning.
// The file tools (read_file, write_file) keep to gateway.cwd (default:
// the directory serve runs in), agent.Env.Root: a path leaving it by "..",
// an absolute name or a symbolic link is an error to the model. A session
// that recorded a working directory of its own (one a chat made) keeps
// its relative paths there, still inside gateway.cwd or refused. The
// terminal tool cannot be confined: it runs any command, which is why the
// key is required.
//
// A server on loopback is reachable from every web page the user opens,
// so a request is not trusted for coming from 127.0.0.1 (what local model
// servers such as Ollama and llama.cpp's learned from their DNS-rebinding
// reports). Before anything else runs:
//   - Host must name this server: localhost, a loopback address
//     (127.0.0.0/8, [::1]), the address the request came in on (one the
//     server listens on: a gateway on 0.0.0.0 reached at 192.0.2.7 answers
//     to Host 192.0.2.7), the host of --addr when it is a name, or one of
//     gateway.allowed_hosts (names or addresses, no port: the port is not
//     compared). Else 403, code host_not_allowed, whatever the route: a
//     DNS-rebinding page reaches the server under its own name, which
//     resolving to the server does not make one of its names.
//   - A request that carries an Origin (browsers send one with a page's
//     cross-origin requests) must name one of gateway.allowed_origins
//     (none by default; scheme://host[:port], as browsers send it; "*" and
//     "null", which any sandboxed page sends, are refused when serve
//     starts). Else 403, code origin_not_allowed, with no CORS header. An
//     allowed origin gets CORS: its preflight (OPTIONS with
//     Access-Control-Request-Method) is answered 204 before the API key is
//     asked for, since browsers send none with it, allowing GET and POST
//     and the headers Authorization, Content-Type, X-Hermes-Session-Id,
//     Idempotency-Key, OpenAI-Beta, OpenAI-Organization, OpenAI-Project and
//     the x-stainless-* headers of the official SDKs (and Chrome's private
//     network access); every response echoes the origin, with Vary: Origin,
//     and exposes X-Hermes-Session-Id. Credentials (cookies) are not
//     allowed: the API key is a header.
//   - A POST body must be sent as Content-Type: application/json (a
//     charset, if any, utf-8): else 415, code unsupported_media_type. A page
//     can send text/plain, a form or no type to any server without a
//     preflight; JSON it cannot.
//
// A client's message (or input item) cannot carry a field named hermes_*
// (400 naming the field, e.g. param messages[1].hermes_note): those fields
// mark the messages hermes puts in a transcript itself (notes, the
// Responses API's instructions), which the gateway skips when it compares
// histories and shows as its own. Such a message is refused, not
// stripped: it can only come from a client replaying hermes's own
// transcript or passing its text off as hermes's, and either should hear
// so. A body that is not valid UTF-8 is a 400 naming the offset, as the
// command line refuses such text (exit 2), never stored with U+FFFD. So is
// a lone surrogate escape ("\ud800" unpaired), which encoding/json reads
// as U+FFFD but a raw value (content, tool calls) would keep as sent: the
// 400 names the escape, its offset and, as param, the path of the value
// holding it (messages[1].content). The stored responses of a session
// that a person deleted answer 404, to GET
// and as previous_response_id, as unknown ones do: deleting a session
// takes its replies from the API too (their documents go with eviction).
//
// No client can stall the gateway or hold its resources:
//   - A request's headers must arrive within gateway.header_timeout (10s,
//     at most the read timeout), and with its body within
//     gateway.read_timeout (30s): a late body is a 408, late headers
//     close the connection. The deadline ends when the body has been
//     read, so it never bounds a turn.
//   - Each write of a response (at most 32 KiB) must be taken within
//     gateway.write_timeout (30s). Handlers never write to the connection
//     themselves: what they write is queued and sent by a goroutine of its
//     own (a stream) or after the handler returned (a whole response, sent
//     with its length), so no session or conversation lock is ever held
//     while waiting on a client. A streaming client that stops reading is
//     dropped after the timeout, like a client that goes away: its turn is
//     cancelled (the input stays stored; a retry continues it) and the
//     next request on its conversation is served at once. A turn that
//     finished is stored whatever its client does.
//   - At most gateway.max_connections (256) connections are open at once,
//     idle keep-alive ones included (closed after 2 minutes idle), and
//     the slots are kept for requests being served: slow clients cannot
//     hold them. When all are open, a new connection takes the place of
//     the one idle longest between requests, else of the one that has
//     been reading its request longest (headers, or a body, not all
//     there yet), which is closed: an idle one costs its client a new
//     connection, and a slow one is what a slowloris attack holds. A
//     request is served from the moment its handler runs with its body
//     read to the end, and is never closed for another. Only when every
//     open connection is serving is the new one accepted and closed at
//     once, unanswered (the client sees the connection closed or reset,
//     and may retry), rather than left to wait in the kernel's queue: a
//     flood of connections cannot take the process's file descriptors.
//     The log says when the limit is reached and when the connections are
//     below it again.
//   - An error answered to a request that came with a body closes the
//     connection: the body may be unread (a refusal comes first), and
//     net/http would read it, with no deadline, before answering.
//
// Request bodies are limited to gateway.max_request_body_bytes (default 10
// MiB): 413. Errors are {"error": {"message", "type", "param", "code"}}
// with param and code null when unset: 400 for malformed JSON or input,
// 403 for a foreign Host or Origin, 404 for unknown routes, sessions and
// responses, 405 for a wrong method, 408 for a late body, 415 for a body
// that is not JSON, 502 when the provider fails, 503 while stopping or
// when a lock wait times out. A message names no path of the server's: a
// 500 says "internal error" and the detail goes to the log (stderr); a
// provider failure that carries a local path (the exec provider's files)
// names the provider only; a lock timeout names the lock by the record it
// guards ("the lock of conversation c1").
package gateway
