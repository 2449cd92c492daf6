package fsstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// The tests in this file replace the seams of the write recipes
// (storetest.SetSeams) to fail one step of a write, like raft-wal's test
// filesystem. They change package variables, so none of them runs in
// parallel.

// TestWriteFileAtomicFaults: whichever step of an atomic write fails, the
// old file is byte-identical, no temp file is left behind, and the error
// names the path and wraps the cause.
func TestWriteFileAtomicFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		create func(string, string) (*os.File, error)
		rename func(string, string) error
		sync   func(*os.File) error
	}{
		{name: "create", create: func(string, string) (*os.File, error) { return nil, storetest.ErrInjected }},
		{name: "write", create: func(dir, pattern string) (*os.File, error) {
			// A temp file that cannot be written to.
			f, err := os.CreateTemp(dir, pattern)
			if err != nil {
				return nil, err
			}
			f.Close()
			return os.Open(f.Name())
		}},
		{name: "sync", sync: func(f *os.File) error {
			if strings.Contains(filepath.Base(f.Name()), ".tmp-") {
				return storetest.ErrInjected
			}
			return f.Sync()
		}},
		{name: "rename", rename: func(string, string) error { return storetest.ErrInjected }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "doc.json")
			old := []byte(`{"id":"old"}` + "\n")
			if err := WriteFileAtomic(path, old); err != nil {
				t.Fatal(err)
			}
			storetest.SetSeams(t, c.create, c.rename, c.sync)
			err := WriteFileAtomic(path, []byte(`{"id":"new","longer":true}`+"\n"))
			if err == nil {
				t.Fatal("WriteFileAtomic succeeded with a failing " + c.name)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if c.name != "write" && !errors.Is(err, storetest.ErrInjected) {
				t.Errorf("error %q does not wrap the cause", err)
			}
			if got := storetest.MustRead(t, path); !bytes.Equal(got, old) {
				t.Fatalf("%s holds %q after a failed write, want %q", path, got, old)
			}
			if names := storetest.DirNames(t, dir); len(names) != 1 || names[0] != "doc.json" {
				t.Fatalf("directory holds %q after a failed write, want only doc.json", names)
			}
		})
	}
}

// TestAppendLinesSyncFailure: when the sync of an append fails, the log is
// cut back to its size before the append, so an unacknowledged write does
// not linger to be read later.
func TestAppendLinesSyncFailure(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "log.jsonl")
	old := []byte("{\"a\":1}\n{\"b\":2}\n")
	storetest.MustWrite(t, path, old)
	f, _, err := OpenAppend(path, storetest.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syncs := 0
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		syncs++
		if syncs == 1 {
			return storetest.ErrInjected
		}
		return f.Sync()
	})
	err = AppendLines(f, [][]byte{[]byte("{\"c\":3}\n"), []byte("{\"d\":4}\n")})
	if !errors.Is(err, storetest.ErrInjected) || !strings.Contains(err.Error(), path) {
		t.Fatalf("AppendLines = %v, want the injected error naming %s", err, path)
	}
	if got := storetest.MustRead(t, path); !bytes.Equal(got, old) {
		t.Fatalf("log holds %q after a failed append, want %q", got, old)
	}
	// The descriptor still appends at the (restored) end.
	if err := AppendLines(f, [][]byte{[]byte("{\"e\":5}\n")}); err != nil {
		t.Fatal(err)
	}
	if got := storetest.MustRead(t, path); string(got) != string(old)+"{\"e\":5}\n" {
		t.Fatalf("log holds %q", got)
	}
}

// TestFullDiskAtEveryStep: a full disk (ENOSPC) at each step of an atomic
// write and of an append, the second record's write cut short after some
// of its bytes: the error says the disk is full and names the path, and
// what was on disk before is byte-identical.
func TestFullDiskAtEveryStep(t *testing.T) {
	t.Parallel()
	full := func(string, string) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Path: "x", Err: syscall.ENOSPC}
	}
	syncFull := func(*os.File) error { return syscall.ENOSPC }
	renameFull := func(string, string) error { return syscall.ENOSPC }
	for name, seams := range map[string]func(t *testing.T){
		"create": func(t *testing.T) { storetest.SetSeams(t, full, nil, nil) },
		"sync":   func(t *testing.T) { storetest.SetSeams(t, nil, nil, syncFull) },
		"rename": func(t *testing.T) { storetest.SetSeams(t, nil, renameFull, nil) },
	} {
		t.Run("atomic/"+name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "doc.json")
			old := []byte(`{"id":"old"}` + "\n")
			if err := WriteFileAtomic(path, old); err != nil {
				t.Fatal(err)
			}
			seams(t)
			err := WriteFileAtomic(path, []byte(`{"id":"new"}`+"\n"))
			if !IsDiskFull(err) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v: want a full disk naming %s", err, path)
			}
			if got := storetest.MustRead(t, path); !bytes.Equal(got, old) {
				t.Fatalf("%s holds %q, want %q", path, got, old)
			}
		})
	}
	for _, step := range []string{"write", "sync"} {
		t.Run("append/"+step, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			before := []byte("{\"seq\":1}\n")
			if err := os.WriteFile(path, before, 0o600); err != nil {
				t.Fatal(err)
			}
			f, _, err := OpenAppend(path, storetest.Epoch)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			switch step {
			case "write":
				// The second record gets 3 of its bytes on disk, then ENOSPC.
				calls := 0
				storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) {
					if calls++; calls == 2 {
						n, _ := f.Write(b[:3])
						return n, syscall.ENOSPC
					}
					return f.Write(b)
				})
			case "sync":
				storetest.SetSeams(t, nil, nil, func(f *os.File) error {
					if f.Name() == path {
						return syscall.ENOSPC
					}
					return f.Sync()
				})
			}
			err = AppendLines(f, [][]byte{[]byte("{\"seq\":2}\n"), []byte("{\"seq\":3}\n")})
			if !IsDiskFull(err) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v: want a full disk naming %s", err, path)
			}
			if got := storetest.MustRead(t, path); !bytes.Equal(got, before) {
				t.Fatalf("log holds %q after a failed append, want %q", got, before)
			}
		})
	}
}

// WriteCacheFile replaces a file as WriteFileAtomic does, but syncs
// nothing: with every sync failing it still writes, and no temp file stays.
func TestWriteCacheFileSyncsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.json")
	if err := WriteFileAtomic(path, []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	storetest.SetSeams(t, nil, nil, func(*os.File) error { return storetest.ErrInjected })
	if err := WriteCacheFile(path, []byte("new\n")); err != nil {
		t.Fatalf("WriteCacheFile with failing syncs: %v", err)
	}
	if got := string(storetest.MustRead(t, path)); got != "new\n" {
		t.Fatalf("cache holds %q", got)
	}
	if names := storetest.DirNames(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v", names)
	}
}
