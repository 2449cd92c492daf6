// Package mcp is hermes's MCP client: the tools of the MCP servers a
// profile's config.yaml names (mcp_servers) offered to the turn engine as
// agent.Tools, through the official Go SDK.
//
// A server's command runs as exec.Command runs it: a bare name is looked
// up in $PATH; a path with a '/' is taken from the server's cwd, itself
// taken from hermes's working directory when relative or unset. No
// server starts from a profile whose config.yaml names a command by a
// path that another account could write: profiles.Load, which every
// reading of config.yaml goes through, refuses the profile first (see
// "Permissions" there).
//
// # Names
//
// A server's tool is offered as mcp__<server>__<tool>, each character
// outside [A-Za-z0-9_-] made '_'; a name past the chat APIs' 64
// characters is cut and ends with a hash of the server's and the tool's
// own names (ToolName). The tool keeps the server's own name for its
// calls. A server's name is letters, digits, '_', '-' and '.'; two
// servers whose names would give their tools the same prefix are refused.
//
// # Laziness and the cache
//
// A server starts only when something needs it: a call to one of its
// tools, or an offer of its tools when no list of them is cached for its
// present configuration. Its tool list is kept in <profile>/mcp/<server>.json
// (a cache: rewritten whole, atomically, without a sync; lost or damaged,
// it is made again by listing the server), keyed by a hash of the
// settings a list depends on (command, args, env, cwd, url, headers,
// bearer_token_env): a changed entry is listed again. hermes mcp refresh,
// a tools/list_changed notification from a running server, and a call to
// a tool its server no longer has renew it; a process offers the list it
// read when it started.
//
// A Pool holds the servers one process started until Close: the gateway
// and line mode keep theirs for the life of the process, a one-shot chat
// (and a kanban worker, which is one) closes them as it exits.
//
// # Calls
//
// A call is a tool call like any other (stored and synced before it
// runs; one a crash interrupts is answered interrupted, never re-run). Its
// result is the text content joined by newlines; structured content as
// JSON when there is no text; an image, audio or resource as one line
// naming its type and size; an isError result is answered "error: …".
// A call past the server's tool_timeout is cancelled (the SDK tells the
// server) and answered "timed out after …"; the server stays in use.
//
// # Failure
//
// A server that fails to start, does not answer within startup_timeout,
// exits, or answers garbage is Unavailable: its calls are answered
// "error: MCP server NAME unavailable: REASON" with the last lines of its
// stderr, and the reason is recorded as the server's last_error (hermes
// mcp list). A server that cannot be listed offers no tools; a warning
// says so and the turn goes on. A failed start is not tried again for a
// minute: in the process that saw it, and, for a server with no cached
// list, by the offers of other processes (the failure is recorded under
// the configuration's key), so that a server that hangs at start-up does
// not cost every one-shot chat its startup_timeout; hermes mcp test and
// refresh try at once. A server that exited is started again by the next
// call (one that exits under a call is that call's failure).
//
// A stdio server's stderr is appended to <profile>/mcp/<server>.stderr.log,
// which is moved to .stderr.log.1 when it would pass 256 KiB.
//
// # Processes
//
// A stdio server runs in its own process group with the variables its env
// lists (${VAR} expanded from hermes's environment; an unset one is a
// failure naming it) and a small base: PATH, HOME, USER, LANG, TMPDIR,
// TERM. Close closes its input, waits a second, and kills its process
// group, so nothing it started is left. A kill -9 of hermes runs no Close:
// the guard (guard.go), an sh started with the process's first stdio
// server and told of each server's group, kills the groups left when its
// input from hermes ends, what the servers started included (npx runs sh,
// which runs node); on Linux the server itself also gets a parent-death
// signal. A guard that cannot start leaves a server's children to the end
// of their input, on which the MCP stdio transport asks a server to exit.
package mcp
