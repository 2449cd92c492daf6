package seam_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore/internal/seam"
	"github.com/hermes/hermes/fsstore/testtmp"
)

// TestMain puts the tests' temporary files in memory where it may
// (fsstore/testtmp).
func TestMain(m *testing.M) { os.Exit(testtmp.Main(m)) }

var errInjected = errors.New("injected")

func create(t *testing.T, path string) *os.File {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestFaultsScopedToTheirDirectory: a fault applies to the files at or
// below the directory it was installed for, never to a sibling's (one
// whose name merely begins the same), and ends with its test.
func TestFaultsScopedToTheirDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "a")
	inside := create(t, filepath.Join(dir, "deep", "log.jsonl"))
	sibling := create(t, filepath.Join(root, "ab", "log.jsonl"))
	t.Run("installed", func(t *testing.T) {
		seam.Install(t, dir, seam.Faults{Sync: func(*os.File) error { return errInjected }})
		if err := seam.Sync(inside); !errors.Is(err, errInjected) {
			t.Errorf("sync of a file below the directory: %v, want the fault", err)
		}
		if err := seam.Sync(sibling); err != nil {
			t.Errorf("sync of a sibling's file: %v, want none", err)
		}
		if _, err := seam.Write(inside, []byte("x\n")); err != nil {
			t.Errorf("write, a step the faults leave: %v", err)
		}
	})
	if err := seam.Sync(inside); err != nil {
		t.Errorf("sync once the test that installed the fault ended: %v", err)
	}
}

// TestFaultsStack: a later install's steps come first, the earlier one's
// where the later has none, and the earlier one's again once the later
// ends.
func TestFaultsStack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := create(t, filepath.Join(dir, "log.jsonl"))
	first := errors.New("first")
	seam.Install(t, dir, seam.Faults{
		Sync:     func(*os.File) error { return first },
		Truncate: func(*os.File, int64) error { return first },
	})
	t.Run("later", func(t *testing.T) {
		seam.Install(t, dir, seam.Faults{Sync: func(*os.File) error { return errInjected }})
		if err := seam.Sync(f); !errors.Is(err, errInjected) {
			t.Errorf("sync: %v, want the later fault", err)
		}
		if err := seam.Truncate(f, 0); !errors.Is(err, first) {
			t.Errorf("truncate: %v, want the earlier fault", err)
		}
	})
	if err := seam.Sync(f); !errors.Is(err, first) {
		t.Errorf("sync after the later ended: %v, want the earlier fault", err)
	}
}

// TestOpenReadScopedByDescriptor: OpenRead, which has a directory's
// descriptor and no path, finds the faults of a directory above it.
func TestOpenReadScopedByDescriptor(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "a")
	create(t, filepath.Join(dir, "sessions", "x.jsonl"))
	create(t, filepath.Join(root, "b", "x.jsonl"))
	var opened []string
	seam.Install(t, dir, seam.Faults{OpenRead: func(dirfd int, name string) (int, error) {
		opened = append(opened, name)
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}})
	for _, d := range []string{filepath.Join(dir, "sessions"), filepath.Join(root, "b")} {
		dirfd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := seam.OpenRead(dirfd, "x.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		unix.Close(dirfd)
	}
	if fmt.Sprint(opened) != "[x.jsonl]" {
		t.Fatalf("the fault saw %q, want the one open below its directory", opened)
	}
}

// TestParallelFaultsApart: tests that fail the same step on their own
// files run at once, and each sees its fault and no other's.
func TestParallelFaultsApart(t *testing.T) {
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mine := fmt.Errorf("fault %d", i)
			seam.Install(t, dir, seam.Faults{CreateTemp: func(string, string) (*os.File, error) { return nil, mine }})
			for range 100 {
				if _, err := seam.CreateTemp(dir, "doc.tmp-*"); err != mine {
					t.Fatalf("create: %v, want %v", err, mine)
				}
			}
		})
	}
}

// logFile is a new file for one benchmark, closed when it ends.
func logFile(b *testing.B) *os.File {
	f, err := os.Create(filepath.Join(b.TempDir(), "log.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// BenchmarkSync is a sync with no faults installed (production), beside
// the os call it makes: the difference is one atomic load.
func BenchmarkSync(b *testing.B) {
	b.Run("os", func(b *testing.B) {
		f := logFile(b)
		b.ReportAllocs()
		for b.Loop() {
			f.Sync()
		}
	})
	b.Run("seam", func(b *testing.B) {
		f := logFile(b)
		b.ReportAllocs()
		for b.Loop() {
			seam.Sync(f)
		}
	})
}

// BenchmarkWrite is a write of a 200-byte line with no faults installed,
// beside the os call it makes, to /dev/null: the file does not grow
// between the two, so that what differs is the seam alone.
func BenchmarkWrite(b *testing.B) {
	line := append(make([]byte, 199), '\n')
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.Run("os", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.Write(line)
		}
	})
	b.Run("seam", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			seam.Write(f, line)
		}
	})
}
