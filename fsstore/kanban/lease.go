package kanban

import (
	"fmt"
	"time"
)

// A claim lasts its TTL (claim_ttl_ms) without a heartbeat. Its expiry,
// claim_expires, is stamped by the clock of the host that claimed or
// heartbeated, which another host's clock may not agree with: it is shown
// to people, and compared with no clock. A host judges a claim by what it
// has watched (Board.Seen): the claim (its run, lock and expiry) seen
// unchanged for a whole TTL by this host's own monotonic clock has
// expired. The claimer and the heartbeat record their sighting as they
// write, so that on their host the TTL runs from the write; another host
// starts its watch when it first reads the claim, and a heartbeat, which
// changes the expiry, starts it again.

// claimKey and claimBeat name task t's claim in Seen: a new run, lock or
// heartbeat changes the beat.
func claimKey(id string) string { return "kanban " + id }

func claimBeat(t Task) string {
	return t.CurrentRunID + " " + t.ClaimLock + " " + string(t.ClaimExpires)
}

// sawClaim records, after a claim or a heartbeat that stored t, that this
// host saw its claim now. A sighting that cannot be recorded is reported:
// the claim's watch here starts at the next look, later, which delays its
// expiry and never brings it forward.
func (b *Board) sawClaim(t Task) {
	if _, err := b.Seen.Watch(claimKey(t.ID), claimBeat(t), t.ClaimTTL()); err != nil {
		b.Warn(fmt.Sprintf("kanban task %s: %v", t.ID, err))
	}
}

// ClaimWatched returns how long this host has watched running task t's
// claim unchanged, by its own monotonic clock, recording what it sees
// unless dryRun (which reads only). A claim has expired once this is more
// than t.ClaimTTL(). A watch that cannot be recorded is reported, and
// counts as just begun.
func (b *Board) ClaimWatched(t Task, dryRun bool) time.Duration {
	if dryRun {
		return b.Seen.Peek(claimKey(t.ID), claimBeat(t))
	}
	watched, err := b.Seen.Watch(claimKey(t.ID), claimBeat(t), t.ClaimTTL())
	if err != nil {
		b.Warn(fmt.Sprintf("kanban task %s: its claim is taken for held: %v", t.ID, err))
	}
	return watched
}
