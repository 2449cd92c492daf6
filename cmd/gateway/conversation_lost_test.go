package gateway

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/gatewaystate"
)

// TestConversationMappingLost: a conversation's first mapping is written
// without a sync (CacheConversation), so a power cut after the reply may
// lose it or leave it empty. Its first session's document names the
// conversation: the gateway that starts after a run that did not stop
// cleanly writes the mapping again, and so does fsck --repair; the
// conversation's next turn goes on in its session, and GET answers its
// response.
func TestConversationMappingLost(t *testing.T) {
	for _, loss := range []string{"missing", "empty"} {
		for _, repair := range []string{"start", "fsck"} {
			t.Run(loss+"/"+repair, func(t *testing.T) {
				t.Parallel()
				home := t.TempDir()
				store := gatewaystate.NewStore(filepath.Join(home, "profiles", "default"), 0, nil)
				g := startGateway(t, home)
				resp, body := g.post("/v1/responses", map[string]any{"input": "first", "conversation": "c1"}, nil)
				mustStatus(t, resp, body, 200)
				sid, id := resp.Header.Get(SessionHeader), decode[respObj](t, body).ID
				g.stop(syscall.SIGKILL)
				mapping := filepath.Join(store.Dir, "conversations", "c1.json")
				var err error
				if loss == "missing" {
					err = os.Remove(mapping)
				} else {
					err = os.WriteFile(mapping, nil, 0o600)
				}
				if err != nil {
					t.Fatal(err)
				}

				if repair == "fsck" {
					fsck := exec.Command(hermesBinary(t), "--home", home, "fsck", "--repair")
					fsck.Env = cleanEnv()
					out, err := fsck.CombinedOutput()
					if err != nil || !strings.Contains(string(out), "repaired: "+filepath.Join(store.Dir, "conversations")+": conversation mappings written from their sessions: 1") {
						t.Fatalf("fsck --repair: %v\n%s", err, out)
					}
				}
				g = startGateway(t, home)
				if c, err := store.GetConversation("c1"); err != nil || c.SessionID != sid {
					t.Fatalf("the mapping after the restart: %+v, %v; want session %s\n%s", c, err, sid, g.log())
				}
				if repair == "start" && !strings.Contains(g.log(), "conversation mappings written again from their sessions: 1") {
					t.Errorf("the start did not say it wrote the mapping again:\n%s", g.log())
				}
				resp, body = doRequest(t, g.url, "GET", "/v1/responses/"+id, nil, nil)
				mustStatus(t, resp, body, 200)
				resp, body = g.post("/v1/responses", map[string]any{"input": "second", "conversation": "c1"}, nil)
				mustStatus(t, resp, body, 200)
				if got := resp.Header.Get(SessionHeader); got != sid {
					t.Fatalf("the conversation went on in session %s, want %s", got, sid)
				}
			})
		}
	}
}

// TestLevelConversationsFirstSession: the mapping written again names the
// conversation's first session, not a branch of it that shares its
// session_key (previous_response_id of an earlier turn), and a mapping
// there is left as it is.
func TestLevelConversationsFirstSession(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	var ids []string
	var sid string
	for _, input := range []string{"one", "two"} {
		resp, body := e.do("POST", "/v1/responses", map[string]any{"input": input, "conversation": "c1"}, nil)
		mustStatus(t, resp, body, 200)
		sid = resp.Header.Get(SessionHeader)
		ids = append(ids, decode[respObj](t, body).ID)
	}
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "other", "previous_response_id": ids[0]}, nil)
	mustStatus(t, resp, body, 200)
	branch, err := e.sessions.Get(resp.Header.Get(SessionHeader))
	if err != nil || branch.ID == sid || branch.ParentSessionID != sid || branch.SessionKey != conversationKey+"c1" {
		t.Fatalf("the branch: %+v, %v", branch, err)
	}
	if err := os.Remove(filepath.Join(e.store.Dir, "conversations", "c1.json")); err != nil {
		t.Fatal(err)
	}
	if n, err := LevelConversations(e.sessions, e.store, time.Time{}); n != 1 || err != nil {
		t.Fatalf("LevelConversations = %d, %v; want 1", n, err)
	}
	if c, err := e.store.GetConversation("c1"); err != nil || c.SessionID != sid {
		t.Fatalf("the mapping written again: %+v, %v; want session %s", c, err, sid)
	}
	if n, err := LevelConversations(e.sessions, e.store, time.Time{}); n != 0 || err != nil {
		t.Fatalf("LevelConversations again = %d, %v; want 0", n, err)
	}
}

// TestLevelConversationsSince: a start after a crash reads only the
// sessions made since the last run began (their ids say when), so its
// cost is the last run's, not the profile's; fsck's (a zero since) reads
// them all.
func TestLevelConversationsSince(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "one", "conversation": "c1"}, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	made, err := time.Parse("20060102_150405", sid[:15])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.store.Dir, "conversations", "c1.json")); err != nil {
		t.Fatal(err)
	}
	if n, err := LevelConversations(e.sessions, e.store, made.Add(time.Hour)); n != 0 || err != nil {
		t.Fatalf("LevelConversations since a run after the session = %d, %v; want 0 (not read)", n, err)
	}
	if n, err := LevelConversations(e.sessions, e.store, made); n != 1 || err != nil {
		t.Fatalf("LevelConversations since the session's run = %d, %v; want 1", n, err)
	}
	if c, err := e.store.GetConversation("c1"); err != nil || c.SessionID != sid {
		t.Fatalf("the mapping written again: %+v, %v; want session %s", c, err, sid)
	}
}
