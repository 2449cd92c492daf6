package gateway

import (
	"net/http"
	"sync"
)

// sseWriter writes server-sent events, flushing each one. A write that
// fails (the client went away) stops later writes; the turn goes on, so its
// reply is still stored.
type sseWriter struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

// startSSE sends the headers of an event stream.
func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.err = s.rc.Flush()
	return s
}

// event writes one event: "event: name" (when name is set) and "data: "
// with v as JSON.
func (s *sseWriter) event(name string, v any) {
	b, err := marshal(v)
	if err != nil {
		return
	}
	s.raw(name, b)
}

func (s *sseWriter) raw(name string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	buf := make([]byte, 0, len(data)+len(name)+16)
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		s.err = err
		return
	}
	s.err = s.rc.Flush()
}
