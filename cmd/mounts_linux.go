package cmd

import "os"

// systemMounts reads /proc/self/mountinfo: the kernel's table of this
// process's mount namespace, which no mounted filesystem is asked for.
func systemMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}
