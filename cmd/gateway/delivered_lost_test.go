package gateway

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestDeliveredRecordLost: the record of a reply's delivery is written
// without a sync, so a power cut may leave it empty (or lose its name).
// The same message again is then taken for the retry of a reply never
// delivered: it gets the stored reply once more and runs nothing (a
// stored turn is never run twice; a stored reply may be sent twice), and
// the request does not fail.
func TestDeliveredRecordLost(t *testing.T) {
	var calls atomic.Int64
	e := newTestEnv(t, countingEcho(&calls))
	req := map[string]any{"input": "hello", "conversation": "u1"}
	resp, body := e.do("POST", "/v1/responses", req, nil)
	mustStatus(t, resp, body, 200)
	sid := resp.Header.Get(SessionHeader)
	delivered(t, e, sid)
	record := filepath.Join(e.dir, "gateway", "delivered", sid+".jsonl")
	if err := os.WriteFile(record, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	resp, body = e.do("POST", "/v1/responses", req, nil)
	mustStatus(t, resp, body, 200)
	if got := decode[respObj](t, body).text(); got != echoText(1, "hello") || calls.Load() != before {
		t.Fatalf("after the record was lost: %q, %d calls; want the stored reply and none", got, calls.Load()-before)
	}
	if got := texts(messages(t, e.sessions, sid)); got != "user:hello | assistant:"+echoText(1, "hello") {
		t.Fatalf("transcript %s", got)
	}
}
