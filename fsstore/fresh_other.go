//go:build !linux

package fsstore

import "os"

// FreshSize returns the size of the open file f. Outside Linux it is
// fstat's: see fresh_linux.go.
func FreshSize(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
