package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowClients are n connections that each send a request's headers one
// line at a time, every gap, and never finish them; a connection the
// gateway closes is opened again at once, as a slowloris attack does.
// stop ends them.
func slowClients(t *testing.T, addr string, n int, gap time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(gap):
					}
					continue
				}
				_, err = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
				for line := 0; err == nil && ctx.Err() == nil; line++ {
					select {
					case <-ctx.Done():
					case <-time.After(gap):
						_, err = fmt.Fprintf(c, "X-Slow-%d-%d: x\r\n", i, line)
					}
				}
				c.Close()
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// Issue 27, item 6: slow clients cannot hold the connection cap. 300
// connections that dribble their headers (a line every 100 ms, never
// done) against a cap of 256: /health, each request on a new connection,
// keeps answering, and a slow connection is closed once the header
// timeout passes.
func TestSlowlorisDoesNotLockOut(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	var log logged
	e := newServedEnv(t, func(o *Options) {
		o.HeaderTimeout = time.Second
		o.Logf = log.logf
	}, DefaultMaxConnections, 0)
	addr := e.ts.Listener.Addr().String()
	stop := slowClients(t, addr, 300, 100*time.Millisecond)
	defer stop()
	deadline := time.Now().Add(60 * time.Second) // watchdog: the slow clients fill the cap soon
	for !strings.Contains(log.String(), "gateway.max_connections") {
		if time.Now().After(deadline) {
			t.Fatal("300 slow connections did not reach the limit of 256")
		}
		time.Sleep(10 * time.Millisecond)
	}

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	const probes = 50
	failed := 0
	for range probes {
		resp, err := client.Get("http://" + addr + "/health")
		if err != nil {
			t.Logf("/health: %v", err)
			failed++
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Logf("/health: %d %s", resp.StatusCode, body)
			failed++
		}
	}
	t.Logf("%d of %d /health answered under 300 slow connections", probes-failed, probes)
	if failed > 0 {
		t.Fatalf("%d of %d /health requests failed under 300 slow connections", failed, probes)
	}
}

// A connection whose headers are not all there within the header timeout
// is closed, unanswered, even when they keep coming.
func TestHeaderTimeout(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	e := newServedEnv(t, func(o *Options) { o.HeaderTimeout = 200 * time.Millisecond }, 100, 0)
	c := e.rawClient()
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	read := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-read:
				return
			case <-time.After(50 * time.Millisecond):
				fmt.Fprintf(c, "X-Slow-%d: x\r\n", i)
			}
		}
	}()
	got := readToEnd(t, c)
	close(read)
	if len(got) > 0 {
		t.Fatalf("answered %.300q", got)
	}
}
