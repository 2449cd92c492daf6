package sessions

import "testing"

// TestPointMovesWithEveryOtherWrite: an append begins at the point a read
// (or the last append) ended at only when nothing else wrote in between:
// another append, a forced rewrite of as many messages.
func TestPointMovesWithEveryOtherWrite(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "point")
	_, at, err := s.MessagesAt(id)
	if err != nil {
		t.Fatal(err)
	}
	_, ext, err := s.AppendAt(id, []Message{{Role: "user", Content: TextContent("a")}})
	if err != nil || !ext.From.Same(at) {
		t.Fatalf("the first append of an empty transcript: from %+v, read at %+v, %v", ext.From, at, err)
	}
	_, next, err := s.AppendAt(id, []Message{{Role: "assistant", Content: TextContent("b")}})
	if err != nil || !next.From.Same(ext.To) {
		t.Fatalf("an append after ours: from %+v, ours ended at %+v, %v", next.From, ext.To, err)
	}
	_, at, err = s.MessagesAt(id)
	if err != nil || !at.Same(next.To) {
		t.Fatalf("a read after the appends: %+v, they ended at %+v, %v", at, next.To, err)
	}
	other := func() {
		if _, err := s.Append(id, []Message{{Role: "user", Content: TextContent("c")}}); err != nil {
			t.Fatal(err)
		}
	}
	replace := func() {
		msgs, err := s.Messages(id)
		if err != nil {
			t.Fatal(err)
		}
		msgs[0].Content = TextContent("A")
		if _, err := s.Save(id, msgs, true); err != nil {
			t.Fatal(err)
		}
	}
	for name, write := range map[string]func(){"append": other, "replace": replace} {
		_, at, err := s.MessagesAt(id)
		if err != nil {
			t.Fatal(err)
		}
		write()
		_, ext, err := s.AppendAt(id, []Message{{Role: "user", Content: TextContent("d")}})
		if err != nil {
			t.Fatal(err)
		}
		if ext.From.Same(at) {
			t.Errorf("%s: an append after it begins where the read before it ended", name)
		}
	}
}
