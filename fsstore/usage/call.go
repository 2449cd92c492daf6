package usage

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// Field is the key of a transcript line's Extra that holds the Call the
// line's message came from; OtherField holds, as a list, calls an import
// found that made no message of the transcript (an abandoned branch's, a
// response that was only thinking), each with its own TS.
const (
	Field      = "usage"
	OtherField = "usage_other"
)

// Purposes of a call besides a turn's (the empty Purpose).
const (
	PurposeCompress = "compress" // a compression's summary
	PurposeDelegate = "delegate" // a sub-agent's, in its child session (cmd/agent/delegate.go)
)

// Call is one model call's usage, as stored on the message it produced.
// Token counts are the provider's own; see the package doc for what each
// one counts.
type Call struct {
	ID           string `json:"id"`
	Input        int64  `json:"input"`
	Output       int64  `json:"output"`
	CacheRead    int64  `json:"cache_read,omitempty"`
	CacheWrite5m int64  `json:"cache_write_5m,omitempty"`
	CacheWrite1h int64  `json:"cache_write_1h,omitempty"`
	Reasoning    int64  `json:"reasoning,omitempty"`
	// InputHasCache: Input counts the cache reads too (OpenAI's
	// prompt_tokens), instead of only the tokens read afresh
	// (Anthropic's input_tokens).
	InputHasCache bool   `json:"input_includes_cache,omitempty"`
	Model         string `json:"model,omitempty"`
	Provider      string `json:"provider,omitempty"`
	RequestID     string `json:"request_id,omitempty"`
	LatencyMS     int64  `json:"latency_ms,omitempty"`
	Purpose       string `json:"purpose,omitempty"`
	// Failed: the call failed after the provider counted its tokens (a
	// stream cut after its first event); it made no message, and is
	// counted as every call is.
	Failed bool `json:"failed,omitempty"`
	// TS is the call's time, for a call of OtherField: its message's
	// otherwise.
	TS fsstore.Time `json:"ts,omitempty"`
}

// Fresh is the input tokens read afresh, at the input price: Input less
// the cache reads when Input counts them.
func (c Call) Fresh() int64 {
	if c.InputHasCache {
		return max(c.Input-c.CacheRead, 0)
	}
	return c.Input
}

// CacheWrite is the tokens written to the cache, at either lifetime.
func (c Call) CacheWrite() int64 { return c.CacheWrite5m + c.CacheWrite1h }

// Total is every token of the call, each counted once: fresh input,
// output, cache writes and cache reads.
func (c Call) Total() int64 { return c.Fresh() + c.Output + c.CacheWrite() + c.CacheRead }

// Check reports what is wrong with c as a stored record, as an
// fsstore.ErrInvalid error: no id, or a negative count.
func (c Call) Check() error {
	if c.ID == "" {
		return fsstore.Invalidf("usage has no id")
	}
	for _, f := range []struct {
		name string
		n    int64
	}{{"input", c.Input}, {"output", c.Output}, {"cache_read", c.CacheRead}, {"cache_write_5m", c.CacheWrite5m},
		{"cache_write_1h", c.CacheWrite1h}, {"reasoning", c.Reasoning}, {"latency_ms", c.LatencyMS}} {
		if f.n < 0 {
			return fsstore.Invalidf("usage %s is %d, below 0", f.name, f.n)
		}
	}
	return nil
}

// Of returns the call m holds, if it holds one. A usage field that does
// not decode as a Call is an error matching fsstore.ErrInvalid.
func Of(m sessions.Message) (Call, bool, error) {
	raw, ok := m.Extra[Field]
	if !ok {
		return Call{}, false, nil
	}
	var c Call
	if err := json.Unmarshal(raw, &c); err != nil {
		return Call{}, false, fsstore.Invalidf("usage is not a usage record: %v", err)
	}
	return c, true, nil
}

// Others returns the calls m holds in OtherField.
func Others(m sessions.Message) ([]Call, error) {
	raw, ok := m.Extra[OtherField]
	if !ok {
		return nil, nil
	}
	var cs []Call
	if err := json.Unmarshal(raw, &cs); err != nil {
		return nil, fsstore.Invalidf("%s is not a list of usage records: %v", OtherField, err)
	}
	return cs, nil
}

// Put stores c on m, replacing any call m held.
func Put(m *sessions.Message, c Call) { put(m, Field, c) }

// PutOthers stores cs on m as its OtherField, replacing any it held.
func PutOthers(m *sessions.Message, cs []Call) { put(m, OtherField, cs) }

func put(m *sessions.Message, field string, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // calls always encode
	if m.Extra == nil {
		m.Extra = map[string]json.RawMessage{}
	}
	m.Extra[field] = bytes.TrimRight(b.Bytes(), "\n")
}

// NewID returns a new call id, time-ordered like the store's other ids
// and unique enough (12 random bytes) that two hosts never make the same
// one.
func NewID(now time.Time) string {
	var b [12]byte
	rand.Read(b[:]) // crypto/rand does not fail on supported platforms
	return now.UTC().Format("20060102_150405") + "_" + hex.EncodeToString(b[:])
}
