package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
)

// newServedEnv is newTestEnv's server served as Serve serves it: the
// http.Server of httpServer on a listener limited to maxConns
// connections, whose accepted connections get a send buffer of sndbuf
// bytes (0: the system's), so that a client that stops reading blocks the
// server's writes after a few kilobytes. (newTestEnv's own listener stays
// unused.)
func newServedEnv(t *testing.T, mod func(*Options), maxConns, sndbuf int) *testEnv {
	t.Helper()
	e := newTestEnv(t, mod)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = e.srv.httpServer(io.Discard)
	ts.Listener = limitListener(sndbufListener{ts.Listener, sndbuf}, maxConns, e.srv.opts.Logf)
	ts.Start()
	t.Cleanup(ts.Close)
	e.ts = ts
	return e
}

type sndbufListener struct {
	net.Listener
	size int
}

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil && l.size > 0 {
		err = c.(*net.TCPConn).SetWriteBuffer(l.size)
	}
	return c, err
}

// rawClient is a TCP connection to the test server with a small receive
// buffer, on which a test writes what it likes and reads when it likes.
func (e *testEnv) rawClient() net.Conn {
	e.t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", e.ts.Listener.Addr().String())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// post writes a POST request of a JSON body on c.
func post(t *testing.T, c net.Conn, path, body string, header map[string]string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, len(body))
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
}

// readToEnd reads c until the server closes it. A read that is still
// waiting after the hang guard fails the test: the server kept the
// connection.
func readToEnd(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
	var buf bytes.Buffer
	_, err := io.Copy(&buf, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open; read so far: %.300q", buf.String())
	}
	return buf.Bytes()
}

const floodChunk = 16 << 10

// flooding streams 64 chunks of 16 KiB for an input that says "flood",
// then calls after (if set) and replies with the whole text; other inputs
// are echoed.
func flooding(after func(ctx context.Context) error) *funcProvider {
	echo, _ := provider.New(provider.Config{Name: "echo"})
	return &funcProvider{name: "flood", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
		msgs := historyOf(req.History)
		if msgs[len(msgs)-1].Text() != "flood" {
			return echo.Complete(ctx, req)
		}
		text := strings.Repeat("x", floodChunk)
		for range 64 {
			if req.Stream != nil {
				req.Stream.Write([]byte(text))
			}
		}
		if after != nil {
			if err := after(ctx); err != nil {
				return provider.Reply{}, err
			}
		}
		return assistant(strings.Repeat(text, 64)), nil
	}}
}

