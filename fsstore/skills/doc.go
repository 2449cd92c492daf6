// Package skills keeps a profile's skills: directories holding a SKILL.md
// (YAML frontmatter with name, description and optional allowed-tools,
// which is read and shown but restricts nothing, then the instructions; the Agent Skills format that Claude Code and the
// Python hermes use) and any files beside it, which the agent loads when a
// task calls for them, and which it may write itself.
//
// Layout, under <profile>/skills/:
//
//	<name>/SKILL.md      a skill; its frontmatter's name is its directory's
//	<name>/...           the files beside it (examples, scripts)
//	<name>/.hermes-skill.json   in a skill the agent made: created_by,
//	                     session_id, and the SHA-256 of the SKILL.md hermes
//	                     last wrote
//	.log.jsonl           every change (Change), append-only
//	.lock                the lock every change holds
//	.removed/<name>.<unix>/   a skill deleted or removed, whole
//	.tmp-<name>-*/       a skill being made (renamed into place)
//	.index.cache         the frontmatter of each SKILL.md by its stamp (Index)
//
// Names are checked before they touch a path (CheckName: fsstore.CheckID's
// rules, at most 64 bytes): no path separator, no "..", no leading dot.
// Entries starting with a dot are never skills.
//
// Who owns a skill. A skill is the agent's while its marker says the
// agent made it and its SKILL.md has the digest the marker holds; any
// other skill, one the user added or imported, or one of the agent's that
// someone edited by hand, is the user's. The store changes either (the
// caller decides: the skill_manage tool asks the user's approval before it
// changes a user's skill); a change of an agent's skill keeps the marker
// in step, a change of the user's leaves it the user's.
//
// Changes. Each change takes the lock, reads the log, appends its line
// (synced), then makes the change visible (its commit: a rename, or an
// atomic write); a commit that fails cuts the line back off. A new skill
// is written whole into .tmp-<name>-*, synced, and renamed into place, so
// a reader sees all of it or none; a crash leaves the temp directory,
// which fsck reports and --repair moves to lost+found. Nothing is deleted:
// a delete (the agent's, or `skills remove`) renames the directory into
// .removed/, and the log line names the copy. Every change can be
// reverted by a new change: a create or an add is deleted, a delete
// restored (while the name is free), a patch taken back (while the file
// still holds what the patch wrote).
//
// What a session sees. Each session's list of skills is made at its
// start from the SKILL.md files as they are then: every SKILL.md is
// stat'ed (relative to its skills directory, a few goroutines at once),
// and one whose size, modification time and inode are those the index
// holds is not read again. A directory's modification time would say only
// that a skill was added or removed, not that a SKILL.md was edited in
// place, and an edited description must be in the next session's list:
// so the stats, not the directory's time. A file younger than RacyWindow
// is not indexed (a coarse file clock can give two writes of one size the
// same time), and is read at each start until it is older.
//
// Adding and importing. Add copies a directory (regular files and
// directories; a symbolic link, a device, a .git directory and a marker
// are not copied, and are said) or a SKILL.md alone; a name the profile
// has already is refused, so an add or an import never replaces a skill.
// Import adds every skill it finds in a directory, at depth one (Claude
// Code's ~/.claude/skills) or two (the Python hermes's skills/<category>/
// <name>), skipping, and saying, those whose name is taken and those that
// do not parse. A SKILL.md that does not parse is refused naming its line
// and the reason.
package skills
