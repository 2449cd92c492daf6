package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestUpstreamConnectionsKept: 16 clients whose turns the gateway runs at
// once open at most 0.05 new upstream connections a turn (issue 47): the
// provider keeps as many idle connections per host as the gateway serves,
// where Go's default kept 2 and about 0.4 of the turns opened one. The
// upstream takes a moment to answer, so that turns are in flight together.
func TestUpstreamConnectionsKept(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	const clients, turns = 16, 25
	u := &upstream{t: t}
	var opened atomic.Int64
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond)
		u.serve(w, r)
	}))
	u.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			opened.Add(1)
		}
	}
	u.srv.Start()
	t.Cleanup(u.srv.Close)
	e := newTestEnv(t, func(o *Options) { o.Provider = u.provider() })
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			var msgs []map[string]any
			for turn := range turns {
				msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("client %d, turn %d", c, turn)})
				resp, body := e.do("POST", "/v1/chat/completions", map[string]any{"messages": msgs}, nil)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("client %d, turn %d: status %d: %s", c, turn, resp.StatusCode, body)
					return
				}
				msgs = append(msgs, map[string]any{"role": "assistant", "content": chatReply(t, body, false)})
			}
		})
	}
	wg.Wait()
	if n := opened.Load(); float64(n) > 0.05*clients*turns {
		t.Errorf("%d turns opened %d upstream connections (%.2f a turn), want at most 0.05 a turn", clients*turns, n, float64(n)/(clients*turns))
	} else {
		t.Logf("%d turns opened %d upstream connections", clients*turns, n)
	}
}