// A streaming client that stops reading does not hold its conversation:
// the turn goes on and is stored, and the next request on the
// conversation (or the session) is served while the stalled response is
// still waiting for its reader.
func TestStalledReaderDoesNotHoldItsConversation(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	// streamed says the flood's turn has streamed its text (its client has
	// stopped reading by then), so that the next request comes after it.
	streamed := make(chan struct{}, 1)
	e := newServedEnv(t, func(o *Options) {
		o.Provider = flooding(func(context.Context) error {
			streamed <- struct{}{}
			return nil
		})
		o.WriteTimeout = time.Hour // the stalled client is never dropped here
	}, 100, 4096)
	waitStreamed := func(t *testing.T) {
		t.Helper()
		select {
		case <-streamed:
		case <-time.After(30 * time.Second): // hang guard
			t.Fatal("the flood was not streamed")
		}
	}

	t.Run("responses", func(t *testing.T) {
		post(t, e.rawClient(), "/v1/responses", `{"input":"flood","conversation":"c","stream":true}`, nil)
		waitStreamed(t)
		resp, out := e.send("POST", "/v1/responses", "", `{"input":"next","conversation":"c"}`, map[string]string{"Content-Type": jsonType})
		mustStatus(t, resp, out, 200)
		msgs := messages(t, e.sessions, resp.Header.Get(SessionHeader))
		if len(msgs) != 4 || msgs[0].Text() != "flood" || len(msgs[1].Text()) != 64*floodChunk || msgs[2].Text() != "next" {
			t.Fatalf("transcript: %d messages", len(msgs))
		}
	})

	t.Run("chat", func(t *testing.T) {
		resp, out := e.send("POST", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Content-Type": jsonType})
		mustStatus(t, resp, out, 200)
		sid := resp.Header.Get(SessionHeader)
		hi := decode[chatResp](t, out).Choices[0].Message.Content
		history := []any{userMsg("hi"), asstMsg(hi), userMsg("flood")}
		body, _ := json.Marshal(map[string]any{"messages": history, "stream": true})
		post(t, e.rawClient(), "/v1/chat/completions", string(body), map[string]string{SessionHeader: sid})
		waitStreamed(t)
		history = append(history, asstMsg(strings.Repeat("x", 64*floodChunk)), userMsg("next"))
		body, _ = json.Marshal(map[string]any{"messages": history})
		resp, out = e.send("POST", "/v1/chat/completions", "", string(body), map[string]string{"Content-Type": jsonType, SessionHeader: sid})
		mustStatus(t, resp, out, 200)
		if got := resp.Header.Get(SessionHeader); got != sid {
			t.Fatalf("continued in %s, not %s", got, sid)
		}
		if msgs := messages(t, e.sessions, sid); len(msgs) != 6 {
			t.Fatalf("transcript: %d messages", len(msgs))
		}
	})
}

// A streaming client that stops reading is dropped after the write
// timeout: its turn is cancelled as if it had gone away (the input stays
// stored), and the conversation is served at once.
func TestStalledReaderDroppedAfterWriteTimeout(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	dropped := make(chan struct{})
	e := newServedEnv(t, func(o *Options) {
		o.Provider = flooding(func(ctx context.Context) error {
			<-ctx.Done()
			close(dropped)
			return ctx.Err()
		})
		o.WriteTimeout = 50 * time.Millisecond
	}, 100, 4096)

	c := e.rawClient()
	post(t, c, "/v1/responses", `{"input":"flood","conversation":"c","stream":true}`, nil)
	select {
	case <-dropped:
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("the stalled client was never dropped")
	}
	resp, out := e.send("POST", "/v1/responses", "", `{"input":"next","conversation":"c"}`, map[string]string{"Content-Type": jsonType})
	mustStatus(t, resp, out, 200)
	got := readToEnd(t, c)
	if bytes.Contains(got, []byte("response.completed")) || bytes.Contains(got, []byte("response.failed")) || len(got) >= 64*floodChunk {
		t.Fatalf("the stalled client got %d bytes, ending %q", len(got), got[max(0, len(got)-200):])
	}
	msgs := messages(t, e.sessions, resp.Header.Get(SessionHeader))
	if len(msgs) != 3 || msgs[0].Text() != "flood" || msgs[1].Text() != "next" || msgs[2].Role != "assistant" {
		t.Fatalf("transcript: %s", dump(msgs))
	}
}

// A client that sends headers and then never the body is answered (401
// on a keyed gateway, and every other refusal made before the body is
// read) and the connection is closed: it holds nothing.
func TestRefusedBeforeTheBody(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	e := newServedEnv(t, func(o *Options) { o.APIKey = "s3cret" }, 100, 0)
	for _, tc := range []struct {
		name, head, status string
	}{
		{"no key", "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", "401"},
		{"wrong key", "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer nope\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", "401"},
		{"foreign host", "POST /v1/responses HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", "403"},
		{"foreign origin", "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.example\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", "403"},
		{"not JSON", "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n", "415"},
		{"no route", "POST /v1/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.rawClient()
			if _, err := io.WriteString(c, tc.head); err != nil {
				t.Fatal(err)
			}
			got := readToEnd(t, c)
			if !bytes.HasPrefix(got, []byte("HTTP/1.1 "+tc.status+" ")) {
				t.Fatalf("answer %.300q", got)
			}
		})
	}
	e.noSessions()
}

