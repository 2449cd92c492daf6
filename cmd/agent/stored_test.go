package agent

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes/hermes/fsstore/sessions"
)

// countReads counts the reads of st's transcripts from now on.
func countReads(t *testing.T, st *sessions.Store) *atomic.Int64 {
	var n atomic.Int64
	t.Cleanup(sessions.ObserveTranscriptReads(st.Dir, func(string) { n.Add(1) }))
	return &n
}

// sameHistory fails the test unless the provider was sent the first
// len(got) messages of the transcript, as stored.
func sameHistory(t *testing.T, got, file []sessions.Message) {
	t.Helper()
	if len(got) > len(file) {
		t.Fatalf("provider got %d messages, the transcript holds %d:\n%s", len(got), len(file), dumpMsgs(got))
	}
	for i := range got {
		if got[i].Seq != file[i].Seq || got[i].TS != file[i].TS || !got[i].SameAs(file[i]) {
			t.Fatalf("message %d: provider got\n%s\nthe transcript holds\n%s", i, dumpMsgs(got), dumpMsgs(file))
		}
	}
}

// TestStoredTranscriptIsSent: a turn given the transcript as its caller
// read it (Turn.Stored) sends each provider call that and what the turn
// stored since, the transcript's own messages, without reading the file.
func TestStoredTranscriptIsSent(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	if _, err := st.Append(id, append(user("a"), text("b"))); err != nil {
		t.Fatal(err)
	}
	read, at, err := st.MessagesAt(id)
	if err != nil {
		t.Fatal(err)
	}
	reads := countReads(t, st)
	p := &scripted{t: t, replies: []sessions.Message{calls("echo", `{}`), text("done")}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{&fakeTool{name: "echo"}}}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("c"), Stored: read, StoredAt: at}); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 0 {
		t.Fatalf("the turn read its transcript %d times, want 0", n)
	}
	file := stored(t, st, id)
	if len(p.seen) != 2 || len(p.seen[0]) != 3 || len(p.seen[1]) != 5 {
		t.Fatalf("provider calls: %d", len(p.seen))
	}
	sameHistory(t, p.seen[0], file)
	sameHistory(t, p.seen[1], file)
}

// TestStoredTranscriptWrittenSince: a transcript written by another
// process between the caller's read and the turn (an append, a forced
// rewrite of as many messages) is read again: the provider gets the
// file's history, never the stale one.
func TestStoredTranscriptWrittenSince(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"append", "replace"} {
		t.Run(how, func(t *testing.T) {
			st := newStore(t)
			id := newSession(t, st)
			if _, err := st.Append(id, append(user("a"), text("b"))); err != nil {
				t.Fatal(err)
			}
			read, at, err := st.MessagesAt(id)
			if err != nil {
				t.Fatal(err)
			}
			other := sessions.NewStore(filepath.Dir(st.Dir), "default", st.LockTimeout, func(string) {})
			if how == "append" {
				_, err = other.Append(id, user("elsewhere"))
			} else {
				_, err = other.Save(id, append(user("a2"), text("b2")), true)
			}
			if err != nil {
				t.Fatal(err)
			}
			p := &scripted{t: t, replies: []sessions.Message{text("done")}}
			e := &Engine{Sessions: st, Provider: p}
			if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("c"), Stored: read, StoredAt: at}); err != nil {
				t.Fatal(err)
			}
			file := stored(t, st, id)
			if len(p.seen[0]) != len(file)-1 {
				t.Fatalf("provider got %d messages, the transcript held %d before the reply:\n%s", len(p.seen[0]), len(file)-1, dumpMsgs(p.seen[0]))
			}
			sameHistory(t, p.seen[0], file)
		})
	}
}

// TestStoredTranscriptPendingCall: a call the transcript ends with
// unanswered (a crash while it ran) gets its interrupted result before the
// turn's input, whether the call is in what the caller read (the turn
// takes the transcript's tail from that, reading nothing) or was stored by
// another process since (the tail is read from the file).
func TestStoredTranscriptPendingCall(t *testing.T) {
	t.Parallel()
	for _, when := range []string{"read", "since"} {
		t.Run(when, func(t *testing.T) {
			st := newStore(t)
			id := newSession(t, st)
			if _, err := st.Append(id, append(user("a"), text("b"))); err != nil {
				t.Fatal(err)
			}
			call := calls("echo", `{}`)
			if when == "read" {
				if _, err := st.Append(id, append(user("run it"), call)); err != nil {
					t.Fatal(err)
				}
			}
			read, at, err := st.MessagesAt(id)
			if err != nil {
				t.Fatal(err)
			}
			if when == "since" {
				other := sessions.NewStore(filepath.Dir(st.Dir), "default", st.LockTimeout, func(string) {})
				if _, err := other.Append(id, append(user("run it"), call)); err != nil {
					t.Fatal(err)
				}
			}
			reads := countReads(t, st)
			p := &scripted{t: t, replies: []sessions.Message{text("done")}}
			e := &Engine{Sessions: st, Provider: p, Tools: []Tool{&fakeTool{name: "echo"}}}
			if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("c"), Stored: read, StoredAt: at}); err != nil {
				t.Fatal(err)
			}
			// Since: the tail, and the history sent to the provider.
			if n, want := reads.Load(), map[string]int64{"read": 0, "since": 2}[when]; n != want {
				t.Errorf("the turn read its transcript %d times, want %d", n, want)
			}
			file := stored(t, st, id)
			if len(file) != 7 || file[4].Role != "tool" || file[4].ToolCallID != "call_echo_0" || !strings.HasPrefix(file[4].Text(), "interrupted") || file[5].Text() != "c" {
				t.Fatalf("the transcript after the turn:\n%s", dumpMsgs(file))
			}
			sameHistory(t, p.seen[0], file)
		})
	}
}
