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
//
// A scheduled time (a cron occurrence) is a wall-clock time, which no
// watch can judge: it needs a clock the hosts share. Clock measures this
// host's against the shared filesystem's: it creates a probe file in
// hosts/, reads the time the filesystem stamped on it (on NFS and most
// network filesystems the server's clock; on a local disk, this host's
// own, so the skew is 0), removes it, and keeps the skew (this host's
// clock halfway through the create, less that stamp) in hosts/<key>.json,
// one document per host, measured again once a minute of its monotonic
// clock has passed. Within Tolerance (2 s: a filesystem may keep whole
// seconds) the clocks agree. Past it the host warns, once per process,
// and judges scheduled times by its clock less its skew when it is ahead
// (Offset), so that no occurrence runs early and a catch-up-all job runs
// no burst of occurrences only its clock finds due; one behind runs them
// late by its skew. Past MaxSkew (15 s, a quarter of a background task's
// lease) either way it claims nothing, neither board tasks nor cron
// occurrences, and says why (ErrRefused, exit 4). A filesystem that
// stamps files with the client's clock (GlusterFS's features.ctime keeps
// the client's times) measures every host in step: there the hosts
// need NTP, as before, for cron; leases, claims and backoffs are watched
// and need no shared clock. fsck reports the hosts past Tolerance (a
// problem past MaxSkew) and moves a probe a crashed measure left to
// lost+found; profile show lists every host's last skew.
//
// The documents in hosts/ are what a host observed, not records: a
// command records what it saw (a watch begun, a skew measured) before it
// decides, and keeps it even when what it then does fails, so that a
// failed command may leave them changed (invariant 13 is about records).
// Losing them costs only a later verdict: a watch starts again, a skew is
// measured again. They are written atomically and not synced.
package hosts
