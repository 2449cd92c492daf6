// Package mcpserve offers a profile's sessions and kanban board to other
// agents as an MCP server (hermes mcp serve): session_search,
// session_list, session_show, kanban_list, kanban_show, kanban_create
// and kanban_comment; inside a kanban worker also kanban_complete and
// kanban_block, which act on the worker's own task under its run and
// claim, as hermes kanban complete and block do there. The profile's
// memory and skills are offered to read (memory.go): memory_view (while
// memory.enabled is not false), skills_list and skill_view; nothing
// changes them over MCP.
//
// Every call goes through the stores, with their rules: the same locks
// and the same bounded waits (--lock-timeout), the same checks of ids
// and titles. A failure is a tool result with isError set, whose text
// is what the command line would say after "hermes: ", prefixed by its
// kind where the command line has an exit code for it: "invalid: …"
// (exit 2), "not found: …" (3), "refused: …" (4), "lock timeout: …" (5),
// "error: …" (1).
//
// Results are text: the records as --json prints them (one JSON object,
// or a listing one object a line). Each result is bounded by
// Options.MaxBytes: a listing stops at the record that would pass it,
// with a last line saying so, and session_show stops at the message that
// would, giving next_offset; a message alone past the bound is given as
// its seq, role and size, for hermes sessions show --json to read.
//
// A session being written is read as its readers always read it: what
// the writer has completed, after at most a second's wait. A write to the
// board (create, comment, complete, block) waits for a held lock at most
// --lock-timeout, then fails with "lock timeout: …".
//
// Over stdio (Stdio) the end of the input ends the server only once every
// request read has its reply written on stdout: a client that writes its
// calls and closes its end at once (a script) gets an answer to each, and
// no call runs unanswered. The SDK's own stdio transport cancelled the
// calls in flight and dropped those not begun.
//
// Over streamable HTTP (Handler) a session that gets no request for its
// idle timeout (mcp serve --idle-timeout, DefaultIdleTimeout) is closed
// and forgotten: a client that leaves without ending its session would
// otherwise hold the server's memory for good. A client that comes back
// after it is answered 404, and starts a new session as MCP says it must.
package mcpserve