// A body that trickles in slower than the read timeout is answered 408 and
// its connection closed; headers that do likewise get the connection
// closed.
func TestSlowRequestDropped(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	e := newServedEnv(t, func(o *Options) { o.ReadTimeout = 50 * time.Millisecond }, 100, 0)
	c := e.rawClient()
	io.WriteString(c, "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"input\":")
	if got := readToEnd(t, c); !bytes.HasPrefix(got, []byte("HTTP/1.1 408 ")) {
		t.Fatalf("answer %.300q", got)
	}
	c = e.rawClient()
	io.WriteString(c, "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	readToEnd(t, c)
	e.noSessions()
}

// The read timeout bounds the request, not the turn: a turn that takes
// longer than it is not cancelled.
func TestReadTimeoutDoesNotCancelTheTurn(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	cancelled := make(chan bool, 1)
	e := newServedEnv(t, func(o *Options) {
		o.ReadTimeout = 20 * time.Millisecond
		o.Provider = &funcProvider{name: "slow", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			select {
			case <-ctx.Done():
				cancelled <- true
				return provider.Reply{}, ctx.Err()
			case <-time.After(300 * time.Millisecond): // many read timeouts
				cancelled <- false
				return assistant("done"), nil
			}
		}}
	}, 100, 0)
	for _, body := range []string{`{"input":"slow"}`, `{"input":"slow","stream":true}`} {
		resp, out := e.send("POST", "/v1/responses", "", body, map[string]string{"Content-Type": jsonType})
		mustStatus(t, resp, out, 200)
		if <-cancelled {
			t.Fatalf("%s: the turn was cancelled: %s", body, out)
		}
	}
}

// At the connection limit, a new connection takes the place of one idle
// between requests (closed); when every connection is serving a request,
// the new one is refused at once (closed unanswered), not queued; once one
// closes, a new one is served.
func TestConnectionLimit(t *testing.T) {
	// Not in parallel: the time limits and connection slots it
	// tests need the package to itself.
	var log logged
	release, started := make(chan struct{}), make(chan struct{}, 2)
	e := newServedEnv(t, func(o *Options) {
		o.Logf = log.logf
		o.Provider = &funcProvider{name: "wait", fn: func(ctx context.Context, req provider.Request) (provider.Reply, error) {
			started <- struct{}{}
			select {
			case <-release:
				return assistant("done"), nil
			case <-ctx.Done():
				return provider.Reply{}, ctx.Err()
			}
		}}
	}, 2, 0)
	health := "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	served := func(c net.Conn) bool {
		if _, err := io.WriteString(c, health); err != nil {
			return false
		}
		c.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("a connection over the limit waited instead of being refused")
		}
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err == nil && resp.StatusCode == 200
	}
	a, b := e.rawClient(), e.rawClient()
	if !served(a) || !served(b) {
		t.Fatal("connections within the limit were not served")
	}
	waitIdle(t, e.ts.Listener, 2)
	if !served(e.rawClient()) {
		t.Fatal("a third connection was not served while two were idle")
	}
	if served(a) && served(b) {
		t.Fatal("neither idle connection was closed for the third")
	}
	waitIdle(t, e.ts.Listener, 2)
	if !strings.Contains(log.String(), "gateway.max_connections") {
		t.Fatalf("the log does not say the limit was reached: %s", log.String())
	}

	// Two turns in flight hold both places: the next is refused.
	c, d := e.rawClient(), e.rawClient()
	post(t, c, "/v1/responses", `{"input":"one"}`, map[string]string{"Idempotency-Key": "one"})
	post(t, d, "/v1/responses", `{"input":"two"}`, map[string]string{"Idempotency-Key": "two"})
	<-started
	<-started
	if served(e.rawClient()) {
		t.Fatal("a connection was served while the limit's were all serving turns")
	}
	close(release)
	c.Close()
	deadline := time.Now().Add(30 * time.Second) // watchdog: the server sees the close soon
	for !served(e.rawClient()) {
		if time.Now().After(deadline) {
			t.Fatal("no connection was served after one of the two closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitIdle waits until n of the connections of ln, a limitListener, are
// idle: the server marks them so once it has sent its response, which
// the client may have read before.
func waitIdle(t *testing.T, ln net.Listener, n int) {
	t.Helper()
	l := ln.(*limiter)
	deadline := time.Now().Add(30 * time.Second) // watchdog: the server marks them soon
	for {
		l.mu.Lock()
		k := 0
		for c := range l.conns {
			if c.state == idle {
				k++
			}
		}
		l.mu.Unlock()
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections idle, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A whole response (not a stream) is sent with its length.
func TestWholeResponseHasLength(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, out := e.send("POST", "/v1/responses", "", `{"input":"hi"}`, map[string]string{"Content-Type": jsonType})
	mustStatus(t, resp, out, 200)
	if resp.ContentLength != int64(len(out)) || len(resp.TransferEncoding) != 0 {
		t.Fatalf("length %d, transfer encoding %v, body of %d bytes", resp.ContentLength, resp.TransferEncoding, len(out))
	}
}
