package supervisor

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProcStart returns the start time of process pid as the kernel keeps it
// (a string to compare, whose form is the system's: see procStart), or ""
// if there is no such process or it has finished (a zombie).
func ProcStart(pid int) string {
	if pid <= 0 {
		return ""
	}
	return procStart(pid)
}

// Alive reports whether process pid runs and is the one that started at
// start.
func Alive(pid int, start string) bool {
	return pid > 0 && start != "" && ProcStart(pid) == start
}

// ParseSignal reads a signal as a name (TERM, SIGTERM, term) or a number
// (15, or SIG15 as SignalName writes a signal without a name).
func ParseSignal(s string) (syscall.Signal, error) {
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if sig := unix.SignalNum("SIG" + name); sig != 0 && name != "" {
		return sig, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 65 && strconv.Itoa(n) == name {
		return syscall.Signal(n), nil
	}
	return 0, fmt.Errorf("unknown signal %q (TERM, INT, HUP, KILL, … or a number)", s)
}

// SignalName is the conventional name of sig, as the system's tables have
// it (SIGTERM), else SIG and its number (SIG40).
func SignalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return "SIG" + strconv.Itoa(int(sig))
}
