// Package hooks runs the commands config.yaml's hooks name at the turn
// engine's events, with Claude Code's interface: the same events, the
// same JSON on stdin, the same exit codes and JSON answers, the same
// matchers, so that hook scripts written for Claude Code run unchanged.
//
// # Configuration and trust
//
// hooks: in the profile's config.yaml (profiles.Hooks), by event, each a
// list of {matcher, command, timeout}, or Claude Code's settings.json
// form ({matcher, hooks: [{type: command, command, timeout}]}). The
// gateway's turns run gateway.hooks instead: the operator's, never
// anything a client sends. Hooks come from the profile only: a work
// tree's .hermes/settings or .claude/settings.json is never read, since a
// repository one clones would otherwise run its commands as the user with
// no question asked; the profile's config.yaml, and a command it names by
// a path, are refused when another account can write them
// (profiles.Load), like every command hermes runs.
//
// # Matchers
//
// Empty or * matches everything; a word of letters, digits and _ (or
// several separated by |) matches exactly; anything else is a regular
// expression matched anywhere in the name, as Claude Code's are. Tool
// events match the tool's name, both hermes's (terminal) and Claude
// Code's for its counterpart (Bash; ToolName), so a matcher written for
// either works; an MCP tool's name is mcp__server__tool in both.
// SessionStart matches its source (new, resume, fork, compress; startup
// and compact as Claude Code calls the first and the last), SessionEnd
// its reason, PreCompact and PostCompact their trigger (manual, auto);
// UserPromptSubmit, Stop and SubagentStop run every hook, whatever its
// matcher. A command configured twice for one event runs once.
//
// # Running
//
// Every matching hook of an event runs at once, with sh -c, in the
// session's working directory, with CLAUDE_PROJECT_DIR set to it, the
// Input as JSON on stdin, in a process group of its own that is killed
// whole at its timeout (default 60s, timeout in seconds) or when the turn
// is cancelled. The first MaxOutput (64 KiB) bytes of each of its stdout
// and stderr are kept, the rest read and dropped; a stdout cut short is
// not read as JSON. An event with no hooks costs a map lookup.
//
// # Answers
//
// Exit 0 goes on; its stdout, if it is a JSON object, is read as Claude
// Code reads it (continue, stopReason, systemMessage, decision, reason,
// hookSpecificOutput.permissionDecision, permissionDecisionReason,
// updatedInput, additionalContext); otherwise, at UserPromptSubmit and
// SessionStart, it is context for the model. Exit 2 blocks, its stderr
// the reason. Any other code, a timeout or a command that would not start
// is told to the user (Outcome.Notices) and the turn goes on as if the
// hook were not there. Combined (Outcome): a block wins over ask, ask over
// allow; the first updatedInput is used.
//
// What a block does depends on the event, as in Claude Code: PreToolUse
// answers the call "blocked by hook: <reason>" and does not run it;
// PostToolUse and PostToolUseFailure add the reason to the result the
// model reads; UserPromptSubmit refuses the prompt, storing nothing; Stop
// and SubagentStop keep the turn going with the reason as a note for the
// model; the other events cannot block: their exit 2 is told to the
// user as any other failure is, and a "decision" of theirs is not read.
//
// # On record
//
// An outcome that changed the turn (Outcome.Changed) is stored with the
// message it changed, in its "hooks" field (RecordKey: a list of Record,
// naming the event, the commands, the decision and reason, the updated
// input, the context), so that a resumed session, sessions show and an
// export say what happened.
package hooks
