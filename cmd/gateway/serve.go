package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
)

// ServeOptions set up one run of the gateway.
type ServeOptions struct {
	Options
	Addr         string
	DrainTimeout time.Duration
	// MaxConnections bounds the connections open at once (0:
	// DefaultMaxConnections); one more is refused (limitListener).
	MaxConnections int
	// Signals delivers SIGTERM or SIGINT: stop accepting and drain. A second
	// signal during the drain ends it at once, as a timeout would.
	Signals <-chan os.Signal
	Stderr  io.Writer
	Version string
	// Describe is printed after the address in the start line (profile,
	// provider).
	Describe string
}

// httpServer is the http.Server that serves s: a request's headers must
// arrive within the header timeout, and with its body within the read
// timeout. Its connections' states go to the limiter of its listener
// (trackConns), if it has one. The read deadline ends when
// the body has been read (net/http clears it to watch for the client
// going away), so it never cancels a turn; a body nobody reads stays
// under it, so a client that sends headers and no body holds nothing
// past it. Writes have their deadlines per write (bound, clientWriter):
// WriteTimeout would bound the whole response, a stream included.
func (s *Server) httpServer(errorLog io.Writer) *http.Server {
	hs := &http.Server{
		Handler:           s.Handler(),
		BaseContext:       func(net.Listener) context.Context { return s.BaseContext() },
		ReadHeaderTimeout: min(s.opts.HeaderTimeout, s.opts.ReadTimeout),
		ReadTimeout:       s.opts.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(errorLog, "hermes: gateway: ", 0),
	}
	trackConns(hs)
	return hs
}

// listenHost is the host of a listen address, as ParseAllowedHosts
// returns it: a gateway told to listen on a name answers to that name.
// An address for every interface (":8642") has none.
func listenHost(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	named, err := ParseAllowedHosts([]string{host})
	if err != nil {
		return nil
	}
	return named
}

// serveLockWait is how long a starting gateway waits for the serve lock:
// long enough to outlast a status probe, which holds it for an instant.
const serveLockWait = time.Second

// IsLoopback reports whether addr (host:port) listens on loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve runs the gateway until a signal stops it: it takes the serve lock
// (one gateway per profile), listens, recovers the sessions the last run
// interrupted if it left no clean-shutdown marker, records the run in
// state.json, serves, and on a signal drains. A drain that finishes writes
// the clean-shutdown marker; one that times out marks the sessions with
// turns in flight resume_pending (restart_timeout for SIGTERM,
// shutdown_timeout for SIGINT) and writes no marker.
func Serve(o ServeOptions) error {
	st := o.Store
	unlock, err := st.LockServe(serveLockWait)
	var lockErr *fsstore.LockTimeoutError
	if errors.As(err, &lockErr) {
		msg := "a gateway already runs on this profile"
		if prev, ok, _ := st.ReadState(); ok && prev.StoppedAt == "" {
			msg += fmt.Sprintf(" (%s, %s, since %s)", prev.Process(), prev.Addr, prev.StartedAt)
		}
		return fsstore.Refusedf("%s; stop it first (it holds %s)", msg, st.ServeLockPath())
	}
	if err != nil {
		return err
	}
	defer unlock()

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	defer ln.Close()

	o.AllowedHosts = append(o.AllowedHosts, listenHost(o.Addr)...)
	srv := New(o.Options)
	prev, hadPrev, err := st.ReadState()
	if err != nil {
		// Quarantined: the last run is unknown, so it is taken as one that
		// did not stop cleanly.
		fmt.Fprintf(o.Stderr, "hermes: warning: %v\n", err)
		hadPrev = true
	}
	clean, err := st.CleanShutdown()
	if err != nil {
		return err
	}
	if hadPrev && !clean {
		marked, err := srv.Recover(prev)
		if err != nil {
			return fmt.Errorf("gateway: recovering interrupted sessions: %w", err)
		}
		for _, sess := range marked {
			fmt.Fprintf(o.Stderr, "hermes: session %s was active when the last run stopped uncleanly: now %s (interrupted %d in a row)\n",
				sess.ID, sess.State, sess.InterruptCount)
		}
		// A conversation's first mapping is written without a sync: those
		// the last run made are brought level with their sessions, and
		// made durable, before a request reads them.
		prevStart, err := prev.StartedAt.Instant()
		if err != nil {
			prevStart = time.Unix(0, 0) // its start unknown: every one
		}
		if n, err := LevelConversations(o.Sessions, st, prevStart); err != nil {
			return fmt.Errorf("gateway: levelling conversations with their sessions: %w", err)
		} else if n > 0 {
			fmt.Fprintf(o.Stderr, "hermes: conversation mappings written again from their sessions: %d\n", n)
		}
	}
	if _, err := st.PruneKeys(srv.now().Add(-KeyLifetime)); err != nil {
		fmt.Fprintf(o.Stderr, "hermes: warning: pruning old idempotency keys: %v\n", err)
	}
	// From here on, a crash of this run must look like one.
	if err := st.SetCleanShutdown(false, time.Time{}); err != nil {
		return err
	}
	state := gatewaystate.State{
		Host:      fsstore.ThisHost(),
		PID:       os.Getpid(),
		Addr:      ln.Addr().String(),
		StartedAt: fsstore.TimeOf(srv.now()),
		Version:   o.Version,
	}
	if err := st.WriteState(state); err != nil {
		return err
	}

	hs := srv.httpServer(o.Stderr)
	served := make(chan error, 1)
	maxConns := o.MaxConnections
	if maxConns <= 0 {
		maxConns = DefaultMaxConnections
	}
	go func() { served <- hs.Serve(limitListener(ln, maxConns, srv.opts.Logf)) }()
	idleCtx, stopIdle := context.WithCancel(context.Background())
	defer stopIdle()
	go srv.endIdleEvery(idleCtx)
	fmt.Fprintf(o.Stderr, "hermes: gateway serving on http://%s%s\n", ln.Addr(), o.Describe)

	var sig os.Signal
	select {
	case err := <-served:
		return fmt.Errorf("gateway: %w", err)
	case sig = <-o.Signals:
	}
	reason := "shutdown_timeout"
	if sig == syscall.SIGTERM {
		reason = "restart_timeout"
	}
	fmt.Fprintf(o.Stderr, "hermes: %v: draining (at most %v)\n", sig, o.DrainTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	go func() {
		select {
		case <-o.Signals:
			cancel()
		case <-ctx.Done():
		}
	}()
	err = hs.Shutdown(ctx)
	state.StoppedAt = fsstore.TimeOf(srv.now())
	if err == nil {
		if err := st.WriteState(state); err != nil {
			return err
		}
		// The mappings this run wrote without a sync are durable before
		// the run says it stopped cleanly (LevelConversations).
		if err := st.SyncConversations(); err != nil {
			return err
		}
		if err := st.SetCleanShutdown(true, srv.now()); err != nil {
			return err
		}
		fmt.Fprintln(o.Stderr, "hermes: gateway stopped; every turn finished")
		return nil
	}
	ids, markErr := srv.Abandon(reason, 2*time.Second)
	hs.Close()
	state.StoppedAt = fsstore.TimeOf(srv.now())
	state.DrainTimedOut = true
	state.InterruptedSessions = ids
	if err := st.WriteState(state); err != nil {
		return errors.Join(markErr, err)
	}
	fmt.Fprintf(o.Stderr, "hermes: drain timed out after %v: %d session(s) with a turn in flight marked resume_pending (%s): %v\n", o.DrainTimeout, len(ids), reason, ids)
	return markErr
}
