package sessions

import (
	"context"
	"errors"
	"os"
	"testing"
)

// Follow passes each message after the seq given as it is appended, a
// line only once it is whole, and returns once the session is ended,
// with every message read; a cancelled ctx ends it with ctx's error.
func TestFollow(t *testing.T) {
	s, _, _ := newTestStore(t)
	sess, _, err := s.CreateWith(Session{}, []Message{{Role: "user", Content: TextContent("one")}})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Message, 10)
	done := make(chan error, 1)
	go func() {
		done <- s.Follow(context.Background(), sess.ID, 0, func(m Message) error { got <- m; return nil })
	}()
	if m := <-got; m.Seq != 1 || m.Text() != "one" {
		t.Fatalf("first %+v", m)
	}
	// Half a line: not passed on until its newline is there.
	f, err := os.OpenFile(s.logPath(sess.ID), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	half := `{"seq":2,"ts":"2026-01-01T00:00:00Z","role":"assistant",`
	f.WriteString(half)
	f.Sync()
	f.WriteString(`"content":"two"}` + "\n")
	f.Close()
	if m := <-got; m.Seq != 2 || m.Text() != "two" {
		t.Fatalf("second %+v", m)
	}
	if _, err := s.Append(sess.ID, []Message{{Role: "user", Content: TextContent("three")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.End(sess.ID, "done"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := <-got; m.Seq != 3 {
		t.Fatalf("third %+v", m)
	}
	if len(got) != 0 {
		t.Fatalf("%d more messages", len(got))
	}

	other, _, _ := s.CreateWith(Session{}, []Message{{Role: "user", Content: TextContent("x")}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	err = s.Follow(ctx, other.ID, 1, func(Message) error { n++; return nil })
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("cancelled follow: %v, %d messages after seq 1", err, n)
	}
}
