package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// procStart is field 22 of /proc/<pid>/stat: the clock ticks from boot to
// the start of the process, fixed for its life and different for a later
// process given the same pid.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	return parseProcStat(b)
}

// parseProcStat returns the start time in a /proc/<pid>/stat line, "" for
// a zombie or a line it cannot read.
func parseProcStat(b []byte) string {
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
