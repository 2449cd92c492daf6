package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/hermes/hermes/fsstore/gatewaystate"
)

// A key's record written by a build from before the gateway read the
// client's tools and parameters holds the digest of the fields that build
// read (chat: model, messages, stream, stream_options; Responses: model,
// input, instructions, previous_response_id, conversation, store,
// stream). The client's retry after an upgrade is the retry it is: it gets
// the key's stored reply and nothing runs. Another request with that key
// is still refused.
func TestKeyRecordOfAnOlderBuild(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, path  string
		body, other map[string]any
		// wire is the request as the older build encoded it for its digest.
		wire string
	}{
		{"chat", "/v1/chat/completions",
			map[string]any{"messages": []any{userMsg("one")}, "temperature": 0.5},
			map[string]any{"messages": []any{userMsg("other")}},
			`{"model":"","messages":[{"content":"one","role":"user"}],"stream":false,"stream_options":null}`},
		{"responses", "/v1/responses",
			map[string]any{"input": "one", "store": false, "tools": []any{map[string]any{"type": "function", "name": "get"}}},
			map[string]any{"input": "other", "store": false},
			`{"model":"","input":"one","instructions":null,"previous_response_id":null,"conversation":null,"store":false,"stream":false}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			e := newTestEnv(t, countingEcho(&calls))
			resp, body := e.do("POST", c.path, c.body, nil)
			mustStatus(t, resp, body, 200)
			sid := resp.Header.Get(SessionHeader)

			key := "older-" + c.name
			sum := sha256.Sum256([]byte(c.path + "\n\n" + c.wire))
			old, _ := json.Marshal(map[string]any{
				"key_sha256": gatewaystate.KeyDigest(key), "request_sha256": hex.EncodeToString(sum[:]),
				"session_id": sid, "from": 0, "to": 2, "created_at": "2026-11-20T10:00:00.000000Z",
			})
			dir := filepath.Join(e.store.Dir, "keys")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, gatewaystate.KeyDigest(key)+".json"), old, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.GetKey(key); err != nil {
				t.Fatalf("the record as the older build wrote it is not where the store reads it: %v", err)
			}

			hdr := map[string]string{IdempotencyHeader: key}
			resp, retried := e.do("POST", c.path, c.body, hdr)
			mustStatus(t, resp, retried, 200)
			if got := resp.Header.Get(SessionHeader); got != sid || calls.Load() != 1 {
				t.Fatalf("the retry went to %s (want %s), %d model calls (want 1): %s", got, sid, calls.Load(), retried)
			}
			if n := len(messages(t, e.sessions, sid)); n != 2 {
				t.Fatalf("the session holds %d messages after the retry, want 2", n)
			}

			resp, body = e.do("POST", c.path, c.other, hdr)
			if e := mustError(t, resp, body, 400, "invalid_request_error"); e.Error.Code == nil || *e.Error.Code != "idempotency_key_reused" {
				t.Fatalf("another request with the key: %s", body)
			}
		})
	}
}
