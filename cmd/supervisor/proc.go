package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProcStart returns the start time of process pid as the kernel counts it
// (clock ticks since boot, on Linux), or "" if there is no such process.
// Elsewhere it returns "-" for a live process: pid reuse is not detected.
func ProcStart(pid int) string {
	if pid <= 0 {
		return ""
	}
	if runtime.GOOS != "linux" {
		if syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM) {
			return "-"
		}
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// count fields after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); the start time is field 22.
	if len(fields) < 20 {
		return ""
	}
	if fields[0] == "Z" {
		return "" // a zombie has finished
	}
	return fields[19]
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
