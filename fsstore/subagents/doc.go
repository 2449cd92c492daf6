// Package subagents keeps the claim of each sub-agent: a child session
// that a delegate call runs (cmd/agent/delegate.go), so that a child
// never runs twice at once and a resumed call knows which of its children
// ran before.
//
// A claim is two files in <profile>/subagents/, named after the child's
// session id:
//
//	<id>.lock   flocked by the process that runs the child, for as long
//	            as it runs it; the kernel lets it go when that process
//	            dies, so a claim held is a child running now
//	<id>.json   the claim's record: the child, its parent, the call and
//	            the task, its state (running, done), how many times it
//	            was claimed (runs), and the host, pid and time of the
//	            last claim; rewritten atomically under the lock
//
// Claim waits for a lock another holds up to the lock timeout
// (--lock-timeout), since a killed process's lock can outlive it for a
// moment (a child it was starting holds the descriptor until its exec);
// a lock still held then is refused (fsstore.ErrRefused) naming the
// process the record names, and the child is left to it. A record that says running while its lock is free is a child
// whose process died: the next claim takes it over (runs goes up by one)
// and the child's session is carried on, not started again. The child's
// transcript is the truth about what it did (its answer included); the
// record says who ran it and that it finished.
//
// fsck checks the records (Check): one that does not parse is moved aside
// with --repair, never replaced by an empty claim; a later claim of that
// child writes a new record.
package subagents
