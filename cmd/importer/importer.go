package importer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// The formats Parse reads. Each name is what the user passes to
// `--format` and what Detect returns.
const (
	FormatHermesJSON  = "hermes-json"  // the Python hermes agent's session snapshot session_<id>.json
	FormatHermesJSONL = "hermes-jsonl" // hermes `sessions export` JSONL: one session object a line, with "messages"
	FormatClaudeCode  = "claude-code"  // ~/.claude/projects/<dir>/<uuid>.jsonl
	FormatCodex       = "codex"        // ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl
)

// Formats lists every format Parse accepts.
var Formats = []string{FormatHermesJSON, FormatHermesJSONL, FormatClaudeCode, FormatCodex}

// Session is one conversation read from another tool, ready to be stored.
type Session struct {
	ID              string // the source's session id when it has one ("" otherwise)
	Title           string
	Source          string // "import:<format>" unless the data names a platform/source (hermes-json: platform; hermes-jsonl: source field)
	Model           string
	ParentSessionID string // the session it continues or was spawned by (a compression, a branch, a sub-agent)
	SessionKey      string
	EndReason       string    // the source's ("" when it does not say)
	CreatedAt       time.Time // zero if unknown
	UpdatedAt       time.Time // the last activity: the last message's time (zero if no time is known)
	EndedAt         time.Time // the source's (zero when it does not say)
	Cwd             string    // the working directory the source's agent ran in ("" when it does not say)
	// Meta holds what the source said of the session beyond these fields,
	// as a JSON object (nil when nothing).
	Meta     json.RawMessage
	Messages []sessions.Message // Seq left 0; TS set wherever a time is known (in fsstore.TimeLayout), else ""
	// Skipped counts the source's lines or items, by type, that hold
	// nothing a chat message keeps (Codex's event_msg, reasoning, …).
	Skipped map[string]int
	// Totals are the usage the source counts for the whole session, when
	// it keeps no per-call record (the Python agent's running totals),
	// with no id: the import counts what grew since it last counted them
	// (cmd's sessions import). nil when the source says none.
	Totals *usage.Call
}

// settleTimes gives a time to the messages without one, then takes the
// session's last activity, and its start when the source has none, from
// the messages: a session is last active at its last message, whatever
// the moment of the import. When no message has a time (a Python hermes
// snapshot), each gets the session's last activity as the source states
// it (last_updated, else ended_at, else the start); otherwise one gets the
// time of the message before it, and one before any timed message (a
// system prompt put first) the session's start, else the first time.
func (s *Session) settleTimes() {
	fallback := s.UpdatedAt
	for _, t := range []time.Time{s.EndedAt, s.CreatedAt} {
		if fallback.IsZero() {
			fallback = t
		}
	}
	var prev fsstore.Time
	timed := slices.IndexFunc(s.Messages, func(m sessions.Message) bool { return m.TS != "" })
	switch {
	case timed < 0 && !fallback.IsZero():
		prev = fsstore.TimeOf(fallback)
	case timed < 0:
	case !s.CreatedAt.IsZero():
		prev = fsstore.TimeOf(s.CreatedAt)
	default:
		prev = s.Messages[timed].TS
	}
	var latest time.Time
	for i := range s.Messages {
		m := &s.Messages[i]
		if m.TS == "" {
			m.TS = prev
		}
		prev = m.TS
		at, err := m.TS.Instant()
		if err != nil {
			continue
		}
		if s.CreatedAt.IsZero() {
			s.CreatedAt = at
		}
		if at.After(latest) {
			latest = at
		}
	}
	if !latest.IsZero() {
		s.UpdatedAt = latest
	} else {
		s.UpdatedAt = fallback
	}
}

// parseError is the one error type the package returns for bad input. It
// matches fsstore.ErrInvalid, so the command line maps it to exit code 2.
type parseError struct {
	format string
	line   int // 1-based; 0 when the error has no line
	msg    string
}

