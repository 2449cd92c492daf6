// Package provider turns a transcript into a model reply: given the whole
// history of a session, the new user message last, it returns the assistant
// and tool messages to append after it. It stores nothing and runs no
// tool: the turn engine (cmd/agent) appends the reply to the transcript,
// runs the tool calls it holds and calls the provider again.
//
// New(Config) returns one of four providers. A Config it cannot use (an
// unknown name, openai without a model, exec without a command) is an error
// matching fsstore.ErrInvalid, and ErrUnknownProvider for an unknown name.
// A failing call returns an *Error whose one-line message starts with the
// provider and includes what the provider itself said. Every call is bounded
// by Config.Timeout (default 10 minutes; negative for none); a call that runs
// out of it fails with an *Error wrapping context.DeadlineExceeded.
//
// The history comes as a Request.History, read as a stream: the chat
// command passes the session's transcript itself, so a resume of a long
// session calls the provider at once and a provider reads the history as
// it needs it (exec feeds it to the command's stdin line by line). A
// History held in memory is a Messages.
//
// # echo
//
// echo needs no model and answers the same way every time, for offline use
// and tests. Its reply is one assistant message whose content is the string
//
//	echo: <N> messages received; you said: <text>
//
// where N is the number of messages in the history and text is the text of
// the last user message (empty when there is none). The text is also
// written to Request.Stream. It calls no model, so it reports no usage and
// its messages hold no call; it ignores the request's model and
// parameters.
//
// # openai
//
// openai POSTs {BaseURL}/chat/completions (BaseURL defaults to
// https://api.openai.com/v1, so any OpenAI-compatible server works: llama.cpp,
// vLLM, Ollama) with {"model": …, "messages": […], "tools": […], …}: the
// model Request.Model names, else Config.Model; the tools (when
// Request.Tools offers any) as function-calling entries; then each
// parameter of Request.Params that is set (tool_choice,
// parallel_tool_calls, temperature, top_p, max_tokens,
// max_completion_tokens, stop, seed, presence_penalty, frequency_penalty,
// response_format, reasoning_effort, user), its value as the caller gave
// it; and the API key, when set, as a bearer token. The reply's Model is
// the response's model field, the model that answered.
//
// Each message carries the fields the chat completions API defines for its
// role and nothing else, whatever the transcript holds besides (an
// importer's keys, "tool_calls": null, call_id and response_item_id inside
// a tool call, a refusal): strict servers (Groq, Cerebras, Mistral) answer
// 400 or 422 to a field they do not know. A transcript is lossless, so the
// cleaning is done on each request, never stored:
//
//   - role; content as stored (a string or a list of parts), null only on
//     an assistant message with tool calls, "" where the transcript has
//     none, since the API requires it;
//   - name, when set (on a tool message, the function's name, as OpenAI's
//     and Groq's tool-use examples send it);
//   - tool_calls on an assistant message that holds at least one call,
//     each as id, type ("function" when missing) and function (name and
//     arguments) only; calls that do not decode as such are left out, as
//     the turn engine does not see them as calls either;
//   - tool_call_id on tool messages;
//   - reasoning_content on assistant messages when it is replayed.
//
// A reply's reasoning_content (a thinking model's chain of thought) is
// stored with its message. Whether requests send it back is
// Config.ReasoningContent (config.yaml reasoning_content): DeepSeek's,
// Moonshot's (Kimi) and Xiaomi's (MiMo) thinking models answer 400 to a
// history whose tool-call messages lack it, while the strict servers above
// answer 400 or 422 to the field itself. ReasoningAuto, the default,
// replays it when the base URL's host is deepseek.com, moonshot.ai,
// moonshot.cn, kimi.com or xiaomimimo.com, or a subdomain of one, and drops
// it otherwise; the host decides, not the model's name, since a host that
// re-serves those models speaks its own dialect. ReasoningReplay sends it
// on every assistant message, "" where none was stored (a transcript
// imported from another model has none, and DeepSeek refuses the message
// without the field), for a proxy or a self-hosted server; ReasoningDrop
// never sends it.
//
// The reply is one assistant message: its content (null when it only calls
// tools) and its tool_calls as the server sent them. With a Request.Stream
// it asks for a stream ("stream": true, usage included), writes content
// deltas to the stream as they arrive, and assembles the message from the
// deltas: content and reasoning_content concatenated; tool calls by index,
// id and type taken whole, function name and arguments concatenated.
//
// Usage: the response's usage (in a stream, the last event's, which
// stream_options.include_usage asks for) is Reply.Usage, passed on as the
// server gave it, and the reply's message holds it as a usage.Call:
// prompt_tokens as input (input_includes_cache, as the API counts),
// completion_tokens as output, prompt_tokens_details.cached_tokens as
// cache_read, completion_tokens_details.reasoning_tokens as reasoning, the
// model the response names, the X-Request-Id header as request_id, and
// the latency of the attempt that answered. A server that reports no
// usage leaves the message without a call.
//
// Connections: the openai and anthropic providers keep idle connections
// to their server for the next call, as many per host as calls run at
// once (Config.MaxIdlePerHost: the gateway's gateway.max_connections,
// default 256), where Go's default client kept 2: with 16 clients of the
// gateway, 0.4 of the turns opened a connection, a TLS handshake each
// against a real provider (TestUpstreamConnectionsKept: at most 0.05).
// The transport is otherwise Go's default: proxies from the environment,
// HTTP/2 where the server offers it over TLS.
//
// Retries: a 429, a 5xx, or a connection error (refused, reset, a stream
// that broke off) is retried up to Config.MaxRetries times (default 3,
// negative for none), waiting 500ms, 1s, 2s, … or, when the response carries
// Retry-After (seconds or an HTTP date), that long; no wait is longer than
// 30s. Any other 4xx is not retried, and neither is a streamed response that
// has already written text to Request.Stream, since the caller has shown it.
// An error status reads "openai: HTTP <status>: <message>", the message
// being the body's error.message or else the body cut to 200 bytes; the
// *Error also holds that message alone (Said) and the body's error.code
// (Code), so that a caller can pass a refusal of the request on as the
// server made it.
//
// # anthropic
//
// anthropic POSTs {BaseURL}/v1/messages (BaseURL defaults to
// https://api.anthropic.com; one that ends in /v1 is not given a second)
// with the key, when set, as x-api-key, or as a bearer token with
// Anthropic.Bearer, and the anthropic-version (Anthropic.Version, default
// 2023-06-01) and anthropic-beta (Anthropic.Beta, comma-separated)
// headers. A model is required.
//
// The transcript is converted on each request, never stored converted:
//
//   - the system messages before the first other one are the system
//     prompt, one text block each; a system message amid the conversation
//     (a hermes note) is a user text block, the API having no place for it;
//   - content: a string is a text block; in a list, a text part is a text
//     block, an image_url part an image block (base64 for a data: URL,
//     else url), a part of another type goes as it is (one a client of the
//     gateway sent in the Messages API's own shape); empty text gives no
//     block, since the API refuses one;
//   - an assistant message is its thinking blocks (Extra
//     "thinking_blocks", as the API gave them), its text, then a tool_use
//     block for each call, whose input is the arguments' JSON object ({}
//     for arguments that are not one); a message left with no block is
//     left out;
//   - a tool message is a tool_result block (its content a string as the
//     string it is, a list as blocks; is_error when its Extra "is_error"
//     is true) when the assistant message just before called it, else a user text block "result of tool call ID: …", since the
//     API refuses a result that answers no call of the message before;
//   - consecutive messages of one role are merged into one, the
//     tool_result blocks of a user message first.
//
// Tools become {name, description, input_schema}. Of the parameters,
// tool_choice (auto, required as any, none, a named function as tool;
// parallel_tool_calls false as disable_parallel_tool_use), temperature,
// top_p and stop (as stop_sequences) are sent; max_tokens or
// max_completion_tokens is max_tokens, which is always sent:
// Anthropic.MaxTokens when the request sets none, else 4096 for a claude-3
// model, 8192 for claude-3-5 and claude-3-7, 32000 for the others. The
// others have no counterpart and are not sent. Anthropic.Thinking is off
// (or empty), a budget ({"type":"enabled","budget_tokens":N}, N at least
// 1024), adaptive ({"type":"adaptive"}) or adaptive:<effort>, which adds
// output_config.effort.
//
// Prompt caching: unless Anthropic.Cache is off, the request has up to
// four cache_control breakpoints (ttl 1h when Cache is 1h, else the
// default 5m): on the last tool, on the last system block, on the last
// block of the message the previous request ended with (the last user
// message before the last assistant one) and on the last block of the
// last message. Every block is written from the stored message the same
// way each time, tools in the order given, so the bytes of the prefix a
// request shares with the previous one are the same and the previous
// request's write is read.
//
// The reply is one assistant message: the text blocks' text as content
// (null when it only calls tools), each tool_use as a tool call (its input
// as the arguments), the thinking and redacted_thinking blocks in Extra
// "thinking_blocks" as they came (a streamed one rebuilt from its deltas,
// the signature included), and, when the stop reason is neither end_turn
// nor tool_use, Extra "stop_reason". Blocks of other types (server tools')
// are left out. Usage: prompt tokens are input, cache write and cache
// read tokens together, as chat completions counts them, and the cache
// counts are given apart (with the 5m and 1h split when the API gives it).
//
// A stream is read event by event: message_start, content_block_start,
// its deltas (text_delta written to Request.Stream as it comes,
// thinking_delta, signature_delta, input_json_delta), content_block_stop,
// message_delta (stop reason, usage), message_stop; ping is ignored. An
// error event fails the call with the API's message; a stream that ends
// before message_stop, with a block open, without a stop reason, or with a
// delta for a block not open, fails it too: nothing half-made is returned.
// CountTokens (TokenCounter) asks {BaseURL}/v1/messages/count_tokens for a
// request's input tokens: the same conversion, without max_tokens, the
// parameters, stream or cache breakpoints, which that endpoint does not
// take.
//
// Retries and error statuses are as openai's (429 and 5xx, 529
// "overloaded" included; an overloaded or api error event before any text
// too); an error status's Code is the body's error.type.
//
// # exec
//
// exec runs Config.ExecCommand with `sh -c` once per call, so any program
// can be the agent. The protocol:
//
//   - stdin: the transcript as JSONL, one message a line as the store keeps
//     it (seq and ts included), then end of file.
//   - environment: hermes's own, plus HERMES_SESSION_ID set to the session,
//     and, when the request offers tools, HERMES_TOOLS: the path of a file
//     holding their function-calling schemas as one JSON array, and, when
//     the request names a model or sets parameters, HERMES_PARAMS: the
//     path of a file holding one JSON object, "model" (when named) and the
//     parameters in the names openai sends them by (see above); both files
//     are removed after the call. The command is its own model: the
//     request's model is for it to read or ignore.
//   - stdout: the reply as JSONL chat messages, one or more, blank lines
//     ignored. Only roles assistant and tool are allowed; seq and ts, if
//     given, are ignored. The text of each assistant message is written to
//     Request.Stream as its line arrives, texts separated by a newline.
//     A program that runs its own tools replies with its assistant and
//     tool messages; one that wants hermes's built-in tools replies with an
//     assistant message whose tool_calls name them, and is run again with
//     the results appended.
//   - usage: an assistant message may hold "usage", the tokens of the
//     model call that produced it, as an object of usage.Call's fields
//     input, output, cache_read, cache_write_5m, cache_write_1h,
//     reasoning (integers, 0 when left out), input_includes_cache (true
//     when input counts the cache reads too), model and request_id
//     (strings); hermes adds the call's id, provider "exec" and the
//     latency until its line arrived. Any other field, a negative count,
//     or a usage on a tool message fails the call. A message without one
//     is not counted.
//   - stderr: passed through to hermes's stderr, for the program's logs.
//   - exit status: 0 for a reply; anything else fails the call with
//     "exec provider: command exited with status N" (or "killed by signal
//     N"), and the output is not used.
//
// The command runs in its own process group; when the call is canceled or
// times out the whole group is killed. Once the command has exited, a child
// it left behind holding stdout delays the call by at most 2 seconds.
package provider
