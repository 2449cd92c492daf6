//go:build freebsd && (amd64 || arm64)

package supervisor

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// The struct kinfo_proc of 64-bit FreeBSD (sys/user.h), which x/sys does
// not declare there: its size, which the kernel writes in its first field,
// and the offsets of the fields read here.
const (
	kinfoProcSize   = 0x440
	kinfoPIDOff     = 72  // ki_pid
	kinfoStartOff   = 336 // ki_start, a struct timeval
	kinfoStatOff    = 388 // ki_stat
	kinfoStatZombie = 5   // SZOMB
)

// procStart is ki_start of sysctl kern.proc.pid.<pid>, the wall-clock time
// the process started, to the microsecond: FreeBSD mounts no /proc by
// default. It is fixed for the life of the process, and a later process
// given the same pid starts at a later microsecond.
func procStart(pid int) string {
	b, err := unix.SysctlRaw("kern.proc.pid", pid)
	if err != nil {
		return ""
	}
	return parseKinfoProc(b, pid)
}

// parseKinfoProc returns the start time in b, a struct kinfo_proc of
// process pid, "" for a zombie or a struct of another size or process.
func parseKinfoProc(b []byte, pid int) string {
	le := binary.LittleEndian
	if len(b) != kinfoProcSize || le.Uint32(b) != kinfoProcSize || int32(le.Uint32(b[kinfoPIDOff:])) != int32(pid) {
		return ""
	}
	if b[kinfoStatOff] == kinfoStatZombie {
		return ""
	}
	return formatTimeval(int64(le.Uint64(b[kinfoStartOff:])), int64(le.Uint64(b[kinfoStartOff+8:])))
}
