package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// bound puts a write deadline on a request before anything answers it,
// for what is written without a clientWriter (refusals, /health): the
// connection's deadline is otherwise the one a previous request on it
// left, or none.
func (s *Server) bound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		next.ServeHTTP(w, r)
	})
}

// writePiece is the most a clientWriter writes to the connection under one
// deadline: a client must take that much per write timeout.
const writePiece = 32 << 10

// clientWriter is the http.ResponseWriter the API's handlers write to. A
// write never waits on the client: what a handler writes is queued, and
// sent by a goroutine of its own once the handler flushes (a stream), or
// by finish once the handler has returned (and released its locks), in
// pieces each bounded by the write timeout. So a handler that holds a
// session's locks never waits on a client that stopped reading, and such
// a client is dropped after the timeout: its write fails, which cancels
// the request's context, as when a client goes away.
//
// A handler sets its headers before its first flush: the goroutine sends
// them then.
type clientWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration

	mu      sync.Mutex
	cond    *sync.Cond // signalled by a flush and by finish
	status  int
	queue   []byte
	flushed bool // a flush asks for the queue to be sent
	closed  bool // the handler returned: send the rest and stop
	pumping bool
	err     error // of the write that failed: later writes are dropped
	done    chan struct{}
	after   []func(sent bool) // run by finish: sent is true when everything went through

	headerSent bool // used by the one goroutine that sends
}

func newClientWriter(w http.ResponseWriter, timeout time.Duration) *clientWriter {
	c := &clientWriter{w: w, rc: http.NewResponseController(w), timeout: timeout, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *clientWriter) Header() http.Header { return c.w.Header() }

func (c *clientWriter) WriteHeader(status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == 0 {
		c.status = status
	}
}

// Write queues p. It fails only after a write to the client failed.
func (c *clientWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.queue = append(c.queue, p...)
	return len(p), nil
}

// FlushError has what is queued sent, without waiting for it: the first
// flush starts the goroutine that sends. It returns the error of a write
// that failed.
func (c *clientWriter) FlushError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if !c.pumping {
		c.pumping = true
		go c.pump()
	}
	c.flushed = true
	c.cond.Signal()
	return c.err
}

// SetReadDeadline is the connection's: fail ends the reading of a
// request through it.
func (c *clientWriter) SetReadDeadline(t time.Time) error { return c.rc.SetReadDeadline(t) }

func (c *clientWriter) pump() {
	defer close(c.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for !c.flushed && !c.closed {
			c.cond.Wait()
		}
		data, status, last := c.queue, c.status, c.closed
		c.queue, c.flushed = nil, false
		c.mu.Unlock()
		err := c.send(status, data)
		c.mu.Lock()
		if err != nil {
			c.err, c.queue = err, nil
			return
		}
		if last && len(c.queue) == 0 {
			return
		}
	}
}

// afterSend has fn run once the response's send ended, after the handler
// returned, by finish: sent is true when every write went through.
func (c *clientWriter) afterSend(fn func(sent bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.after = append(c.after, fn)
}

// finish sends what the handler left queued, after it returned: by the
// goroutine if it runs (waiting for it), else here. Then it runs what
// afterSend registered, telling whether every write went through.
func (c *clientWriter) finish() {
	c.mu.Lock()
	c.closed = true
	c.cond.Signal()
	if c.pumping {
		c.mu.Unlock()
		<-c.done
	} else {
		status, data := c.status, c.queue
		c.mu.Unlock()
		if status != 0 {
			// The whole body is known: the client need not read chunks.
			c.w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			if err := c.send(status, data); err != nil {
				c.mu.Lock()
				c.err = err
				c.mu.Unlock()
			}
		}
	}
	c.mu.Lock()
	sent, fns := c.err == nil, c.after
	c.mu.Unlock()
	for _, fn := range fns {
		fn(sent)
	}
}

// send writes the status line and headers (the first time) and data, a
// piece at a time, each under a new write deadline, flushing each.
func (c *clientWriter) send(status int, data []byte) error {
	if !c.headerSent {
		c.headerSent = true
		c.w.WriteHeader(status)
	}
	for {
		if err := c.rc.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
			return err
		}
		n := min(len(data), writePiece)
		if _, err := c.w.Write(data[:n]); err != nil {
			return err
		}
		if err := c.rc.Flush(); err != nil {
			return err
		}
		if data = data[n:]; len(data) == 0 {
			return nil
		}
	}
}