func (e *parseError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("%s: line %d: %s", e.format, e.line, e.msg)
	}
	return e.format + ": " + e.msg
}

func (e *parseError) Is(target error) bool {
	return target == fsstore.ErrInvalid || (target == ErrUnrecognized && e.format == "detect")
}

// ErrUnrecognized matches the error of an input whose format Detect cannot
// name (it also matches fsstore.ErrInvalid): a directory import skips such
// a file as not a transcript.
var ErrUnrecognized = errors.New("not a transcript of a known format")

func invalidf(format string, line int, msgFormat string, args ...any) error {
	return &parseError{format: format, line: line, msg: fmt.Sprintf(msgFormat, args...)}
}

// DetectLimit is how much of the input Parse reads before it knows what
// the input is: the format is detected (Detect) and the input checked to
// start with a JSON object from this prefix alone, so that a large file
// that is not a transcript is refused in bounded memory, without being
// read whole.
const DetectLimit = 1 << 20

// Parse parses all of r in the given format ("" = detect). Returns one or
// more sessions (hermes-jsonl may hold many).
// Malformed input -> error wrapping fsstore.ErrInvalid with a message naming
// the format and the line number when there is one. Input that does not
// start with a JSON object, or whose format cannot be detected, is refused
// after reading at most DetectLimit bytes.
func Parse(r io.Reader, format string) ([]Session, error) {
	head, err := io.ReadAll(io.LimitReader(r, DetectLimit))
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	whole := len(head) < DetectLimit
	start := bytes.TrimLeft(trimBOM(head), " \t\r\n")
	if len(start) == 0 && !whole {
		return nil, invalidf(cmp.Or(format, "detect"), 0, "no JSON object in the first %d bytes", DetectLimit)
	}
	if format == "" {
		if format, err = Detect(head); err != nil {
			return nil, err
		}
	}
	if !slices.Contains(Formats, format) {
		return nil, &parseError{format: "import", msg: fmt.Sprintf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))}
	}
	switch {
	case len(start) == 0:
		return nil, invalidf(format, 0, "empty input")
	case start[0] != '{':
		return nil, invalidf(format, lineAt(head, int64(len(head)-len(start))), "not a JSON object")
	}
	data := head
	if !whole {
		if data, err = io.ReadAll(io.MultiReader(bytes.NewReader(head), r)); err != nil {
			return nil, fmt.Errorf("read input: %w", err)
		}
	}
	if !utf8.Valid(data) {
		// JSON is UTF-8; the decoder would turn a bad byte into U+FFFD.
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			off += size
		}
		return nil, invalidf(format, lineAt(data, int64(off)), "not valid UTF-8")
	}
	// Each format keeps some values raw, which would keep such an escape
	// as sent.
	if off := fsstore.LoneSurrogate(data); off >= 0 {
		return nil, invalidf(format, lineAt(data, int64(off)), "%s is a lone surrogate escape (half of a UTF-16 pair), which is not Unicode", data[off:off+6])
	}
	var out []Session
	switch format {
	case FormatHermesJSON:
		s, err := parseHermesJSON(data)
		if err != nil {
			return nil, err
		}
		out = []Session{s}
	case FormatHermesJSONL:
		if out, err = parseHermesJSONL(data); err != nil {
			return nil, err
		}
	case FormatClaudeCode:
		s, err := parseClaudeCode(data)
		if err != nil {
			return nil, err
		}
		out = []Session{s}
	case FormatCodex:
		s, err := parseCodex(data)
		if err != nil {
			return nil, err
		}
		out = []Session{s}
	default:
		panic("unreachable: format " + format + " is in Formats but has no parser")
	}
	for i := range out {
		out[i].settleTimes()
	}
	return out, nil
}

