package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/hermes/hermes/fsstore"
)

// Stats summarizes a profile's sessions.
type Stats struct {
	Sessions int64            `json:"sessions"`
	ByState  map[string]int64 `json:"by_state"`
	BySource map[string]int64 `json:"by_source"`
	Messages int64            `json:"messages"`
	Bytes    int64            `json:"bytes"`
}

// Stats counts sessions by state and source, their messages, and the
// bytes of their transcripts. It reads the activity catalog, not the
// documents: every write to a session appends a catalog line that carries
// the session's state, source, message count and transcript size as of
// that write, and a removal appends one that says so, so the last line of
// each session holds its answer. Its cost is the catalog's size, one
// sequential read, instead of an open of every document and transcript.
// A session whose last line predates these fields (written by an older
// hermes) is read from its document and transcript. The catalog is a
// cache: `fsck --repair` rebuilds it from the documents when it lacks a
// session.
func (s *Store) Stats() (Stats, error) {
	st := Stats{ByState: map[string]int64{}, BySource: map[string]int64{}}
	f, size, err := s.openCatalog()
	if f == nil || err != nil {
		return st, err
	}
	defer f.Close()
	last := map[string]catalogEntry{}
	torn, err := fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		e, ok := parseCatalogLine(line)
		if !ok && json.Unmarshal(line, &e) != nil {
			return nil
		}
		if e.SessionID != "" {
			last[e.SessionID] = e
		}
		return nil
	})
	if torn != nil {
		s.Warn(torn.String())
	}
	if err != nil {
		return st, err
	}
	for id, e := range last {
		switch {
		case e.Removed:
			continue
		case e.State == "":
			if fsstore.CheckID("session id", id) != nil {
				continue
			}
			sess, err := s.readSession(id, false)
			if errors.Is(err, fsstore.ErrNotFound) {
				continue
			}
			if err != nil {
				return st, err
			}
			now := s.Now()
			e = s.entryOf(&sess, now, now)
		}
		st.Sessions++
		st.ByState[e.State]++
		st.BySource[e.Source]++
		st.Messages += e.MessageCount
		st.Bytes += e.Bytes
	}
	return st, nil
}

// parseCatalogLine reads a catalog line as catalogEntry's encoding writes
// it (its fields in order, each optional one absent when empty) without
// the cost of encoding/json, which would be most of Stats. A line it
// does not recognize, or with an escape in a string, is false: the caller
// parses it with encoding/json.
func parseCatalogLine(line []byte) (catalogEntry, bool) {
	var e catalogEntry
	rest, ok := bytes.CutPrefix(line, []byte(`{"session_id":`))
	if !ok {
		return e, false
	}
	if e.SessionID, rest, ok = cutPlainString(rest); !ok {
		return e, false
	}
	var at string
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"at":`)); !ok {
		return e, false
	}
	if at, rest, ok = cutPlainString(rest); !ok {
		return e, false
	}
	e.At = fsstore.Time(at)
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"state":`)); ok {
		if e.State, rest, ok = cutPlainString(rest); !ok {
			return e, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"source":`)); ok {
		if e.Source, rest, ok = cutPlainString(rest); !ok {
			return e, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"message_count":`)); ok {
		if e.MessageCount, rest, ok = cutInt(rest); !ok {
			return e, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"bytes":`)); ok {
		if e.Bytes, rest, ok = cutInt(rest); !ok {
			return e, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"removed":true`)); ok {
		e.Removed = true
	}
	return e, string(rest) == "}"
}

// cutPlainString cuts a JSON string without escapes from the front of b.
func cutPlainString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 || bytes.IndexByte(b[1:1+end], '\\') >= 0 {
		return "", nil, false
	}
	return string(b[1 : 1+end]), b[2+end:], true
}

// cutInt cuts a non-negative JSON integer from the front of b.
func cutInt(b []byte) (int64, []byte, bool) {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	v, err := strconv.ParseInt(string(b[:n]), 10, 64)
	return v, b[n:], err == nil
}
