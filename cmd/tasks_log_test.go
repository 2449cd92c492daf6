package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// growingWriter appends more to the log the first time it is written to,
// as a task does when what reads its tail makes it go on.
type growingWriter struct {
	strings.Builder
	path, more string
}

func (w *growingWriter) Write(p []byte) (int, error) {
	if w.more != "" {
		f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return 0, err
		}
		f.WriteString(w.more)
		f.Close()
		w.more = ""
	}
	return w.Builder.Write(p)
}

// TestPrintTailOffset: `tasks log --tail N -f` follows from where the tail
// ended. A line the task appended while the tail was being printed is
// followed, not skipped (before, the follow began at the log's size after
// the tail, and `log --tail 1 -f` lost such a line now and then:
// testdata/tasks_background.txtar).
func TestPrintTailOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.log")
	if err := os.WriteFile(path, []byte("x1\nx2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := &growingWriter{path: path, more: "x3\n"}
	end, err := printTail(path, 1, w)
	if err != nil {
		t.Fatal(err)
	}
	if w.String() != "x2\n" || end != 6 {
		t.Fatalf("printed %q up to %d; want \"x2\\n\" up to 6", w.String(), end)
	}
	end, err = printTail(path, 0, w)
	if err != nil || end != 9 {
		t.Fatalf("--tail 0: up to %d, %v; want 9", end, err)
	}
	if end, err := printTail(filepath.Join(t.TempDir(), "none.log"), 0, w); err != nil || end != 0 {
		t.Fatalf("--tail 0 of no log: up to %d, %v; want 0", end, err)
	}
}
