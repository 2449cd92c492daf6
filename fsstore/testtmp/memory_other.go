//go:build !linux

package testtmp

import "errors"

// memoryDir: only Linux has /dev/shm; elsewhere the tests use the
// system's temporary directory (on macOS, per-user already).
func memoryDir() (string, func(), error) {
	return "", nil, errors.New("no /dev/shm")
}
