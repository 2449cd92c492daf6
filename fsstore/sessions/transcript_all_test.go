package sessions

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// All, split into many parts, reads what Each reads: every message, in
// order, a torn tail reported, a corrupt line named by its offset.
func TestTranscriptAllInParts(t *testing.T) {
	defer func(n int64) { parallelPartSize = n }(parallelPartSize)
	var warnings []string
	s := NewStore(t.TempDir(), "default", 10*time.Second, func(w string) { warnings = append(warnings, w) })
	sess, _, err := s.Create(Session{ID: "all"})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	for i := range 50 {
		msgs = append(msgs, Message{Role: "user", Content: TextContent(fmt.Sprintf("message %d %s", i, strings.Repeat("x", i)))})
	}
	if _, err := s.Append(sess.ID, msgs); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.logPath(sess.ID), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":51,"ts":"2026`)
	f.Close()

	for _, size := range []int64{1, 64, 1000, 1 << 30} {
		parallelPartSize = size
		warnings = nil
		tr, err := s.OpenTranscript(sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		var each []Message
		if err := tr.Each(func(m Message) error { each = append(each, m); return nil }); err != nil {
			t.Fatal(err)
		}
		all, err := tr.All()
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 50 || !reflect.DeepEqual(all, each) {
			t.Fatalf("part size %d: All read %d messages, Each %d, or they differ", size, len(all), len(each))
		}
		if len(warnings) != 2 || !strings.Contains(warnings[1], "torn tail of 20 bytes") {
			t.Errorf("part size %d: warnings %q, want a torn tail from Each and from All", size, warnings)
		}
	}

	// A corrupt line in the middle: its offset, from whichever part.
	data, _ := os.ReadFile(s.logPath(sess.ID))
	lines := strings.SplitAfter(string(data), "\n")
	off := len(strings.Join(lines[:30], ""))
	lines[30] = "{not json}\n"
	os.WriteFile(s.logPath(sess.ID), []byte(strings.Join(lines, "")), 0o600)
	parallelPartSize = 64
	tr, err := s.OpenTranscript(sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, err = tr.All()
	var corrupt *fsstore.CorruptError
	if !errors.As(err, &corrupt) || corrupt.Offset != int64(off) {
		t.Fatalf("All on a corrupt line: %v, want a fsstore.CorruptError at offset %d", err, off)
	}
}
