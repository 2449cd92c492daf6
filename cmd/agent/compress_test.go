package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// compressible makes a session of three turns, the second with a tool call
// and its result: 1 system, 2 user, 3 text, 4 user, 5 calls, 6 tool,
// 7 text, 8 user, 9 text.
func compressible(t *testing.T, st *sessions.Store) string {
	t.Helper()
	id := newSession(t, st)
	call := calls("ls", "{}")
	msgs := []sessions.Message{{Role: "system", Content: sessions.TextContent("be brief")}}
	msgs = append(msgs, user("one")...)
	msgs = append(msgs, text("a1"))
	msgs = append(msgs, user("two")...)
	msgs = append(msgs, call, toolResult(ToolCalls(call)[0], "a.txt", false), text("a2"))
	msgs = append(msgs, user("three")...)
	msgs = append(msgs, text("a3"))
	if _, err := st.Append(id, msgs); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCompressKeepsWholeTurns: the kept messages start where a turn does,
// so a call keeps its result; the summary request is the instruction, the
// summarised messages and the prompt; the parent ends naming the child.
func TestCompressKeepsWholeTurns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		keep       int
		summarised int64 // the messages before the kept turns
	}{
		{1, 7}, {2, 7}, {3, 3}, {6, 3}, {7, 1},
	} {
		st := newStore(t)
		id := compressible(t, st)
		p := &scripted{t: t, replies: []sessions.Message{text("the gist")}}
		e := &Engine{Sessions: st, Provider: p}
		res, err := e.Compress(context.Background(), id, c.keep)
		if err != nil {
			t.Fatalf("keep %d: %v", c.keep, err)
		}
		if res.Summarised != c.summarised || res.Kept != int(9-c.summarised) {
			t.Errorf("keep %d: summarised %d, kept %d; want %d and %d", c.keep, res.Summarised, res.Kept, c.summarised, 9-c.summarised)
		}
		seen := p.seen[0]
		if len(seen) != int(c.summarised)+2 || seen[0].Text() != SummaryInstruction || seen[len(seen)-1].Text() != summaryPrompt {
			t.Errorf("keep %d: the summary request was\n%s", c.keep, dumpMsgs(seen))
		}
		parent := stored(t, st, id)
		child := stored(t, st, res.Child.ID)
		if !strings.HasSuffix(child[0].Text(), "the gist") || child[0].Role != "system" || len(child) != res.Kept+1 {
			t.Fatalf("keep %d: child holds\n%s", c.keep, dumpMsgs(child))
		}
		for i, m := range child[1:] {
			if !m.SameAs(parent[c.summarised+int64(i)]) || m.TS != parent[c.summarised+int64(i)].TS {
				t.Errorf("keep %d: kept message %d is %s, want %s", c.keep, i, m.Text(), parent[c.summarised+int64(i)].Text())
			}
		}
		if err := validForAPI(child); err != nil {
			t.Errorf("keep %d: the child's history: %v", c.keep, err)
		}
		doc, err := st.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if doc.State != sessions.StateEnded || doc.EndReason != sessions.EndCompression || doc.CompressedInto != res.Child.ID || res.Child.ParentSessionID != id {
			t.Errorf("keep %d: parent %+v, child %+v", c.keep, doc, res.Child)
		}
		if latest, err := st.Latest(id); err != nil || latest != res.Child.ID {
			t.Errorf("keep %d: Latest = %s, %v", c.keep, latest, err)
		}
	}
}

// TestCompressRefusals: nothing before the kept turns, a second
// compression of the same session, a session that grew meanwhile: an
// error, and no new session.
func TestCompressRefusals(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := compressible(t, st)
	e := &Engine{Sessions: st, Provider: &scripted{t: t, replies: []sessions.Message{text("s1"), text("s2")}}}
	if _, err := e.Compress(context.Background(), id, 9); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("keep 9 = %v, want ErrInvalid", err)
	}
	// A turn lands while the summary is made.
	grow := &growing{scripted: scripted{t: t, replies: []sessions.Message{text("s")}}, st: st, id: id}
	e.Provider = grow
	if _, err := e.Compress(context.Background(), id, 2); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("a compression of a session that grew = %v, want ErrRefused", err)
	}
	ids, _ := st.IDs()
	if len(ids) != 1 {
		t.Fatalf("refused compressions left sessions %v", ids)
	}
	e.Provider = &scripted{t: t, replies: []sessions.Message{text("s")}}
	res, err := e.Compress(context.Background(), id, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Compress(context.Background(), id, 2); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("a second compression of %s = %v, want ErrRefused", id, err)
	}
	chain, err := st.Chain(res.Child.ID)
	if err != nil || strings.Join(chain, " ") != id+" "+res.Child.ID {
		t.Fatalf("Chain = %v, %v", chain, err)
	}
}

// growing is a provider that appends a message to the session before it
// answers, as a concurrent turn would.
type growing struct {
	scripted
	st *sessions.Store
	id string
}

func (g *growing) Complete(ctx context.Context, req provider.Request) (provider.Reply, error) {
	if _, err := g.st.Append(g.id, user("meanwhile")); err != nil {
		return provider.Reply{}, err
	}
	return g.scripted.Complete(ctx, req)
}
