package agent

import (
	"context"
	"testing"

	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// TestCompressRecordsItsCall: the summary's call is stored on the
// summary message, marked as a compression's; the kept messages keep
// their own calls, whose ids are the parent's (counted once).
func TestCompressRecordsItsCall(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	answered := text("a2")
	usage.Put(&answered, usage.Call{ID: "call-a2", Input: 10, Output: 2, Provider: "scripted"})
	msgs := append(user("one"), text("a1"))
	msgs = append(msgs, user("two")...)
	msgs = append(msgs, answered)
	if _, err := st.Append(id, msgs); err != nil {
		t.Fatal(err)
	}
	gist := text("the gist")
	usage.Put(&gist, usage.Call{ID: "call-sum", Input: 40, Output: 5, Provider: "scripted"})
	e := &Engine{Sessions: st, Provider: &scripted{t: t, replies: []sessions.Message{gist}}}
	res, err := e.Compress(context.Background(), id, 2)
	if err != nil {
		t.Fatal(err)
	}
	child := stored(t, st, res.Child.ID)
	var got []usage.Call
	for _, m := range child {
		if c, ok, err := usage.Of(m); err != nil || ok {
			got = append(got, c)
		}
	}
	if len(got) != 2 || got[0].ID != "call-sum" || got[0].Purpose != usage.PurposeCompress || got[1].ID != "call-a2" || got[1].Purpose != "" {
		t.Errorf("the child holds the calls %+v", got)
	}
}
