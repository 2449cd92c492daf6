package supervisor

import "golang.org/x/sys/unix"

// szomb is a zombie's p_stat (sys/proc.h).
const szomb = 5

// procStart is p_starttime of sysctl kern.proc.pid.<pid>, the wall-clock
// time the process started, to the microsecond: macOS has no /proc. It is
// fixed for the life of the process, and a later process given the same
// pid starts at a later microsecond.
func procStart(pid int) string {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || int(kp.Proc.P_pid) != pid || kp.Proc.P_stat == szomb {
		return ""
	}
	return formatTimeval(kp.Proc.P_starttime.Sec, int64(kp.Proc.P_starttime.Usec))
}
