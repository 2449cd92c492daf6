package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
)

// loseResponse does to the document of response id what a power cut after
// its unsynced write may do: lose it ("missing"), leave it empty
// ("empty"), or lose it with its line of the index ("unindexed").
func loseResponse(t *testing.T, e *testEnv, id, loss string) {
	t.Helper()
	dir := filepath.Join(e.dir, "gateway", "responses")
	doc := filepath.Join(dir, id+".json")
	var err error
	switch loss {
	case "missing":
		err = os.Remove(doc)
	case "empty":
		err = os.WriteFile(doc, nil, 0o600)
	case "unindexed":
		if err = os.Remove(doc); err != nil {
			break
		}
		var index []byte
		if index, err = os.ReadFile(filepath.Join(dir, ".index.jsonl")); err != nil {
			break
		}
		var kept []string
		for _, line := range strings.SplitAfter(string(index), "\n") {
			if line != "" && !strings.Contains(line, id) {
				kept = append(kept, line)
			}
		}
		err = os.WriteFile(filepath.Join(dir, ".index.jsonl"), []byte(strings.Join(kept, "")), 0o600)
	default:
		t.Fatalf("no loss %q", loss)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestResponseDocumentLost: a response's document is a cache written
// without a sync, so a power cut after the reply may lose it, leave it
// empty, or lose it with its index line. The reply's transcript line
// carries the response (stampField), so GET answers what it answered
// before, previous_response_id continues from it in its session, and fsck
// --repair (RebuildResponses) writes it again; streamed or not.
func TestResponseDocumentLost(t *testing.T) {
	for _, loss := range []string{"missing", "empty", "unindexed"} {
		for _, stream := range []bool{false, true} {
			for _, reader := range []string{"get", "previous", "fsck"} {
				t.Run(fmt.Sprintf("%s/stream=%v/%s", loss, stream, reader), func(t *testing.T) {
					t.Parallel()
					e := newTestEnv(t, nil)
					resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "hello", "instructions": "be brief"}, nil)
					mustStatus(t, resp, body, 200)
					sid := resp.Header.Get(SessionHeader)
					first := decode[respObj](t, body).ID
					resp, body = e.do("POST", "/v1/responses", map[string]any{
						"input": "again", "previous_response_id": first, "stream": stream, "temperature": 0.5,
						"tools": []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}},
					}, nil)
					mustStatus(t, resp, body, 200)
					id := responseID(t, body, stream)
					delivered(t, e, sid)
					resp, want := e.do("GET", "/v1/responses/"+id, nil, nil)
					mustStatus(t, resp, want, 200)

					loseResponse(t, e, id, loss)
					doc := filepath.Join(e.dir, "gateway", "responses", id+".json")
					switch reader {
					case "get":
					case "previous":
						resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "next", "previous_response_id": id}, nil)
						mustStatus(t, resp, body, 200)
						if got := resp.Header.Get(SessionHeader); got != sid {
							t.Fatalf("previous_response_id of a lost document went to session %s, want %s", got, sid)
						}
						if got := texts(messages(t, e.sessions, sid)); !strings.HasSuffix(got, "user:next | assistant:"+echoText(6, "next")) || strings.Count(got, "user:") != 3 {
							t.Fatalf("transcript %s", got)
						}
					case "fsck":
						if loss == "empty" {
							// fsck quarantines what does not parse before it rebuilds.
							if _, err := e.store.Check(true, filepath.Join(e.dir, "lost+found")); err != nil {
								t.Fatal(err)
							}
						}
						n, err := RebuildResponses(e.sessions, e.store, 0)
						if err != nil || n != 1 {
							t.Fatalf("RebuildResponses: %d, %v; want 1", n, err)
						}
						if n, err := RebuildResponses(e.sessions, e.store, 0); err != nil || n != 0 {
							t.Fatalf("RebuildResponses again: %d, %v; want 0", n, err)
						}
						if !fileExists(doc) {
							t.Fatal("fsck --repair did not write the document again")
						}
					}
					resp, got := e.do("GET", "/v1/responses/"+id, nil, nil)
					mustStatus(t, resp, got, 200)
					if !bytes.Equal(got, want) {
						t.Fatalf("GET after the document was lost:\n%s\nwant\n%s", got, want)
					}
					if !fileExists(doc) {
						t.Fatal("the document was not written again")
					}
				})
			}
		}
	}
}

