package fsstore

import (
	"os"
	"strings"
)

// initPIDNamespace is how Linux names the initial pid namespace
// (PROC_PID_INIT_INO): a host id leaves it out.
const initPIDNamespace = "pid:[4026531836]"

// bootID is the kernel's random id of this boot, made anew at each boot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidNamespace names this process's pid namespace when it is not the
// initial one: two containers of one kernel number their processes apart.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil || ns == initPIDNamespace {
		return ""
	}
	return ns
}
