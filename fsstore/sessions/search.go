package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/seam"
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

// Search finds messages whose text content, tool calls (a call's name and
// arguments) or tool results contain query, ignoring case. Hits come newest
// session first, in transcript order within a session; limit <= 0 means all.
//
// Its cost is the bytes it reads, not the number of sessions: one listing of
// the directory, then a fixed set of workers, each with one buffer, that
// take transcripts in turn. A transcript is read without a lock (appends
// add whole lines; the bytes after the last newline, a torn tail or an
// append in progress, are skipped), and one with nothing in it is never
// opened. The query is looked for in the raw bytes first; a line is decoded
// only when its bytes could hold it, and a session's document (for its
// title) is read only when its transcript matched. Once the sessions read
// in order hold limit hits, the others are not read.
func (s *Store) Search(query string, limit int) ([]Hit, error) {
	if query == "" {
		return nil, fsstore.Invalidf("empty search query")
	}
	d, err := os.Open(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ids, err := transcriptIDs(d)
	if err != nil {
		return nil, err
	}
	r := &searchRun{ids: ids, limit: limit, results: make([][]Hit, len(ids)), errs: make([]error, len(ids)), done: make([]atomic.Bool, len(ids))}
	r.stop.Store(int64(len(ids)))
	m := newFoldMatcher(query)
	dirfd := int(d.Fd())
	eachOnWorkers(len(ids), func() func(int) {
		w := &searcher{m: m, lineReader: newLineReader(s.Dir, dirfd)}
		return func(i int) { r.search(w, i) }
	})
	var hits []Hit
	for i, found := range r.results[:r.stop.Load()] {
		if r.errs[i] != nil {
			return nil, r.errs[i]
		}
		if len(found) == 0 {
			continue
		}
		if sess, err := s.readDocument(ids[i], false); err == nil {
			for j := range found {
				found[j].Title = sess.Title
			}
		}
		hits = append(hits, found...)
		if limit > 0 && len(hits) >= limit {
			return hits[:limit], nil
		}
	}
	return hits, nil
}

// transcriptIDs returns the ids of the sessions in dir that have both a
// document and a transcript, newest first, from one listing of names.
func transcriptIDs(d *os.File) ([]string, error) {
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	logs := make(map[string]bool, len(names)/2)
	for _, name := range names {
		if id, ok := strings.CutSuffix(name, ".jsonl"); ok {
			logs[id] = true
		}
	}
	var ids []string
	for _, name := range names {
		if id, ok := strings.CutSuffix(name, ".json"); ok && !strings.HasPrefix(name, ".") && logs[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids, nil
}

// searchRun is one search's shared state. Each worker writes only the
// slots of results and errs of the transcripts it takes. With a limit,
// the first worker to see that enough hits may have been found walks the
// finished prefix of ids (under mu) and sets stop past the transcript
// that completes the limit; the transcripts after it are not read.
type searchRun struct {
	ids     []string
	limit   int
	results [][]Hit
	errs    []error
	done    []atomic.Bool
	stop    atomic.Int64 // transcripts from this index on are not read
	found   atomic.Int64 // hits in all finished transcripts

	mu       sync.Mutex
	frontier int // the transcripts before it are finished
	prefix   int // their hits
}

func (r *searchRun) search(w *searcher, i int) {
	if int64(i) >= r.stop.Load() {
		return
	}
	r.results[i], r.errs[i] = w.transcript(r.ids[i], r.limit)
	r.done[i].Store(true)
	if r.limit > 0 && r.found.Add(int64(len(r.results[i]))) >= int64(r.limit) {
		r.advance()
	}
}

// advance moves the frontier over the finished transcripts and sets stop
// once the hits before it reach the limit.
func (r *searchRun) advance() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.frontier < len(r.ids) && r.prefix < r.limit && r.done[r.frontier].Load() {
		r.prefix += len(r.results[r.frontier])
		r.frontier++
		if r.prefix >= r.limit {
			r.stop.Store(int64(r.frontier))
		}
	}
}

// searcher searches transcripts for one worker.
type searcher struct {
	*lineReader
	m     *foldMatcher
	lower []byte // the lowered block, for a query beyond ASCII
}

// transcript returns the hits in the transcript of id, at most limit of
// them (limit <= 0: all). It reads the bytes the transcript had when it
// was looked at; lines appended after are not seen, and a last line
// without its newline is skipped.
func (w *searcher) transcript(id string, limit int) ([]Hit, error) {
	name := id + ".jsonl"
	st, err := w.stat(name, false)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil // removed since the listing
	}
	if err != nil {
		return nil, err
	}
	// A transcript that is a symlink is not followed, as everywhere.
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size == 0 {
		return nil, nil
	}
	fd, err := w.open(name, seam.OpenRead)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var hits []Hit
	_, _, err = w.each(fd, name, st.Size, func(b []byte, _ int64) bool {
		hits = w.block(id, b, hits, limit)
		return limit <= 0 || len(hits) < limit
	})
	return hits, err
}

// block appends to hits those of the complete lines in b. With a query
// JSON writes as it is, only the lines where the raw bytes hold the query
// (or an escape that could spell part of it) are decoded.
func (w *searcher) block(id string, b []byte, hits []Hit, limit int) []Hit {
	full := func() bool { return limit > 0 && len(hits) >= limit }
	if !w.m.raw || !w.m.ascii {
		if w.m.raw && !w.mayHold(b) {
			return hits
		}
		for len(b) > 0 && !full() {
			i := bytes.IndexByte(b, '\n')
			hits = w.line(id, b[:i], hits)
			b = b[i+1:]
		}
		return hits
	}
	var match [2]cursor
	var esc cursor
	for from := 0; from < len(b) && !full(); {
		at := min(w.m.next(b, from, &match), nextEscape(b, from, &esc))
		if at >= len(b) {
			break
		}
		start := bytes.LastIndexByte(b[:at], '\n') + 1
		end := at + bytes.IndexByte(b[at:], '\n')
		hits = w.line(id, b[start:end], hits)
		from = end + 1
	}
	return hits
}

// mayHold reports whether a block of lines may hold a query beyond ASCII:
// its lowered bytes hold the lowered query, or it has an escape.
func (w *searcher) mayHold(b []byte) bool {
	var esc cursor
	if nextEscape(b, 0, &esc) < len(b) {
		return true
	}
	w.lower = appendLower(w.lower[:0], b)
	return bytes.Contains(w.lower, []byte(w.m.lower))
}

// line appends the hit of one line to hits, if it has one: the first
// match in its text, else in its tool calls. A line that does not parse
// is skipped: fsck reports damage, search shows what it can read.
func (w *searcher) line(id string, line []byte, hits []Hit) []Hit {
	if w.m.raw && !w.m.ascii && !mayHideText(line) && !bytes.Contains(appendLower(w.lower[:0], line), []byte(w.m.lower)) {
		return hits
	}
	msg, ok := parseStored(line, string(line))
	if !ok {
		var err error
		if msg, err = ParseMessage(line); err != nil {
			return hits
		}
	}
	text := msg.Text()
	if at := w.m.index(text); at >= 0 {
		return append(hits, Hit{SessionID: id, Seq: msg.Seq, Role: msg.Role, Snippet: snippet(text, at, len(w.m.query))})
	}
	for _, call := range toolCallsOf(msg.ToolCalls) {
		if at, n, ok := call.match(w.m, len(w.m.query)); ok {
			text := call.text()
			return append(hits, Hit{SessionID: id, Seq: msg.Seq, Role: msg.Role, Snippet: snippet(text, at, n)})
		}
	}
	return hits
}

// toolCall is a call as search sees it: its name and its arguments as the
// model wrote them (a JSON text).
type toolCall struct{ name, args string }

// text is the call as a hit shows it: read_file({"path":"notes.md"}).
func (c toolCall) text() string { return c.name + "(" + c.args + ")" }

// match finds the query, n bytes long, in the call's name or in one of the
// values of its arguments, never in their keys: "path" is not a word of
// read_file({"path":"notes.md"}). It returns where in text() to cut the
// snippet, and how much to show.
func (c toolCall) match(m *foldMatcher, n int) (at, size int, ok bool) {
	if at := m.index(c.name); at >= 0 {
		return at, n, true
	}
	base := len(c.name) + 1
	if !json.Valid([]byte(c.args)) {
		// Not JSON: the whole of it is what the model said.
		if at := m.index(c.args); at >= 0 {
			return base + at, n, true
		}
		return 0, 0, false
	}
	found := false
	jsonValues(c.args, func(start, end int, value string) bool {
		if k := m.index(value); k >= 0 {
			if value == c.args[start:end] {
				at, size = base+start+k, n
			} else {
				// Escapes make the decoded value another length: show it all.
				at, size = base+start, end-start
			}
			found = true
		}
		return !found
	})
	return at, size, found
}

// jsonValues calls fn with the byte range and the text of each string,
// number and literal of doc, a valid JSON text, that is not an object's
// key, in order, until fn returns false. A string's text is decoded.
func jsonValues(doc string, fn func(start, end int, value string) bool) {
	var objects []bool // for each open container, whether it is an object
	key := false       // whether the next string is a key
	for i := 0; i < len(doc); {
		switch c := doc[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '{', '[':
			objects = append(objects, c == '{')
			key = c == '{'
			i++
		case '}', ']':
			objects = objects[:len(objects)-1]
			i++
		case ',':
			key = objects[len(objects)-1]
			i++
		case ':':
			key = false
			i++
		case '"':
			end := i + 1
			for doc[end] != '"' {
				if doc[end] == '\\' {
					end++
				}
				end++
			}
			end++
			if !key {
				value := doc[i+1 : end-1]
				if strings.IndexByte(value, '\\') >= 0 {
					json.Unmarshal([]byte(doc[i:end]), &value)
				}
				if !fn(i+1, end-1, value) {
					return
				}
			}
			i = end
		default:
			end := i
			for end < len(doc) && !strings.ContainsRune(" \t\n\r,]}", rune(doc[end])) {
				end++
			}
			if !fn(i, end, doc[i:end]) {
				return
			}
			i = end
		}
	}
}

// toolCallsOf returns the calls of a message's tool_calls; an argument
// string that holds JSON is taken as that JSON text.
func toolCallsOf(calls json.RawMessage) []toolCall {
	if len(calls) == 0 || calls[0] != '[' {
		return nil
	}
	var list []struct {
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if json.Unmarshal(calls, &list) != nil {
		return nil
	}
	out := make([]toolCall, 0, len(list))
	for _, c := range list {
		args := string(c.Function.Arguments)
		if len(args) > 0 && args[0] == '"' {
			json.Unmarshal(c.Function.Arguments, &args)
		} else if args == "null" {
			args = ""
		}
		out = append(out, toolCall{name: c.Function.Name, args: args})
	}
	return out
}

// appendLower appends b lowered as bytes.ToLower lowers it, without an
// allocation of its own.
func appendLower(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		i += size
	}
	return dst
}

// mayHideText reports whether a raw line has JSON escapes that can spell
// a query's characters: \uXXXX (Python's json.dumps writes all non-ASCII
// so, Go's json.Marshal writes <, > and & so) and \/. The raw pre-filter
// cannot see through them, so such a line is decoded.
func mayHideText(line []byte) bool {
	return bytes.Contains(line, []byte(`\u`)) || bytes.Contains(line, []byte(`\/`))
}

// cursor remembers where the next occurrence of a byte is in a block, so
// that a block is scanned once for it however often it is asked.
type cursor struct {
	at int // len(block) when there is none
	c  byte
}

// next returns the index of the first c in b at or after from.
func (k *cursor) next(b []byte, from int, c byte) int {
	if k.at < from || k.c != c {
		k.c = c
		if from >= len(b) {
			k.at = len(b)
		} else if i := bytes.IndexByte(b[from:], c); i >= 0 {
			k.at = from + i
		} else {
			k.at = len(b)
		}
	}
	return k.at
}

// nextEscape returns the index of the first \u or \/ in b at or after
// from, or len(b).
func nextEscape(b []byte, from int, k *cursor) int {
	for {
		at := k.next(b, from, '\\')
		if at+1 >= len(b) {
			return len(b)
		}
		if b[at+1] == 'u' || b[at+1] == '/' {
			return at
		}
		from = at + 2 // the byte after a backslash is escaped, never one
	}
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
// pre-filters raw transcript bytes, so most lines are never decoded.
type foldMatcher struct {
	query string
	lower string
	raw   bool
	ascii bool
	// For an ASCII query: the position in the query of its rarest byte,
	// and that byte in both cases. Raw bytes are searched for it (memchr),
	// and a match checked around each one found.
	rareAt int
	rare   [2]byte
}

// commonBytes are the bytes of transcripts, most common first (a rough
// English and JSON frequency); those not listed are the rarest.
const commonBytes = ` etaoinsrhldcumpfgywbvk",:.xjqz_-0123456789{}/\[]`

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
	if !m.ascii {
		return m
	}
	rank := func(c byte) int {
		if i := strings.IndexByte(commonBytes, byte(unicode.ToLower(rune(c)))); i >= 0 {
			return len(commonBytes) - i
		}
		return 0
	}
	for i := 1; i < len(q); i++ {
		if rank(q[i]) < rank(q[m.rareAt]) {
			m.rareAt = i
		}
	}
	c := rune(q[m.rareAt])
	m.rare = [2]byte{byte(unicode.ToLower(c)), byte(unicode.ToUpper(c))}
	return m
}

// next returns the index of the first raw match of an ASCII query in b at
// or after from, or len(b). k keeps where each case of the rare byte is
// next, across the calls for one block.
func (m *foldMatcher) next(b []byte, from int, k *[2]cursor) int {
	n := len(m.query)
	for i := from + m.rareAt; ; {
		at := k[0].next(b, i, m.rare[0])
		if m.rare[1] != m.rare[0] {
			at = min(at, k[1].next(b, i, m.rare[1]))
		}
		if at >= len(b) {
			return len(b)
		}
		if start := at - m.rareAt; start+n <= len(b) && asciiEqualFold(b[start:start+n], m.query) {
			return start
		}
		i = at + 1
	}
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
