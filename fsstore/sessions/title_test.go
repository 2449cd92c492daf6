package sessions

import (
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// A duplicated title at the length limit is repaired to one that is still
// within it and still valid UTF-8.
func TestCheckRetitlesALongTitleWithinTheLimit(t *testing.T) {
	s, clock, _ := newTestStore(t)
	long := strings.Repeat("é", fsstore.MaxTitleLen/2)
	if _, _, err := s.Create(Session{ID: "old", Title: long}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	mustCreate(t, s, "new")
	doc := strings.Replace(string(storetest.MustRead(t, s.docPath("new"))), `"title": ""`, `"title": "`+long+`"`, 1)
	if err := os.WriteFile(s.docPath("new"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	findings, err := s.Check(true, t.TempDir())
	if err != nil || !hasFinding(findings, "renamed") {
		t.Fatalf("findings %+v, %v", findings, err)
	}
	sess, err := s.Get("new")
	if err != nil {
		t.Fatal(err)
	}
	if len(sess.Title) > fsstore.MaxTitleLen || !utf8.ValidString(sess.Title) || !strings.HasSuffix(sess.Title, "é (2)") {
		t.Fatalf("repaired title %q (%d bytes)", sess.Title, len(sess.Title))
	}
	if err := fsstore.CheckTitle(sess.Title); err != nil {
		t.Fatal(err)
	}
}