// TestEvictedResponseStaysEvicted: a response evicted (beyond
// gateway.max_stored_responses) is not rebuilt from its transcript line,
// by a read or by fsck, whatever a crash left of the index (its lines
// kept, or the index lost and rebuilt from the documents); the latest
// response, lost with its index line, is.
func TestEvictedResponseStaysEvicted(t *testing.T) {
	for _, index := range []string{"kept", "lost"} {
		t.Run("index="+index, func(t *testing.T) {
			t.Parallel()
			e := newTestEnv(t, func(o *Options) { o.MaxStoredResponses = 2 })
			var ids []string
			for i := range 4 {
				resp, body := e.do("POST", "/v1/responses", map[string]any{"input": fmt.Sprint("turn ", i), "conversation": "c1"}, nil)
				mustStatus(t, resp, body, 200)
				ids = append(ids, decode[respObj](t, body).ID)
			}
			loseResponse(t, e, ids[3], "unindexed")
			if index == "lost" {
				if err := os.Remove(filepath.Join(e.dir, "gateway", "responses", ".index.jsonl")); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := RebuildResponses(e.sessions, e.store, 2); err != nil || n != 1 {
				t.Fatalf("RebuildResponses: %d, %v; want 1 (the latest)", n, err)
			}
			for _, id := range ids[:2] {
				r, b := e.do("GET", "/v1/responses/"+id, nil, nil)
				mustError(t, r, b, 404, "invalid_request_error")
				r, b = e.do("POST", "/v1/responses", map[string]any{"input": "x", "previous_response_id": id}, nil)
				mustError(t, r, b, 404, "invalid_request_error")
			}
			for _, id := range ids[2:] {
				r, b := e.do("GET", "/v1/responses/"+id, nil, nil)
				mustStatus(t, r, b, 200)
			}
			if n, _ := e.store.StoredResponseCount(); n != 2 {
				t.Fatalf("%d responses stored, want 2", n)
			}
		})
	}
}

// TestDeletedSessionResponseStaysDeleted: the responses of a deleted
// session answer 404, and a crash that lost a document and a rebuild
// (a read, fsck --repair) bring none back: the transcript that carried
// them is gone.
func TestDeletedSessionResponseStaysDeleted(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "hello"}, nil)
	mustStatus(t, resp, body, 200)
	sid, id := resp.Header.Get(SessionHeader), decode[respObj](t, body).ID
	delivered(t, e, sid)
	if _, err := e.sessions.End(sid, "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sessions.Delete(sid, false); err != nil {
		t.Fatal(err)
	}
	loseResponse(t, e, id, "unindexed")
	if n, err := RebuildResponses(e.sessions, e.store, 0); err != nil || n != 0 {
		t.Fatalf("RebuildResponses: %d, %v; want 0", n, err)
	}
	r, b := e.do("GET", "/v1/responses/"+id, nil, nil)
	mustError(t, r, b, 404, "invalid_request_error")
	r, b = e.do("POST", "/v1/responses", map[string]any{"input": "x", "previous_response_id": id}, nil)
	mustError(t, r, b, 404, "invalid_request_error")
	if fileExists(filepath.Join(e.dir, "gateway", "responses", id+".json")) {
		t.Fatal("the document of a deleted session's response was written again")
	}
}

// TestProcessResponseDocumentLostAfterKill: the real binary, killed (-9)
// after it answered a response, with the response's document lost (what
// a power cut may do to a file written without a sync): started again, it
// answers GET and previous_response_id from the transcript, and `hermes
// fsck --repair` writes the document again and says so.
func TestProcessResponseDocumentLostAfterKill(t *testing.T) {
	home := t.TempDir()
	_, store := profileStores(home)
	g := startGateway(t, home)
	resp, body := g.post("/v1/responses", map[string]any{"input": "hello"}, nil)
	mustStatus(t, resp, body, 200)
	sid, id := resp.Header.Get(SessionHeader), decode[respObj](t, body).ID
	resp, want := doRequest(t, g.url, "GET", "/v1/responses/"+id, nil, nil)
	mustStatus(t, resp, want, 200)
	g.stop(syscall.SIGKILL)
	doc := filepath.Join(store.Dir, "responses", id+".json")
	if err := os.Remove(doc); err != nil {
		t.Fatal(err)
	}

	fsck := exec.Command(hermesBinary(t), "--home", home, "fsck", "--repair")
	fsck.Env = cleanEnv()
	out, err := fsck.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "repaired: "+filepath.Join(store.Dir, "responses")+": response documents written from the transcripts: 1") {
		t.Fatalf("fsck --repair: %v\n%s", err, out)
	}
	if err := os.Remove(doc); err != nil {
		t.Fatalf("fsck --repair wrote no document: %v", err)
	}

	g = startGateway(t, home)
	resp, got := doRequest(t, g.url, "GET", "/v1/responses/"+id, nil, nil)
	mustStatus(t, resp, got, 200)
	if !bytes.Equal(got, want) {
		t.Fatalf("GET after the kill:\n%s\nwant\n%s", got, want)
	}
	resp, body = g.post("/v1/responses", map[string]any{"input": "again", "previous_response_id": id}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("previous_response_id went to session %s, want %s", got, sid)
	}
}

