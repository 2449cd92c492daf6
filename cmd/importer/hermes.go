package importer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// hermesDoc is what the hermes formats say of a session, in either
// program's names: the Python agent's snapshot (session_id, platform,
// session_start, last_updated) and export (id, source, started_at, epoch
// times), and this program's export (its document fields).
type hermesDoc struct {
	ID              string             `json:"id"`
	SessionID       string             `json:"session_id"`
	Title           string             `json:"title"`
	Source          string             `json:"source"`
	Platform        string             `json:"platform"`
	Model           string             `json:"model"`
	ParentSessionID string             `json:"parent_session_id"`
	SessionKey      string             `json:"session_key"`
	EndReason       string             `json:"end_reason"`
	CreatedAt       json.RawMessage    `json:"created_at"`
	StartedAt       json.RawMessage    `json:"started_at"`
	SessionStart    json.RawMessage    `json:"session_start"`
	UpdatedAt       json.RawMessage    `json:"updated_at"`
	LastUpdated     json.RawMessage    `json:"last_updated"`
	EndedAt         json.RawMessage    `json:"ended_at"`
	SystemPrompt    string             `json:"system_prompt"`
	Meta            json.RawMessage    `json:"meta"`
	Messages        *[]json.RawMessage `json:"messages"`
	// The Python agent's usage totals (its sessions table): input read
	// afresh, cache reads and writes apart, as its CanonicalUsage counts.
	// They stay in meta too, with the rest of its row.
	InputTokens      int64  `json:"input_tokens"`
	OutputTokens     int64  `json:"output_tokens"`
	CacheReadTokens  int64  `json:"cache_read_tokens"`
	CacheWriteTokens int64  `json:"cache_write_tokens"`
	ReasoningTokens  int64  `json:"reasoning_tokens"`
	BillingProvider  string `json:"billing_provider"`
}

// totals are d's usage totals as a call of the session's model (its
// cache writes' lifetime unsaid: 5 minutes, the API's default); nil when
// d counts no token.
func (d *hermesDoc) totals() (*usage.Call, error) {
	c := &usage.Call{Input: d.InputTokens, Output: d.OutputTokens, CacheRead: d.CacheReadTokens,
		CacheWrite5m: d.CacheWriteTokens, Reasoning: d.ReasoningTokens, Model: d.Model, Provider: d.BillingProvider}
	if c.Total() == 0 && c.Reasoning == 0 {
		return nil, nil
	}
	c.ID = "-" // given by the import
	return c, c.Check()
}

// hermesKnown are the keys a hermes document's fields take, or that this
// program recomputes (counts, state, its own caches): the rest is meta.
var hermesKnown = map[string]bool{
	"id": true, "session_id": true, "title": true, "source": true, "platform": true, "model": true,
	"parent_session_id": true, "session_key": true, "end_reason": true,
	"created_at": true, "started_at": true, "session_start": true, "updated_at": true, "last_updated": true, "ended_at": true,
	"system_prompt": true, "meta": true, "messages": true, "message_count": true,
	"state": true, "resume_reason": true, "resume_pending_at": true, "interrupt_count": true, "profile": true, "preview": true,
}

// session builds the Session of a hermes document whose raw fields are
// fields; where names what to blame in an error.
func (d *hermesDoc) session(format string, fields map[string]json.RawMessage, fail func(error) error) (Session, error) {
	s := Session{
		ID: cmp.Or(d.ID, d.SessionID), Title: d.Title, Model: d.Model,
		Source:          cmp.Or(d.Source, d.Platform, "import:"+format),
		ParentSessionID: d.ParentSessionID, SessionKey: d.SessionKey, EndReason: d.EndReason,
	}
	for _, t := range []struct {
		name string
		into *time.Time
		raws []json.RawMessage
	}{
		{"created_at", &s.CreatedAt, []json.RawMessage{d.CreatedAt, d.StartedAt, d.SessionStart}},
		{"updated_at", &s.UpdatedAt, []json.RawMessage{d.UpdatedAt, d.LastUpdated}},
		{"ended_at", &s.EndedAt, []json.RawMessage{d.EndedAt}},
	} {
		for _, raw := range t.raws {
			v, err := parseTimeJSON(raw)
			if err != nil {
				return Session{}, fail(fmt.Errorf("%s: %v", t.name, err))
			}
			if !v.IsZero() {
				*t.into = v
				break
			}
		}
	}
	meta, err := metaObject(fields, hermesKnown, d.Meta)
	if err != nil {
		return Session{}, fail(err)
	}
	s.Meta = meta
	return s, nil
}

