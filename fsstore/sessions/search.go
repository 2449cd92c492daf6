package sessions

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/hermes/hermes/fsstore"
)

// Hit is one message that matched a search.
type Hit struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title"`
	Seq       int64  `json:"seq"`
	Role      string `json:"role"`
	Snippet   string `json:"snippet"`
}

// snippetRadius is how many characters of context a snippet keeps on each
// side of the match.
const snippetRadius = 40

// Search finds messages whose text content contains query, ignoring case.
// Transcripts are scanned in parallel, one per worker; a line is decoded
// only when its raw bytes could contain the query. Hits come newest session
// first, in transcript order within a session; limit <= 0 means all.
func (s *Store) Search(query string, limit int) ([]Hit, error) {
	if query == "" {
		return nil, fsstore.Invalidf("empty search query")
	}
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	m := newFoldMatcher(query)
	results := make([][]Hit, len(ids))
	errs := make([]error, len(ids))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i], errs[i] = s.searchOne(ids[i], m, limit)
			}
		}()
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	var hits []Hit
	for i, r := range results {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if len(r) == 0 {
			continue
		}
		if sess, err := s.readDocument(ids[i], false); err == nil {
			for j := range r {
				r[j].Title = sess.Title
			}
		}
		hits = append(hits, r...)
		if limit > 0 && len(hits) >= limit {
			return hits[:limit], nil
		}
	}
	return hits, nil
}

func (s *Store) searchOne(id string, m *foldMatcher, limit int) ([]Hit, error) {
	f, err := os.Open(s.logPath(id))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var hits []Hit
	_, err = fsstore.ScanLines(f, fi.Size(), func(line []byte, _ int64) error {
		if limit > 0 && len(hits) >= limit {
			return nil
		}
		if m.raw && !m.match(line) && !mayHideText(line) {
			return nil
		}
		msg, err := ParseMessage(line)
		if err != nil {
			return nil // fsck reports damage; search shows what it can read
		}
		text := msg.Text()
		if at := m.index(text); at >= 0 {
			hits = append(hits, Hit{SessionID: id, Seq: msg.Seq, Role: msg.Role, Snippet: snippet(text, at, len(m.query))})
		}
		return nil
	})
	return hits, err
}

// mayHideText reports whether a raw line has JSON escapes that can spell
// a query's characters: \uXXXX (Python's json.dumps writes all non-ASCII
// so, Go's json.Marshal writes <, > and & so) and \/. The raw pre-filter
// cannot see through them, so such a line is decoded.
func mayHideText(line []byte) bool {
	return bytes.Contains(line, []byte(`\u`)) || bytes.Contains(line, []byte(`\/`))
}

func snippet(text string, at, n int) string {
	start, end := at, at+n
	for i := 0; i < snippetRadius && start > 0; i++ {
		_, size := utf8.DecodeLastRuneInString(text[:start])
		start -= size
	}
	for i := 0; i < snippetRadius && end < len(text); i++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	out := strings.Join(strings.Fields(text[start:end]), " ")
	if start > 0 {
		out = "…" + out
	}
	if end < len(text) {
		out += "…"
	}
	return out
}

// foldMatcher finds a query in text ignoring case. For queries that JSON
// writes unescaped (no quotes, backslashes or control characters), it also
// pre-filters raw transcript lines, so most lines are never decoded.
type foldMatcher struct {
	query string
	lower string
	raw   bool
	ascii bool
	first [2]byte // the query's first byte in both cases, for ASCII queries
}

func newFoldMatcher(q string) *foldMatcher {
	m := &foldMatcher{query: q, lower: strings.ToLower(q), raw: true, ascii: true}
	for _, r := range q {
		if r >= utf8.RuneSelf {
			m.ascii = false
		}
		if r < 0x20 || r == '"' || r == '\\' || r == 0x2028 || r == 0x2029 {
			m.raw = false
		}
	}
	if m.ascii {
		m.first = [2]byte{byte(unicode.ToLower(rune(q[0]))), byte(unicode.ToUpper(rune(q[0])))}
	}
	return m
}

// match reports whether line may contain the query.
func (m *foldMatcher) match(line []byte) bool {
	if !m.ascii {
		return bytes.Contains(bytes.ToLower(line), []byte(m.lower))
	}
	n := len(m.query)
	for i := 0; i+n <= len(line); {
		j := indexEither(line[i:len(line)-n+1], m.first[0], m.first[1])
		if j < 0 {
			return false
		}
		i += j
		if asciiEqualFold(line[i:i+n], m.query) {
			return true
		}
		i++
	}
	return false
}

func indexEither(b []byte, x, y byte) int {
	if x == y {
		return bytes.IndexByte(b, x)
	}
	i, j := bytes.IndexByte(b, x), bytes.IndexByte(b, y)
	if i < 0 || (j >= 0 && j < i) {
		return j
	}
	return i
}

func asciiEqualFold(b []byte, s string) bool {
	for i := 0; i < len(s); i++ {
		c, d := b[i], s[i]
		if c|0x20 != d|0x20 || (c|0x20) < 'a' || (c|0x20) > 'z' {
			if c != d {
				return false
			}
		}
	}
	return true
}

// index returns the byte offset of the query in text, ignoring case, or -1.
func (m *foldMatcher) index(text string) int {
	if m.ascii {
		for i := 0; i+len(m.query) <= len(text); i++ {
			if asciiEqualFold([]byte(text[i:i+len(m.query)]), m.query) {
				return i
			}
		}
		return -1
	}
	lower := strings.ToLower(text)
	at := strings.Index(lower, m.lower)
	if at < 0 || len(lower) == len(text) {
		return at
	}
	// Lowercasing changed byte lengths but maps rune to rune: find the
	// match's rune position in text.
	pos := 0
	for range utf8.RuneCountInString(lower[:at]) {
		_, size := utf8.DecodeRuneInString(text[pos:])
		pos += size
	}
	return pos
}
