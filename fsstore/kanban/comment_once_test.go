package kanban

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// A keyed comment whose append failed after its key's record was written
// (its outcome unknown to the caller) is appended, once, by the retry with
// the key, with the recorded id; a comment that was stored is answered,
// nothing written; the key with another text is refused.
func TestAddCommentOnceRetry(t *testing.T) {
	b, _, _ := kbBoard(t)
	b.Now = time.Now
	task, err := b.Create(Task{Title: "report"})
	if err != nil {
		t.Fatal(err)
	}
	// The comments log cannot be written: a directory in its place.
	if err := os.MkdirAll(b.commentsPath(task.ID), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AddCommentOnce("k1", task.ID, "ann", "draft is up"); err == nil {
		t.Fatal("a comment whose log cannot be written was acknowledged")
	}
	if err := os.Remove(b.commentsPath(task.ID)); err != nil {
		t.Fatal(err)
	}
	first, again, err := b.AddCommentOnce("k1", task.ID, "ann", "draft is up")
	if err != nil || again {
		t.Fatalf("retry: again %v, %v", again, err)
	}
	second, again, err := b.AddCommentOnce("k1", task.ID, "ann", "draft is up")
	if err != nil || !again || second != first {
		t.Fatalf("second retry: %+v again %v, %v; want %+v again", second, again, err, first)
	}
	comments, err := b.Comments(task.ID)
	if err != nil || len(comments) != 1 || comments[0] != first {
		t.Fatalf("comments %+v, %v; want only %+v", comments, err, first)
	}
	if _, _, err := b.AddCommentOnce("k1", task.ID, "ann", "another text"); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("the key with another text: %v, want ErrInvalid", err)
	}
	if comments, _ := b.Comments(task.ID); len(comments) != 1 {
		t.Fatalf("the refused comment was written: %+v", comments)
	}
}