// parseHermesJSON reads the Python agent's one-object session snapshot.
func parseHermesJSON(data []byte) (Session, error) {
	const format = FormatHermesJSON
	var doc hermesDoc
	data = trimBOM(data)
	start := bytes.TrimLeft(data, " \t\r\n")
	if len(start) > 0 && start[0] != '{' {
		return Session{}, invalidf(format, lineAt(data, int64(len(data)-len(start))), "not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		return Session{}, jsonError(format, data, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Session{}, invalidf(format, lineAt(data, dec.InputOffset()), "data after the session object")
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Session{}, jsonError(format, data, dec, err)
	}
	if doc.Messages == nil {
		return Session{}, invalidf(format, 0, "no \"messages\" list")
	}
	s, err := doc.session(format, fields, func(err error) error { return invalidf(format, 0, "%v", err) })
	if err != nil {
		return Session{}, err
	}
	if s.Messages, err = hermesMessages(*doc.Messages, doc.SystemPrompt, func(i int, err error) error {
		return invalidf(format, rawLine(data, *doc.Messages, i), "message %d: %v", i+1, err)
	}); err != nil {
		return Session{}, err
	}
	if s.Totals, err = doc.totals(); err != nil {
		return Session{}, invalidf(format, 0, "%v", err)
	}
	return s, nil
}

// parseHermesJSONL reads a sessions export: one session document a line,
// each with its transcript in "messages".
func parseHermesJSONL(data []byte) ([]Session, error) {
	const format = FormatHermesJSONL
	var out []Session
	for n, line := range lines(data) {
		var fields map[string]json.RawMessage
		if err := decodeLine(format, n, line, &fields); err != nil {
			return nil, err
		}
		var doc hermesDoc
		if err := decodeLine(format, n, line, &doc); err != nil {
			return nil, err
		}
		if doc.Messages == nil {
			return nil, invalidf(format, n, "no \"messages\" list")
		}
		s, err := doc.session(format, fields, func(err error) error { return invalidf(format, n, "%v", err) })
		if err != nil {
			return nil, err
		}
		if s.Messages, err = hermesMessages(*doc.Messages, doc.SystemPrompt, func(i int, err error) error {
			return invalidf(format, n, "message %d: %v", i+1, err)
		}); err != nil {
			return nil, err
		}
		if s.Totals, err = doc.totals(); err != nil {
			return nil, invalidf(format, n, "%v", err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, invalidf(format, 0, "empty input")
	}
	return out, nil
}

// hermesMessages checks each message with sessions.ParseMessage, zeroes seq
// and normalizes ts, and puts systemPrompt first unless the transcript
// already starts with it.
func hermesMessages(raws []json.RawMessage, systemPrompt string, fail func(i int, err error) error) ([]sessions.Message, error) {
	msgs := make([]sessions.Message, 0, len(raws)+1)
	for i, raw := range raws {
		raw, err := normalizeTS(raw)
		if err != nil {
			return nil, fail(i, fmt.Errorf("ts: %v", err))
		}
		m, err := sessions.ParseMessage(raw)
		if err != nil {
			return nil, fail(i, err)
		}
		m.Seq = 0
		// A key its writer keeps for itself (the Python agent's
		// "_db_persisted", stamped once a message reaches its database) is
		// no part of the message the API sees, and would make a grown
		// snapshot of the session differ from the one imported before.
		for k := range m.Extra {
			if strings.HasPrefix(k, "_") {
				delete(m.Extra, k)
			}
		}
		// The Python agent stamps some messages with "timestamp" (ISO or
		// Unix seconds): it is the message's ts.
		if v, ok := m.Extra["timestamp"]; ok && m.TS == "" {
			t, err := parseTimeJSON(v)
			if err != nil {
				return nil, fail(i, fmt.Errorf("timestamp: %v", err))
			}
			if !t.IsZero() {
				m.TS = fsstore.TimeOf(t)
			}
			delete(m.Extra, "timestamp")
		}
		if len(m.Extra) == 0 {
			m.Extra = nil
		}
		msgs = append(msgs, m)
	}
	if systemPrompt != "" && (len(msgs) == 0 || msgs[0].Role != "system" || msgs[0].Text() != systemPrompt) {
		sys := sessions.Message{Role: "system", Content: sessions.TextContent(systemPrompt)}
		msgs = append([]sessions.Message{sys}, msgs...)
	}
	return msgs, nil
}

// jsonError turns a decode error of a whole-file JSON document into a
// parseError naming the line.
func jsonError(format string, data []byte, dec *json.Decoder, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return invalidf(format, lineAt(data, syn.Offset), "malformed JSON: %v", err)
	case errors.As(err, &typ):
		return invalidf(format, lineAt(data, typ.Offset), "malformed JSON: %v", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidf(format, lineAt(data, int64(len(data))), "truncated JSON: %v", err)
	case errors.Is(err, io.EOF):
		return invalidf(format, 0, "empty input")
	}
	return invalidf(format, lineAt(data, dec.InputOffset()), "malformed JSON: %v", err)
}

// rawLine finds the line of raws[i] in data. json.RawMessage keeps the
// source bytes, so searching in order after the previous element finds it.
func rawLine(data []byte, raws []json.RawMessage, i int) int {
	off := 0
	for j := 0; j <= i; j++ {
		k := bytes.Index(data[off:], raws[j])
		if k < 0 {
			return 0
		}
		if j < i {
			off += k + len(raws[j])
		} else {
			off += k
		}
	}
	return lineAt(data, int64(off))
}

// normalizeTS rewrites a message's "ts" (ISO 8601, maybe without a zone, as
// Python writes it) to the store's RFC 3339 form before the message is
// checked. A message without ts, or one that is not an object, is returned
// as it is for ParseMessage to judge.
func normalizeTS(raw json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields["ts"] == nil {
		return raw, nil
	}
	var s string
	if err := json.Unmarshal(fields["ts"], &s); err != nil {
		return nil, err
	}
	norm, err := ts(s)
	if err != nil {
		return nil, err
	}
	fields["ts"], _ = json.Marshal(norm)
	// Encode without HTML escaping, so that "<" in a message stays "<".
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
