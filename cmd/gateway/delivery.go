package gateway

import (
	"context"
	"slices"
	"sync"
)

// deliveries are the replies being sent: a session's entry is made, under
// the session's lock, by the handler that stored the reply (whenDelivered)
// and closed once the send ended, after the delivered record was written
// when it went through. Whether a stored reply reached its client is
// decided by that record only after waiting for the session's sends in
// flight (undelivered): between a reply's last byte and its record, another
// request that repeats the turn would otherwise take the reply for one
// never delivered, and be handed another client's answer.
type deliveries struct {
	mu sync.Mutex
	m  map[string][]chan struct{}
}

// begin records a send of a reply of session sid; done ends it.
func (d *deliveries) begin(sid string) (done func()) {
	ch := make(chan struct{})
	d.mu.Lock()
	if d.m == nil {
		d.m = map[string][]chan struct{}{}
	}
	d.m[sid] = append(d.m[sid], ch)
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		left := slices.DeleteFunc(d.m[sid], func(c chan struct{}) bool { return c == ch })
		if len(left) == 0 {
			delete(d.m, sid)
		} else {
			d.m[sid] = left
		}
		d.mu.Unlock()
		close(ch)
	}
}

// wait returns once the sends of session sid that began before it was
// called have ended, or with ctx's error. A send is bounded by the
// gateway's write timeout for each piece: a client that stops reading is
// dropped, which ends it.
func (d *deliveries) wait(ctx context.Context, sid string) error {
	d.mu.Lock()
	pending := slices.Clone(d.m[sid])
	d.mu.Unlock()
	for _, ch := range pending {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
