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
	// The last line of each session, kept in memory the garbage collector
	// need not scan: an id up to idKeySize bytes (every id hermes makes,
	// and the UUIDs of imports) is its own map key, with no string made
	// for it; states and sources are numbered. Allocation and scanning
	// were most of what Stats cost.
	index := make(map[idKey]int32, size/128+1)
	longIndex := map[string]int32{}
	last := make([]tally, 0, size/128+1)
	var longIDs []string
	names := []string{""}
	numbers := map[string]uint32{"": 0}
	number := func(b []byte) uint32 {
		if n, ok := numbers[string(b)]; ok {
			return n
		}
		names = append(names, string(b))
		numbers[string(b)] = uint32(len(names) - 1)
		return uint32(len(names) - 1)
	}
	torn, err := fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		c, ok := parseCatalogLine(line)
		if !ok {
			var e catalogEntry
			if json.Unmarshal(line, &e) != nil {
				return nil
			}
			c = catalogFields{id: []byte(e.SessionID), state: []byte(e.State), source: []byte(e.Source),
				messages: e.MessageCount, bytes: e.Bytes, removed: e.Removed}
		}
		if len(c.id) == 0 {
			return nil
		}
		t := tally{state: number(c.state), source: number(c.source), messages: c.messages, bytes: c.bytes, removed: c.removed, long: -1}
		var i int32
		if len(c.id) <= idKeySize {
			t.idLen = uint8(len(c.id))
			copy(t.id[:], c.id)
			var found bool
			if i, found = index[t.id]; !found {
				i = int32(len(last))
				index[t.id] = i
				last = append(last, t)
			}
		} else {
			var found bool
			if i, found = longIndex[string(c.id)]; !found {
				i = int32(len(last))
				longIndex[string(c.id)] = i
				t.long = int32(len(longIDs))
				longIDs = append(longIDs, string(c.id))
				last = append(last, t)
			}
			t.long = last[i].long
		}
		last[i] = t
		return nil
	})
	if torn != nil {
		s.Warn(torn.String())
	}
	if err != nil {
		return st, err
	}
	for _, t := range last {
		state, source := names[t.state], names[t.source]
		messages, bytes := t.messages, t.bytes
		switch {
		case t.removed:
			continue
		case state == "":
			id := string(t.id[:t.idLen])
			if t.long >= 0 {
				id = longIDs[t.long]
			}
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
			e := s.entryOf(&sess, now, now)
			state, source, messages, bytes = e.State, e.Source, e.MessageCount, e.Bytes
		}
		st.Sessions++
		st.ByState[state]++
		st.BySource[source]++
		st.Messages += messages
		st.Bytes += bytes
	}
	return st, nil
}

// idKeySize is the longest id Stats keys by value: ids hermes makes are
// 22 bytes, a UUID 36.
const idKeySize = 40

type idKey = [idKeySize]byte

// tally is what Stats keeps of a session's last catalog line: no
// pointers, so the collector skips it. state and source number Stats's
// names; an id longer than idKeySize is longIDs[long].
type tally struct {
	id              idKey
	idLen           uint8
	state, source   uint32
	removed         bool
	long            int32
	messages, bytes int64
}

// catalogFields are what Stats reads of a catalog line, the strings as
// slices of the line.
type catalogFields struct {
	id, state, source []byte
	messages, bytes   int64
	removed           bool
}

// parseCatalogLine reads a catalog line as catalogEntry's encoding writes
// it (its fields in order, each optional one absent when empty) without
// the cost of encoding/json, which would be most of Stats. A line it
// does not recognize, or with an escape in a string, is false: the caller
// parses it with encoding/json.
func parseCatalogLine(line []byte) (c catalogFields, ok bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"session_id":`))
	if !ok {
		return c, false
	}
	if c.id, rest, ok = cutPlainString(rest); !ok {
		return c, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"at":`)); !ok {
		return c, false
	}
	if _, rest, ok = cutPlainString(rest); !ok {
		return c, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"written":`)); ok {
		if _, rest, ok = cutPlainString(rest); !ok {
			return c, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"state":`)); ok {
		if c.state, rest, ok = cutPlainString(rest); !ok {
			return c, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"source":`)); ok {
		if c.source, rest, ok = cutPlainString(rest); !ok {
			return c, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"message_count":`)); ok {
		if c.messages, rest, ok = cutInt(rest); !ok {
			return c, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"bytes":`)); ok {
		if c.bytes, rest, ok = cutInt(rest); !ok {
			return c, false
		}
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"removed":true`)); ok {
		c.removed = true
	}
	return c, string(rest) == "}"
}

// cutPlainString cuts a JSON string without escapes from the front of b,
// and returns its text as a slice of b.
func cutPlainString(b []byte) ([]byte, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 || bytes.IndexByte(b[1:1+end], '\\') >= 0 {
		return nil, nil, false
	}
	return b[1 : 1+end], b[2+end:], true
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
