package gateway

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hermes/hermes/fsstore/sessions"
)

// TestTurnReadsTranscriptOnce: a turn of a conversation a chat client
// re-sends reads its transcript once, when the router matches the
// client's history against it; the provider is sent what that read found
// and what the turn stored before the call, not a second read of the
// file. A conversation's first turn, whose session is new, reads it not
// at all. The provider (echo) still gets the whole history: it counts
// the messages it was sent.
func TestTurnReadsTranscriptOnce(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e := newTestEnv(t, nil)
			var mu sync.Mutex
			reads := map[string]int{}
			stop := sessions.ObserveTranscriptReads(e.dir, func(id string) {
				mu.Lock()
				reads[id]++
				mu.Unlock()
			})
			t.Cleanup(stop)
			var msgs []map[string]any
			for turn := range 4 {
				msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprint("question ", turn)})
				resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": msgs, "stream": stream}, nil)
				mustStatus(t, resp, body, 200)
				reply := chatReply(t, body, stream)
				if want := fmt.Sprintf("echo: %d messages received;", len(msgs)); !strings.HasPrefix(reply, want) {
					t.Fatalf("turn %d: reply %q, want it to begin %q", turn, reply, want)
				}
				msgs = append(msgs, map[string]any{"role": "assistant", "content": reply})
				sid := resp.Header.Get(SessionHeader)
				delivered(t, e, sid)
				mu.Lock()
				n := reads[sid]
				reads[sid] = 0
				mu.Unlock()
				want := 1
				if turn == 0 {
					want = 0
				}
				if n > want {
					t.Errorf("turn %d read the transcript %d times, want at most %d", turn, n, want)
				}
			}
		})
	}
}
