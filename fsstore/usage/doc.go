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
//     summary, stored on the summary message that starts the new session.
//
// Zero counts and empty strings are left out but for input and output.
package usage
