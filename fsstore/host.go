package fsstore

import (
	"os"
	"strings"
	"sync"
)

// HostEnv is the environment variable that names this host in the records
// it writes, in place of the id ThisHost makes up.
const HostEnv = "HERMES_HOST_ID"

// ThisHost returns the id of the host this process runs on, as records that
// name a process name its host (host): $HERMES_HOST_ID when it is set,
// else the hostname, the kernel's boot id (bootID) and, outside the initial
// pid namespace, that namespace ("build-7/61880c4b-…" or
// "build-7/61880c4b-…/pid:[4026532481]"). A pid means something only
// within one boot of one pid namespace, so two hosts never share an id,
// nor one host before and after a reboot, nor two containers of one
// kernel. The variable is read from the environment, not from config.yaml,
// because every host that shares a profile reads the same config.yaml; it
// is for hosts that the default cannot tell apart (two machines with the
// same hostname and no boot id). It is computed once.
var ThisHost = sync.OnceValue(thisHost)

func thisHost() string {
	if id := strings.TrimSpace(os.Getenv(HostEnv)); id != "" {
		return id
	}
	id, err := os.Hostname()
	if err != nil || id == "" {
		id = "localhost"
	}
	if boot := bootID(); boot != "" {
		id += "/" + boot
	}
	if ns := pidNamespace(); ns != "" {
		id += "/" + ns
	}
	return id
}