// Detect reads the start of the data and names its format, or returns an
// error wrapping fsstore.ErrInvalid.
//
// It looks only at the top-level keys of the first JSON object (and its
// "type"), so a prefix of a large file is enough (Parse gives it the first
// DetectLimit bytes); a pretty-printed object that spans lines is a
// hermes-json snapshot, since every JSONL format puts one object on one
// line.
func Detect(data []byte) (string, error) {
	data = bytes.TrimLeft(trimBOM(data), " \t\r\n")
	if len(data) == 0 {
		return "", &parseError{format: "detect", msg: "empty input"}
	}
	switch data[0] {
	case '{':
	case '[':
		return "", &parseError{format: "detect", msg: "input is a JSON array, not a session object or JSONL transcript"}
	default:
		return "", &parseError{format: "detect", msg: "input does not start with a JSON object"}
	}
	h := readHead(data)
	has := func(k string) bool { return h.keys[k] }
	switch {
	case has("payload") && codexLineTypes[h.typ]:
		return FormatCodex, nil
	case has("session_id") && (has("messages") || has("session_start") || has("platform") || has("system_prompt")):
		return FormatHermesJSON, nil
	case h.multiline && has("messages"):
		return FormatHermesJSON, nil
	case has("messages") && !has("type"):
		return FormatHermesJSONL, nil
	case !has("type") && has("id") && (has("started_at") || has("parent_session_id")):
		// The Python agent's export puts its messages after the session's
		// row, which may fill the prefix read.
		return FormatHermesJSONL, nil
	case has("sessionId") || has("parentUuid") || has("leafUuid") || claudeEntryTypes[h.typ]:
		return FormatClaudeCode, nil
	case !has("type") && has("id") && has("timestamp"):
		// The older Codex rollout: a bare session meta line.
		return FormatCodex, nil
	case codexItemTypes[h.typ] || has("record_type"):
		return FormatCodex, nil
	}
	return "", &parseError{format: "detect", msg: fmt.Sprintf("unrecognized format (want one of %s)", strings.Join(Formats, ", "))}
}

var (
	codexLineTypes   = map[string]bool{"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true}
	codexItemTypes   = map[string]bool{"message": true, "function_call": true, "function_call_output": true, "reasoning": true, "custom_tool_call": true, "custom_tool_call_output": true, "local_shell_call": true}
	claudeEntryTypes = map[string]bool{"user": true, "assistant": true, "summary": true, "system": true, "file-history-snapshot": true}
)

type head struct {
	keys      map[string]bool
	typ       string // the top-level "type" when it is a string
	multiline bool   // the object (or the part of it read) spans lines
}

// readHead collects the top-level keys of the first object in data,
// stopping quietly where the data ends or stops being JSON.
func readHead(data []byte) head {
	h := head{keys: map[string]bool{}}
	end := readKeys(data, h.keys, &h.typ)
	h.multiline = bytes.IndexByte(data[:end], '\n') >= 0
	return h
}

// readKeys adds the top-level keys of the object at the start of data to
// keys and returns how far it read.
func readKeys(data []byte, keys map[string]bool, typ *string) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return len(data)
		}
		key, _ := t.(string)
		keys[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return len(data)
		}
		if key == "type" {
			json.Unmarshal(v, typ)
		}
	}
	return int(dec.InputOffset())
}

func trimBOM(data []byte) []byte {
	return bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
}

// lines yields the non-blank lines of a JSONL file with their 1-based
// numbers, without the line ending.
func lines(data []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		rest := trimBOM(data)
		for n := 1; len(rest) > 0; n++ {
			line := rest
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				line, rest = rest[:i], rest[i+1:]
			} else {
				rest = nil
			}
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			if !yield(n, line) {
				return
			}
		}
	}
}

// decodeLine unmarshals one JSONL line, which must be an object, into v.
func decodeLine(format string, n int, line []byte, v any) error {
	if line[0] != '{' {
		return invalidf(format, n, "not a JSON object")
	}
	if err := json.Unmarshal(line, v); err != nil {
		return invalidf(format, n, "malformed JSON: %v", err)
	}
	return nil
}

