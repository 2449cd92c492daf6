package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// MaxLog bounds a server's stderr log: past it, the log is moved to
// <log>.1 (replacing the one before) and begins again, so a server's
// stderr never takes more than twice MaxLog on disk.
const MaxLog = 256 << 10

// tailBytes is how much of a server's latest stderr hermes keeps in
// memory, to name in a failure.
const tailBytes = 2 << 10

// tailLines is how many of its last lines a failure repeats.
const tailLines = 10

// stderrLog is a server process's stderr: appended to its log in the
// profile, bounded, with the latest bytes kept for error messages.
type stderrLog struct {
	path string

	mu   sync.Mutex
	f    *os.File
	size int64
	tail []byte
}

// openStderrLog opens the log at path for appending, with a line marking
// a new start. A log that cannot be opened is not fatal: the server runs,
// its stderr is kept in memory only.
func openStderrLog(path string) *stderrLog {
	l := &stderrLog{path: path}
	if err := fsstore.EnsureDir(filepath.Dir(path)); err != nil {
		return l
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, fsstore.FileMode)
	if err != nil {
		return l
	}
	l.f = f
	if fi, err := f.Stat(); err == nil {
		l.size = fi.Size()
	}
	l.writeLog(fmt.Appendf(nil, "--- hermes %d started the server at %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339)))
	return l
}

func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tail = append(l.tail, p...)
	if len(l.tail) > 2*tailBytes {
		l.tail = append(l.tail[:0:0], l.tail[len(l.tail)-tailBytes:]...)
	}
	l.writeLog(p)
	return len(p), nil
}

// writeLog appends p, moving the log aside first when p would take it
// past MaxLog. Errors are dropped: a full disk must not stop the server.
func (l *stderrLog) writeLog(p []byte) {
	if l.f == nil {
		return
	}
	if l.size > 0 && l.size+int64(len(p)) > MaxLog {
		if os.Rename(l.path, l.path+".1") == nil {
			if f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_TRUNC, fsstore.FileMode); err == nil {
				l.f.Close()
				l.f, l.size = f, 0
			}
		}
	}
	if len(p) > MaxLog {
		p = p[len(p)-MaxLog:]
	}
	n, _ := l.f.Write(p)
	l.size += int64(n)
}

// Tail is the last lines the server wrote to stderr, at most tailLines.
func (l *stderrLog) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.tail
	if len(b) > tailBytes {
		b = b[len(b)-tailBytes:]
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	s := strings.TrimRight(strings.ToValidUTF8(string(b), "\uFFFD"), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return strings.Join(lines, "\n")
}

func (l *stderrLog) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