// TestPreviousResponseRetryAfterSuspension: a turn chained by
// previous_response_id whose session was suspended (a third interrupted
// restart) goes on in a successor; a retry of that turn (the same input
// and previous_response_id: a client's after a kill) goes on in that same
// successor, without storing its input again, and never in a new session
// at each retry, which would run the turn again each time.
func TestPreviousResponseRetryAfterSuspension(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	var calls atomic.Int64
	e := newTestEnv(t, func(o *Options) {
		o.Provider = &funcProvider{name: "p", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			calls.Add(1)
			if fail.Load() {
				return provider.Reply{}, &provider.Error{Provider: "p", Message: "p: upstream down"}
			}
			return assistant("answer"), nil
		}}
	})
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "hello"}, nil)
	mustStatus(t, resp, body, 200)
	sid, prev := resp.Header.Get(SessionHeader), decode[respObj](t, body).ID
	delivered(t, e, sid)
	if _, err := e.sessions.MarkInterrupted(sid, "restart_interrupted", 1); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	req := map[string]any{"input": "again", "previous_response_id": prev}
	var successors []string
	for range 3 {
		resp, body := e.do("POST", "/v1/responses", req, nil)
		mustStatus(t, resp, body, 502)
		successors = append(successors, resp.Header.Get(SessionHeader))
	}
	fail.Store(false)
	resp, body = e.do("POST", "/v1/responses", req, nil)
	mustStatus(t, resp, body, 200)
	successors = append(successors, resp.Header.Get(SessionHeader))
	for _, s := range successors {
		if s == sid || s != successors[0] {
			t.Fatalf("the retries went to sessions %v (the suspended one: %s), want one successor", successors, sid)
		}
	}
	if got := texts(messages(t, e.sessions, successors[0])); got != "user:again | assistant:answer" {
		t.Fatalf("successor's transcript %s", got)
	}
}

// TestResponseDocumentLostToolCall: a response that ends with a call of
// the client's custom tool, its document lost: the rebuilt one gives the
// same output items (a custom_tool_call, as the request's tools, which
// the transcript line keeps, make it) and tools, and an item_reference to
// the call finds it.
func TestResponseDocumentLostToolCall(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	e := newTestEnv(t, func(o *Options) { o.Provider = u.provider() })
	tools := []any{map[string]any{"type": "custom", "name": "apply_patch", "description": "Patch files."}}
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "patch it", "tools": tools}, nil)
	mustStatus(t, resp, body, 200)
	sid, id := resp.Header.Get(SessionHeader), decode[respObj](t, body).ID
	delivered(t, e, sid)
	want := decode[map[string]json.RawMessage](t, body)
	loseResponse(t, e, id, "missing")
	resp, body = e.do("GET", "/v1/responses/"+id, nil, nil)
	mustStatus(t, resp, body, 200)
	got := decode[map[string]json.RawMessage](t, body)
	for _, field := range []string{"output", "tools", "created_at", "status"} {
		if !bytes.Equal(got[field], want[field]) {
			t.Errorf("%s after the document was lost: %s, want %s", field, got[field], want[field])
		}
	}
	loseResponse(t, e, id, "missing")
	item := outputID(t, body, false, "custom_tool_call")
	resp, body = e.do("POST", "/v1/responses", map[string]any{"tools": tools, "input": []any{
		map[string]any{"role": "user", "content": "patch it"}, map[string]any{"type": "item_reference", "id": item},
		map[string]any{"type": "custom_tool_call_output", "call_id": "call_u1", "output": "done"},
	}}, nil)
	mustStatus(t, resp, body, 200)
	if got := resp.Header.Get(SessionHeader); got != sid {
		t.Fatalf("the reference to %s went to session %s, want %s", item, got, sid)
	}
}
