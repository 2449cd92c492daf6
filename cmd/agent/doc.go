// Package agent is hermes's one turn engine: `hermes chat` (one-shot and
// line mode), the gateway and kanban workers all run their turns through
// Engine.Run, and differ only in what they pass it (the input, the tools,
// who approves, where the text streams).
//
// # The loop
//
// A turn on an existing session:
//
//  1. An ended session is reopened.
//  2. Prelude: if the transcript ends with an assistant message whose tool
//     calls have no result (the process running them died: kill -9, a
//     power cut), each such call gets a tool result saying it was
//     interrupted and not run again; calls the input itself answers first
//     (a gateway client's results) are left to it, and a Resumer's call
//     (delegate) is run again, its result stored first (see Delegation). A session a restart
//     interrupted (resume_pending, suspended) gets a system note naming the
//     reason and the interrupted calls, unless a failed attempt already
//     stored one. Then the input (the user message). At a session's first
//     turn (an empty transcript), Engine.Instructions' note comes first.
//     All of it is one append, synced.
//  3. The provider is called with the stored history, streamed from the
//     transcript in one pass, and the tools' schemas.
//  4. The reply is appended, synced, before any call in it runs.
//  5. If the reply has calls that it does not answer itself (an exec agent
//     may return its own tool messages), they run one after the other, and
//     each result is appended, synced, as its call ends. Then back to 3.
//  6. The turn ends with a reply without calls, or at MaxSteps provider
//     calls (config.yaml agent.max_steps, default 30): the calls of the
//     last reply are then answered "not run" and a note says the turn
//     stopped; the turn still succeeds and the session is consistent.
//  7. A session that was resume_pending or suspended becomes active.
//
// # Durability
//
// Every message is stored before what depends on it: the user's before
// the model is called, a call before it runs, a result before the next
// model call. A crash loses at most the reply in flight or the result of
// the call in flight; the call itself stays, and the next turn answers it
// as interrupted (step 2), so every call is answered exactly once and
// nothing is re-run by itself. The provider never receives a history the
// API would refuse: on top of step 2, the history it reads answers any
// call still unanswered before the next message (and leaves out a tool
// message that answers no call), for transcripts that another writer or an
// import left that way; that repair is the provider's view only, never
// stored.
//
// A step re-reads the transcript once, to stream it to the provider; the
// prelude reads only the transcript's tail (sessions.Store.Tail),
// so a tool step costs the same at 100,000 messages as at 10. A caller
// that has just read the transcript whole (the gateway, to match a
// client's history) gives it to the turn (Turn.Stored, with where its read
// ended, sessions.Point), and a session's first turn starts from an empty
// one: the provider is then sent that and the turn's own appends, each
// checked to begin where the last ended (sessions.Store.AppendAt), and
// reads the file from the first append that finds another writer came
// between (another process, a forced rewrite). A provider call is sent
// what the turn's last append left, not what another writer adds after
// it: that is read at the turn's next append. The prelude's tail, and the
// one a caller's Started is given (the gateway indexes a conversation's
// opening by it), are taken from that transcript while a stat says the
// file still ends where it does (sessions.Store.IsAt), and read from the
// file otherwise: a later gateway turn reads its transcript once, a
// conversation's first turn not at all.
//
// # Calls that do not run
//
// Each is answered to the model, and the turn goes on: an unknown tool
// ("error: unknown tool …", or, with ClientTools, the turn ends and the
// calls go back to the gateway's client), arguments that are not JSON, a
// tool's error ("error: …"), a call refused by the Approver ("not
// approved: …"). A cancelled context (Ctrl-C) stops the call in flight
// (its tool kills what it started), answers it "cancelled by the user" and
// the calls after it "not run", and ends the turn with the context's
// error; the session stays resumable. A call runs in a goroutine of its
// own, and one that has not ended CancelGrace (2s) after its cancellation
// (a tool that ignores its context: a read of a file that never answers)
// is abandoned: answered once, as still running when hermes stopped
// waiting, and the turn ends (or, for ToolTimeout, goes on) without it.
// What it returns later is told to Late (a chat prints it, the gateway
// logs it) and never stored: a call has one result, ever. The files it
// changed meanwhile are recorded when it ends, in a note of the session
// (checkpoints.Late), and a note stored amid another turn's calls reaches
// the provider after their results (history). ToolTimeout
// (the gateway's gateway.tool_timeout) bounds each call: past it the call
// is cancelled and answered "timed out", and the model reads that.
// "interrupted: … did not run it again" is written only where it is true:
// for a call a dead process left without a result (prelude), never for
// one that a live turn still runs, since turns on one session never
// overlap. A call waiting for a lock that another
// process holds (a session's, a task's, the board's) stops waiting then
// too: each call works on copies of the Env's stores whose Cancel is its
// context's Done, and the kanban tools pass their context on.
//
// # Approval
//
// Tools that change things (terminal, write_file, edit_file, process kill) need
// approval; the others never do. tools.approval in config.yaml: ask (the
// default: a Prompter on a terminal, yes / no / always for this session;
// with no terminal ask acts as deny), auto (Fixed(true); chat --yes) or
// deny. The gateway never prompts.
//
// # Files and project instructions
//
// read_file, write_file and edit_file work on one file, relative paths
// from the session's working directory; edit_file replaces an exact
// string, refusing one missing or found more than once (without
// replace_all; occurrences counted at every offset, and overlapping ones
// refused with it), and writes as write_file does, keeping, in a CRLF
// file, its line ends. A write (write.go) keeps an existing file's mode
// exactly, setuid, setgid and sticky bits included, set on the temp file
// before the rename and checked, or refuses; keeps its owner and group
// where it can (as root), and refuses a setuid or setgid file where it
// cannot; refuses a file without its owner's write bit as read-only, and
// arguments with a lone surrogate escape. Its temp file,
// .hermes-tmp-<pid>-<random>-<name>, when a kill -9 leaves it, is removed
// by the next write in that directory once that pid runs no more. search_files and find_files walk a
// tree (tree.go) that skips .git and what .gitignore files ignore
// (gitignore.go lists the rules read and those not); search_files reads
// each file a chunk at a time on one worker per processor and returns the
// lines in the walk's order.
//
// With Env.Root set (the gateway's gateway.cwd; a chat's working
// directory with agent.confine), every path the file tools use is opened,
// created, renamed, removed and listed through one os.Root there
// (confine.go), which resolves each name beneath the root in the system
// call that uses it: there is no window between a check and a use in
// which a directory swapped for a symbolic link could lead out. The
// walk of search_files and find_files then reads no .gitignore above the
// root. Without Env.Root the tools work on the whole file system.
//
// Instructions are the AGENTS.md files of the profile and of the
// repository from its root down to the working directory, stored once, as
// the first message of a session (a note, so the gateway skips it when it
// compares a client's history), cut to MaxInstructions.
//
// # Memory
//
// Engine.Memory, when set, is read at a session's first turn too: its
// snapshot (MemoryNote: MEMORY.md and USER.md as the log makes them then)
// is stored after the instructions, as a note, so that a resumed session
// reads the copy it started with and its history stays byte-stable. An
// empty memory stores nothing. The memory tool (memory_tool.go) views and
// changes the memory through Env.Memory (package memory: each change one
// line of its log, under its lock, bounded); its answer says when a file
// is nearly full, and MemoryAlert picks that, or a refusal at the bound,
// out of a result for a front end to show the user. A front end offers it
// beside the general tools while memory.enabled is not false.
//
// # Skills
//
// Engine.Skills, when set, lists the skills at a session's first turn, as
// a third note after the memory: each skill's name and description (cut
// to 300 characters), the whole cut to MaxSkillsNote (8 KiB) with a line
// saying how many were left out; never a body (progressive disclosure).
// The skills are the profile's (package skills), then the project's,
// read-only: .hermes/skills and .claude/skills at the root of the
// repository holding the working directory; a name found twice is the
// first one's. skill_view loads a skill's SKILL.md and lists the files
// beside it, or loads one of them, through the one reader and an os.Root
// at the skill's directory (a name or a symbolic link out of it is
// refused); with no name it lists every skill. skill_manage creates,
// patches, writes a file of, or deletes a profile skill; a change of a
// skill the user wrote or installed (skills.Store.Origin) needs approval,
// as the terminal does: the engine asks a tool that implements
// NeedsApprovalIn with the call's Env, where NeedsApproval sees only the
// arguments.
// # Checkpoints
//
// With Env.Checkpoints set (every front end sets it), write_file and
// edit_file store the file's prior bytes in the checkpoint store before
// they replace it (checkpoint.go): the object (begun by edit_file as soon
// as it has read the file, beside its search and replace), then the
// call's pending record (a line of the session's pending log), both
// synced, then the write. The engine runs each call with
// its own gatherer (Env.withCall) and stores the call's changes in its
// tool message's "checkpoint" field, then removes the pending record. A
// call that crashed between the two is answered as interrupted at the
// next turn (step 2), and that answer records the changes the pending
// record names that the files show happened (settlePending). A file over
// checkpoints.max_file, or unreadable, is changed without a before-image
// and the result says so; a store that cannot be written refuses the
// change. Restore (restore.go) puts files back from a plan
// (checkpoints.Plan), only where each still holds what the last change
// left, storing their present bytes first and recording itself with a
// note; a symbolic link or a non-regular file in a file's place is
// always left. It reads and writes a file beneath the session's
// directory through an os.Root of that directory, and a file elsewhere
// (tools not confined) through an os.Root of the file's own directory,
// checked not to be a symbolic link: a directory swapped for one since
// the agent's write is a conflict, never followed. The terminal tool's writes are not seen, unless
// Env.ShellGit (checkpoints.shell: git): then a command run in a git work
// tree is preceded by a snapshot of the files git tracks or would add
// (stored, and written as the call's pending record), and followed by a
// comparison that records each file it changed, created or removed
// (shell_checkpoint.go); a background command is not covered.
//
// # Hooks
//
// With Engine.Hooks set (package hooks: config.yaml's hooks, the
// gateway's gateway.hooks), a call's PreToolUse hooks run after it is
// stored and before its approval (hooks.go). A block answers the call
// "blocked by hook: <reason>" and it never runs; updatedInput replaces
// its arguments (and approval is judged on them); permissionDecision
// allow skips the approval unless the Approver refuses the call by policy
// (a Refuser: tools.approval: deny), ask asks for one the tool would not
// need.
// A call that ran then meets its PostToolUse hooks (PostToolUseFailure
// when it failed: an error, a timeout), whose block reason and context
// are added to the result the model reads. "continue": false ends the
// turn: the call (at PreToolUse) and those after it are answered "not
// run: a hook stopped the turn", and a note ends the turn as the step
// limit's does. Each outcome that changed the call is stored with its
// tool message, in its "hooks" field (hooks.Record: the event, the
// commands, the decision, the updated input, the context). The call is
// stored before its hooks run, so a crash while one runs leaves a call
// without a result, which the next turn answers as interrupted (step 2):
// it never runs without its hooks' answer.
//
// A reply that calls no tool meets the Stop hooks (stop_hook_active
// false): a block stores its reason as a note and calls the provider
// again, within MaxSteps; the next Stop says stop_hook_active true. The
// other events are the front ends' to fire, through the engine, so that
// each fires where a front end meets it: SessionStart (a note holding
// the context its hooks add, to store before the session's next input),
// SubmitPrompt (UserPromptSubmit: a *PromptRefusedError, exit 4, before
// anything is stored; or the input with a context note before the
// prompt), SessionEnd, SubagentStop (for the delegate tool: the child's
// outcome, for the caller to act on). CompressBy runs PreCompact before
// the summary is asked for, and once the child is stored PostCompact,
// the parent's SessionEnd (reason compression) and the child's
// SessionStart (source compress). hookBase is the input every hook of a
// session shares: its id, its transcript, its working directory, the
// approval in force as Claude Code's permission_mode.
//
// # Compression
//
// Engine.Compress continues a session in a new one that starts with a
// summary: the provider is asked, with no tools, for a summary of the
// history but for its last turns (at least keep messages, the cut where a
// turn starts, so a call keeps its result); the request is
// SummaryInstruction as a system message, the messages to summarise as
// the provider reads any history, and a closing user message asking for
// the summary. The child holds the summary as a system message, then the
// kept messages, after the parent's project instructions, memory
// snapshot and skills list when it starts with them; the parent ends with reason compression
// (sessions.Store.Compress). A history with nothing before its kept turns
// is not compressed.
//
// # Delegation
//
// The delegate tool (delegate.go) runs each task of its call as a child
// session: created with its opening (as any session's first turn) and the
// task's prompt in one write, so that it exists whole or not at all, then
// run to its final answer by a copy of the engine whose tools are the
// task's among the parent's (all of them by default; delegate only while
// the child's depth is below SubagentDepth), with the parent's provider and
// Approver, so that a child runs nothing the parent could not; on the
// turn's model and provider (Turn.Model, Turn.Provider: the gateway's
// routing) unless the task names a model. A child's id is derived from its
// parent's, the call's id and the task's index (childID), and its document
// records the three (sessions.Delegation). At most MaxSubagents children
// run at once. The result is each child's answer (Result.Text) in the order
// of the tasks, each cut to an equal share of Env.MaxOutput; a child whose
// turn fails is reported in its place. The engine gives the tool the call's
// id and itself through the Env (withCall, Run).
//
// A child is claimed before it runs (Env.Subagents, package subagents: a
// lock held while it runs, and a record), so that two processes never
// run it; a child another process holds is waited for up to the lock
// timeout, then reported in its place. The
// delegate tool is a Resumer: a delegate call that a dead process left
// without a result is run again by the next turn (step 2 returns it
// instead of answering it), before the turn's input. Run again, it
// finds each child's session: one whose transcript ends its turn is read,
// not run; one cut short is carried on by a turn with no input (its own
// step 2); one whose create was cut short before its document gets its
// document, and its prompt is not stored twice. A child that has
// answered is ended (EndSubagentDone).
//
// The children run under the call's context: a cancelled turn stops them
// with it, and the call is answered as cancelled. A child's engine marks
// the usage of each call it stores with purpose delegate
// (usage.PurposeDelegate), and the turn's Result.Subagents sums its
// children's usage (and theirs), apart from Result.Usage, the turn's own.
//
// # Limits
//
// Turns on one session are not serialized by the engine: a chat resumed in
// two terminals at once interleaves its messages (each append is whole).
// The gateway serializes its own turns per session. A tool's output is cut
// to agent.max_tool_output bytes (default 16 KiB), keeping head and tail;
// the terminal tool's commands time out after agent.terminal_timeout
// (default 2m), killing their process group.
//
// Every file read for a tool (read_file, search_files, edit_file) or for
// instructions (AGENTS.md, .gitignore) goes through one reader (reader.go):
// regular files only, opened without blocking (a FIFO's open would wait
// for a writer) and checked by fstat, so a file swapped for one between
// a check and the open is refused too; bounded in bytes by each caller;
// and each open and read is given up on when the call's context ends or
// after 5s without an answer (a "regular" file such as /proc/kmsg, a hung
// mount), the call failing with a message saying so, the goroutine left
// to end with its system call. A .gitignore or AGENTS.md that cannot be
// read is reported where other skips are: the walk's count of what it
// could not read, the instructions' warning.
// write_file refuses the same (it never opens the target: it renames a
// new file over it). read_file reads 64 KiB at a time, whatever the
// length of the file's lines, keeping only the result's head and tail:
// its memory is at most 2x agent.max_tool_output beyond that buffer, and
// a cancelled turn stops it between two reads. A NUL byte anywhere in
// what it reads makes the file binary: the call is refused, naming the
// byte's offset, rather than sending the model a run of zeros.
package agent
