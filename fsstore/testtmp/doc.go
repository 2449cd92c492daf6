// Package testtmp puts the temporary files of hermes's tests in memory.
//
// hermes syncs every change it makes, and its tests make thousands: on a
// virtual disk the syncs were nearly half of go test ./...'s wall time on
// two cores (96 s, against 54 s for the same tests with TMPDIR on a
// tmpfs). What the tests prove does not depend on a sync reaching a disk:
// a process killed with kill -9 leaves its writes in the page cache, the
// fault tests fail the sync calls themselves through the stores' seams,
// and a power cut is not something go test can make. So a package's
// TestMain calls Main, which sets TMPDIR, for the test binary and every
// process it starts, to a directory of its own on /dev/shm, when:
//
//   - TMPDIR is not set: a TMPDIR the user set is theirs;
//   - HERMES_TEST_DISK is not 1: CI's main run sets it, so that every test
//     also runs on a real disk;
//   - no benchmark was asked for (-bench): benchmarks measure what a change
//     costs on the disk a user has, its syncs included;
//   - /dev/shm is a tmpfs with at least 2 GiB free (a container's 64 MB
//     /dev/shm is not), and hermes-test-UID under it is this user's own
//     directory, not a link.
//
// Otherwise the tests use the system's temporary directory as before.
// Each binary's directory holds a lock while it runs, and is removed when
// it ends; a directory left by a binary that was killed (a test timeout)
// is removed by the next binary that finds its lock free, so that memory
// is not kept by files nothing will read.
package testtmp
