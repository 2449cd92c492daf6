package gateway

import (
	"context"
	"time"
)

// DefaultIdleEnd is how long a gateway session may go without a request
// before the running gateway ends it (gateway.idle_end).
const DefaultIdleEnd = 24 * time.Hour

// endIdle is the end reason of a session the gateway ended for want of
// requests; the next request to it reopens it (admit).
const endIdle = "idle"

// idleSource is the source of the sessions the gateway ends when idle:
// its own.
const idleSource = "gateway"

// EndIdle ends the gateway's active sessions whose last activity is older
// than IdleEnd, with reason idle, so that prune can remove them in time;
// the conversation goes on in the same session at its next request, which
// reopens it. A session a request holds is left for the next sweep. after
// is the cutoff of the previous sweep (zero for the first): sessions last
// active before it were examined then (Store.Idle). It returns the cutoff
// of this sweep and the sessions it ended.
func (s *Server) EndIdle(after time.Time) (time.Time, []string, error) {
	cutoff := s.now().Add(-s.opts.IdleEnd)
	idle, err := s.opts.Sessions.Idle(idleSource, cutoff, after)
	if err != nil {
		return after, nil, err
	}
	var ended []string
	for _, sess := range idle {
		unlock, ok := s.sessions.tryLock(sess.ID)
		if !ok {
			continue
		}
		done, err := s.opts.Sessions.EndIdle(sess.ID, idleSource, cutoff, endIdle)
		unlock()
		if err != nil {
			return after, ended, err
		}
		if done {
			ended = append(ended, sess.ID)
			s.engine.SessionEnd(context.Background(), s.opts.inCwd(sess), endIdle)
		}
	}
	return cutoff, ended, nil
}

// idleMargin is how far before the previous sweep's cutoff a sweep reads
// the catalog: writers' clocks and the order of their catalog lines may
// differ by that much.
const idleMargin = time.Minute

// endIdleEvery sweeps for idle sessions until ctx ends: every tenth of
// IdleEnd, at most every 10 minutes, so that a session ends at most a
// tenth of IdleEnd late.
func (s *Server) endIdleEvery(ctx context.Context) {
	every := min(max(s.opts.IdleEnd/10, 10*time.Millisecond), 10*time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	var after time.Time
	for {
		cutoff, ended, err := s.EndIdle(after)
		if err != nil {
			s.opts.Logf("gateway: ending idle sessions: %v", err)
		} else {
			after = cutoff.Add(-idleMargin)
		}
		for _, id := range ended {
			s.opts.Logf("session %s had no request for %s: ended (idle); its next request reopens it", id, s.opts.IdleEnd)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
