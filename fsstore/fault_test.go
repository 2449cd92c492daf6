package fsstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The tests in this file replace the seams of fs.go (createTemp, rename,
// syncFile) to fail one step of a write, like raft-wal's test filesystem.
// They change package variables, so none of them runs in parallel.

var errInjected = errors.New("injected fault")

// setSeams replaces the seams for the rest of the test.
func setSeams(t *testing.T, create func(string, string) (*os.File, error), ren func(string, string) error, sync func(*os.File) error) {
	t.Helper()
	oldCreate, oldRename, oldSync := createTemp, rename, syncFile
	t.Cleanup(func() { createTemp, rename, syncFile = oldCreate, oldRename, oldSync })
	if create != nil {
		createTemp = create
	}
	if ren != nil {
		rename = ren
	}
	if sync != nil {
		syncFile = sync
	}
}

// TestWriteFileAtomicFaults: whichever step of an atomic write fails, the
// old file is byte-identical, no temp file is left behind, and the error
// names the path and wraps the cause.
func TestWriteFileAtomicFaults(t *testing.T) {
	cases := []struct {
		name   string
		create func(string, string) (*os.File, error)
		rename func(string, string) error
		sync   func(*os.File) error
	}{
		{name: "create", create: func(string, string) (*os.File, error) { return nil, errInjected }},
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
				return errInjected
			}
			return f.Sync()
		}},
		{name: "rename", rename: func(string, string) error { return errInjected }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "doc.json")
			old := []byte(`{"id":"old"}` + "\n")
			if err := WriteFileAtomic(path, old); err != nil {
				t.Fatal(err)
			}
			setSeams(t, c.create, c.rename, c.sync)
			err := WriteFileAtomic(path, []byte(`{"id":"new","longer":true}`+"\n"))
			if err == nil {
				t.Fatal("WriteFileAtomic succeeded with a failing " + c.name)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if c.name != "write" && !errors.Is(err, errInjected) {
				t.Errorf("error %q does not wrap the cause", err)
			}
			if got := mustRead(t, path); !bytes.Equal(got, old) {
				t.Fatalf("%s holds %q after a failed write, want %q", path, got, old)
			}
			if names := dirNames(t, dir); len(names) != 1 || names[0] != "doc.json" {
				t.Fatalf("directory holds %q after a failed write, want only doc.json", names)
			}
		})
	}
}

// TestAppendLinesSyncFailure: when the sync of an append fails, the log is
// cut back to its size before the append, so an unacknowledged write does
// not linger to be read later.
func TestAppendLinesSyncFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	old := []byte("{\"a\":1}\n{\"b\":2}\n")
	mustWrite(t, path, old)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syncs := 0
	setSeams(t, nil, nil, func(f *os.File) error {
		syncs++
		if syncs == 1 {
			return errInjected
		}
		return f.Sync()
	})
	err = AppendLines(f, [][]byte{[]byte("{\"c\":3}\n"), []byte("{\"d\":4}\n")})
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), path) {
		t.Fatalf("AppendLines = %v, want the injected error naming %s", err, path)
	}
	if got := mustRead(t, path); !bytes.Equal(got, old) {
		t.Fatalf("log holds %q after a failed append, want %q", got, old)
	}
	// The descriptor still appends at the (restored) end.
	if err := AppendLines(f, [][]byte{[]byte("{\"e\":5}\n")}); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); string(got) != string(old)+"{\"e\":5}\n" {
		t.Fatalf("log holds %q", got)
	}
}

// TestAppendSyncFailureLeavesSessionAsItWas: a session append whose
// transcript sync fails returns the error and leaves the transcript and the
// document as they were; the next append numbers on from the stored ones.
func TestAppendSyncFailureLeavesSessionAsItWas(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "s1")
	mustAppend(t, s, id, textMsg("user", "one"), textMsg("assistant", "two"))
	log, doc := mustRead(t, s.logPath(id)), mustRead(t, s.docPath(id))
	setSeams(t, nil, nil, func(f *os.File) error {
		if f.Name() == s.logPath(id) {
			return errInjected
		}
		return f.Sync()
	})
	if _, err := s.Append(id, []Message{textMsg("user", "lost")}); !errors.Is(err, errInjected) {
		t.Fatalf("Append = %v, want the injected error", err)
	}
	if !bytes.Equal(mustRead(t, s.logPath(id)), log) || !bytes.Equal(mustRead(t, s.docPath(id)), doc) {
		t.Fatal("a failed append changed the session")
	}
	syncFile = func(f *os.File) error { return f.Sync() }
	if n, err := s.Append(id, []Message{textMsg("user", "three")}); err != nil || n != 3 {
		t.Fatalf("Append after the failure = %d, %v; want 3", n, err)
	}
}

// TestDocumentWriteFailureKeepsOldDocument: a document rewrite that fails
// at the rename leaves the previous document readable and no temp file.
func TestDocumentWriteFailureKeepsOldDocument(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "s1")
	doc := mustRead(t, s.docPath(id))
	setSeams(t, nil, func(string, string) error { return errInjected }, nil)
	if _, err := s.Rename(id, "new title"); !errors.Is(err, errInjected) {
		t.Fatalf("Rename = %v, want the injected error", err)
	}
	if !bytes.Equal(mustRead(t, s.docPath(id)), doc) {
		t.Fatal("a failed rewrite changed the document")
	}
	for _, name := range dirNames(t, s.Dir) {
		if strings.Contains(name, ".tmp-") {
			t.Fatalf("temp file %s left behind", name)
		}
	}
}

// TestFullDiskAtEveryStep: a full disk (ENOSPC) at each step of an atomic
// write and of an append, the second record's write cut short after some
// of its bytes: the error says the disk is full and names the path, and
// what was on disk before is byte-identical.
func TestFullDiskAtEveryStep(t *testing.T) {
	full := func(string, string) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Path: "x", Err: syscall.ENOSPC}
	}
	syncFull := func(*os.File) error { return syscall.ENOSPC }
	renameFull := func(string, string) error { return syscall.ENOSPC }
	for name, seams := range map[string]func(t *testing.T){
		"create": func(t *testing.T) { setSeams(t, full, nil, nil) },
		"sync":   func(t *testing.T) { setSeams(t, nil, nil, syncFull) },
		"rename": func(t *testing.T) { setSeams(t, nil, renameFull, nil) },
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
			if got := mustRead(t, path); !bytes.Equal(got, old) {
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
			f, _, err := OpenAppend(path, testEpoch)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			old := writeFile
			t.Cleanup(func() { writeFile = old })
			switch step {
			case "write":
				// The second record gets 3 of its bytes on disk, then ENOSPC.
				calls := 0
				writeFile = func(f *os.File, b []byte) (int, error) {
					if calls++; calls == 2 {
						n, _ := f.Write(b[:3])
						return n, syscall.ENOSPC
					}
					return f.Write(b)
				}
			case "sync":
				setSeams(t, nil, nil, func(f *os.File) error {
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
			if got := mustRead(t, path); !bytes.Equal(got, before) {
				t.Fatalf("log holds %q after a failed append, want %q", got, before)
			}
		})
	}
}