// isTimeout reports whether err is a deadline of the connection that
// passed.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// limitListener accepts at most max connections open at once, and keeps
// their slots for the requests being served: when all are open, a new
// connection takes the place of one that holds a slot without a request
// being served, the one idle longest between requests, else the one that
// has been reading its request longest (headers, or a body, not all
// there yet); that one is closed. Only when every open connection
// is being served is the new one closed as soon as it is accepted,
// unanswered, rather than left waiting in the kernel's queue: a flood of
// connections (slow, idle or stalled ones) cannot take the process's file
// descriptors, nor keep a client with a whole request out, and a client
// refused learns at once that it should come back later. logf hears when
// the limit is reached and when the connections are below it again.
//
// The http.Server that serves it reports its connections' states
// (trackConns): a request is served from the moment its handler runs and
// its body has been read to the end (the handlers read it whole, in
// decodeBody), until the connection is idle again.
func limitListener(ln net.Listener, max int, logf func(string, ...any)) net.Listener {
	return &limiter{Listener: ln, max: max, logf: logf, conns: make(map[*limitedConn]struct{})}
}

// connState is where a limited connection is in its request, in the
// order in which connections give their place up: one idle costs its
// client a new connection; one reading may be a client about to send the
// rest; one serving is never closed for another.
type connState int

const (
	idle    connState = iota // between requests
	reading                  // accepted, or its request's body not all read
	serving                  // its request is being answered
)

type limiter struct {
	net.Listener
	max  int
	logf func(string, ...any)

	mu      sync.Mutex
	conns   map[*limitedConn]struct{}
	closed  int // reading or idle connections closed for new ones, since the limit was reached
	refused int // new connections refused, since the limit was reached
}

func (l *limiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l, state: reading, since: time.Now()}
		ok, victim := l.take(lc)
		if victim != nil {
			victim.Conn.Close()
		}
		if ok {
			return lc, nil
		}
		c.Close()
	}
}

// take counts c in, and returns the connection that gives its place up
// for it, if one must; false if none can.
func (l *limiter) take(c *limitedConn) (bool, *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) < l.max {
		if l.closed+l.refused > 0 {
			l.logf("gateway: below gateway.max_connections again, after closing %d connections idle or reading a request, and refusing %d", l.closed, l.refused)
			l.closed, l.refused = 0, 0
		}
		l.conns[c] = struct{}{}
		return true, nil
	}
	if l.closed+l.refused == 0 {
		l.logf("gateway: %d connections open (gateway.max_connections): a new one takes the place of one idle or reading its request, else is refused", l.max)
	}
	var victim *limitedConn
	for o := range l.conns {
		if o.state != serving && (victim == nil || o.state < victim.state || o.state == victim.state && o.since.Before(victim.since)) {
			victim = o
		}
	}
	if victim == nil {
		l.refused++
		return false, nil
	}
	delete(l.conns, victim)
	l.closed++
	l.conns[c] = struct{}{}
	return true, victim
}

func (l *limiter) set(c *limitedConn, state connState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.state != state {
		c.state, c.since = state, time.Now()
	}
}

type limitedConn struct {
	net.Conn
	l *limiter

	state connState // under l.mu
	since time.Time // when it entered state
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return err
}

// connKey is the context key of a request's connection.
type connKey struct{}

// trackConns has hs report its connections' states to the limiter whose
// listener it serves: idle between requests, serving once a request's
// body has been read. A connection of another listener is left alone.
func trackConns(hs *http.Server) {
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	hs.ConnState = func(c net.Conn, state http.ConnState) {
		if lc, ok := c.(*limitedConn); ok && state == http.StateIdle {
			lc.l.set(lc, idle)
		}
	}
	next := hs.Handler
	hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
			if r.Body == nil || r.Body == http.NoBody {
				lc.l.set(lc, serving)
			} else {
				lc.l.set(lc, reading)
				r.Body = &bodyRead{ReadCloser: r.Body, c: lc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bodyRead marks its connection serving once the body has been read to
// its end (or failed, after which the request is answered and the
// connection closed).
type bodyRead struct {
	io.ReadCloser
	c *limitedConn
}

func (b *bodyRead) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.c.l.set(b.c, serving)
	}
	return n, err
}
