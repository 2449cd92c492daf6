package fsstore

// bootID is kern.boottime's seconds (bootTime): FreeBSD keeps no random id
// of a boot. A step of the clock (settimeofday, ntpd's first correction)
// moves the boot time the kernel reports, and with it the host id; a host
// that steps its clock after starting tasks names itself with
// $HERMES_HOST_ID.
func bootID() string { return bootTime() }

// pidNamespace is "": a jail shares the host's pid space, so a pid names
// one process of the host.
func pidNamespace() string { return "" }