// lineAt returns the 1-based line number of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// Layouts for the timestamps other tools write. Python's isoformat() has no
// zone for a naive datetime (datetime.now()): that is the local time where
// the file was written, read in this process's zone (TZ).
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q is not ISO 8601", s)
}

// parseTimeJSON reads a timestamp given as an ISO 8601 string or as Unix
// seconds. null or absent is the zero time.
func parseTimeJSON(v json.RawMessage) (time.Time, error) {
	if len(v) == 0 || string(v) == "null" {
		return time.Time{}, nil
	}
	if v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return time.Time{}, err
		}
		if s == "" {
			return time.Time{}, nil
		}
		return parseTime(s)
	}
	var secs float64
	if err := json.Unmarshal(v, &secs); err != nil {
		return time.Time{}, fmt.Errorf("timestamp %s is neither a string nor a number", v)
	}
	// A float64 of Unix seconds holds microseconds, not nanoseconds:
	// truncating its nanoseconds would lose the last digit written.
	return time.UnixMicro(int64(math.Round(secs * 1e6))).UTC(), nil
}

// metaObject returns the fields of doc that known does not name, that are
// not private to their writer (a name beginning with "_") and that say
// something (not null, not ""), as a JSON object, or nil when there are
// none. base, an object, is the start (an
// export's own "meta").
func metaObject(doc map[string]json.RawMessage, known map[string]bool, base json.RawMessage) (json.RawMessage, error) {
	meta := map[string]json.RawMessage{}
	if len(base) > 0 && string(base) != "null" {
		if err := json.Unmarshal(base, &meta); err != nil {
			return nil, fmt.Errorf("meta: %v", err)
		}
	}
	for k, v := range doc {
		if !known[k] && !strings.HasPrefix(k, "_") && string(v) != "null" && string(v) != `""` {
			meta[k] = v
		}
	}
	if len(meta) == 0 {
		return nil, nil
	}
	return mustMarshal(meta), nil
}

// ts formats a source timestamp for Message.TS: "" stays "".
func ts(s string) (fsstore.Time, error) {
	if s == "" {
		return "", nil
	}
	t, err := parseTime(s)
	if err != nil {
		return "", err
	}
	return fsstore.TimeOf(t), nil
}

func textPart(text string) json.RawMessage {
	return mustMarshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
}

// partsContent is textParts for a mix of text and other parts: a lone text
// part becomes a string.
func partsContent(parts []json.RawMessage) json.RawMessage {
	if len(parts) == 0 {
		return json.RawMessage("null")
	}
	if len(parts) == 1 {
		if t, ok := partText(parts[0]); ok {
			return sessions.TextContent(t)
		}
	}
	return mustMarshal(parts)
}

func partText(part json.RawMessage) (string, bool) {
	var p struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(part, &p) != nil || p.Type != "text" {
		return "", false
	}
	return p.Text, true
}

// imagePart is an OpenAI image_url content part.
func imagePart(url string) json.RawMessage {
	type imageURL struct {
		URL string `json:"url"`
	}
	return mustMarshal(struct {
		Type     string   `json:"type"`
		ImageURL imageURL `json:"image_url"`
	}{"image_url", imageURL{url}})
}

func newToolCall(id, name, arguments string) provider.ToolCall {
	return provider.ToolCall{ID: id, Type: "function", Function: provider.ToolFunction{Name: name, Arguments: arguments}}
}

func toolCallsJSON(calls []provider.ToolCall) json.RawMessage {
	if len(calls) == 0 {
		return nil
	}
	return mustMarshal(calls)
}

// mustMarshal marshals values built here from strings and raw JSON that was
// already checked, which cannot fail.
func mustMarshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// jsonString returns v as a string: the value of a JSON string, or the
// compact JSON text of anything else ("" for null or absent).
func jsonString(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return compactJSON(v)
}

// compactJSON returns the compact text of a JSON value that was already
// decoded once, so it is valid.
func compactJSON(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}
