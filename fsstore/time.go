package fsstore

import "time"

// TimeLayout is the one form in which the store writes a time: RFC 3339 in
// UTC with microseconds, always 27 bytes ("2026-01-01T00:00:00.000000Z"),
// so that a directory listing or a log reads in time order.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// Timestamp formats t in TimeLayout.
func Timestamp(t time.Time) string {
	return t.UTC().Format(TimeLayout)
}

// CanonicalTime rewrites an RFC 3339 time in any zone and precision in
// TimeLayout ("2026-01-01T09:00:00+09:00" → "2026-01-01T00:00:00.000000Z").
// An empty string stays empty; anything else is ErrInvalid.
func CanonicalTime(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "", Invalidf("%q is not an RFC 3339 time", s)
	}
	return Timestamp(t), nil
}

// Later returns the later of two stored times in TimeLayout, comparing
// the instants, not the strings: a time written before the store
// normalised every time may be in another zone. An empty or unreadable
// time counts as the earliest; two of them give "".
func Later(a, b string) string {
	ta, erra := time.Parse(time.RFC3339Nano, a)
	tb, errb := time.Parse(time.RFC3339Nano, b)
	switch {
	case erra != nil && errb != nil:
		return ""
	case errb != nil || (erra == nil && !tb.After(ta)):
		return Timestamp(ta)
	}
	return Timestamp(tb)
}
