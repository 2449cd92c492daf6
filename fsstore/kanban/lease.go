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

// A retry's backoff (retry.go) is judged the same way: not_before is
// stamped by the clock of the host that failed the run, and a host whose
// clock is ahead would find it passed early. A task that waits for a
// retry (retry_backoff_ms) may be claimed once this host has watched the
// retry for the backoff; the host that failed the run records its
// sighting as it writes, so there the backoff runs from the failure. A
// not_before without a backoff is a time a person gave (--at), read by
// this host's clock.

func retryKey(id string) string { return "kanban retry " + id }

func retryBeat(t Task) string { return t.CurrentRunID + " " + string(t.NotBefore) }

// sawRetry records, after a failure that stored t, that this host saw its
// retry now, if it waits for one.
func (b *Board) sawRetry(t Task) {
	if t.Status != Ready || t.RetryBackoffMS <= 0 {
		return
	}
	backoff := time.Duration(t.RetryBackoffMS) * time.Millisecond
	if _, err := b.Seen.Watch(retryKey(t.ID), retryBeat(t), backoff); err != nil {
		b.Warn(fmt.Sprintf("kanban task %s: %v", t.ID, err))
	}
}

// Due reports whether task t may be claimed now as far as its not_before
// goes: a retry once this host has watched it for its backoff (recording
// what it sees unless dryRun), another not_before once this host's clock,
// now, has reached it. why says what it waits for.
func (b *Board) Due(t Task, now time.Time, dryRun bool) (ok bool, why string) {
	if t.RetryBackoffMS > 0 {
		backoff := time.Duration(t.RetryBackoffMS) * time.Millisecond
		var watched time.Duration
		if dryRun {
			watched = b.Seen.Peek(retryKey(t.ID), retryBeat(t))
		} else {
			var err error
			if watched, err = b.Seen.Watch(retryKey(t.ID), retryBeat(t), backoff); err != nil {
				b.Warn(fmt.Sprintf("kanban task %s: its retry waits: %v", t.ID, err))
			}
		}
		if watched < backoff {
			return false, fmt.Sprintf("its retry waits %s from when this host saw it (%s left)", backoff, (backoff - watched).Round(time.Second))
		}
		return true, ""
	}
	if at, err := t.NotBefore.Instant(); err == nil && now.Before(at) {
		return false, "not before " + string(t.NotBefore)
	}
	return true, ""
}

// CheckClock refuses (ErrRefused) to claim on a host whose clock is
// further from the shared filesystem's than hosts.MaxSkew, saying why,
// and warns of one past hosts.Tolerance (Skew). A claim is judged by
// watches, not by this clock, but a host that far off is misconfigured,
// and its stamps mislead the people who read them.
func (b *Board) CheckClock() error {
	if b.Skew == nil {
		return nil
	}
	_, err := b.Skew()
	return err
}
