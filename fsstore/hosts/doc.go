// Package hosts keeps what each host that shares a profile knows of time,
// so that no decision depends on the hosts' clocks agreeing.
//
// A host never compares its wall clock with a time another host wrote (a
// file's mtime, a record's expiry) to decide that a lease, a claim, a
// back-off or a scheduled time has passed: one host's clock 5 minutes
// ahead would take every other host's worker for lost, reclaim its claims
// and run its jobs early. A lease is judged instead by what the observer
// has watched: the heartbeat (any value that changes at each beat: a
// marker's mtime, a claim's expiry) seen unchanged for the lease's length,
// measured by the observer's own monotonic clock (fsstore.Uptime), which
// no step of the wall clock moves.
//
// Seen holds those sightings, one document per host
// (hosts/<key>.seen.json, Key hashing the host's id), rewritten under its
// sidecar lock: for each lease its last beat, and the monotonic reading
// when this host first saw it. The monotonic clock is the same in every
// process of one boot, so a command that runs once (a dispatch tick,
// `tasks list`) records what it saw and a later one judges from there; the
// first to see a heartbeat never finds it expired, and a lease ends only
// after a host has watched it, never sooner than its length after the
// holder's last beat. The document names its boot (fsstore.BootID): after
// a reboot the sightings start again. A sighting long past its lease
// (forgetAfter) is dropped at the next write. A sighting that cannot be
// read or written is reported and counts as a fresh one: the lease is
// held longer, never ended early. A document that does not parse is
// quarantined and reported, and the sightings start again.
package hosts
