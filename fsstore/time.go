package fsstore

import (
	"strconv"
	"time"
)

// TimeLayout is the one form in which the stores write a time: RFC 3339
// in UTC with microseconds, always 27 bytes ("2026-01-01T00:00:00.000000Z"),
// so that a directory listing or a log reads in time order.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// Time is a time of a record (a document's created_at, a message's ts):
// RFC 3339 text, "" when unset. It is written in TimeLayout whatever form
// it holds: MarshalJSON rewrites a time in any zone and precision
// ("2026-01-01T09:00:00+09:00" → "2026-01-01T00:00:00.000000Z") and
// refuses text that is not a time, so no store can write one in another
// form. It is read as it is on disk, so that fsck can tell a document
// written before that rule (Canonical differs) and a reader still gets
// its instant. Times are compared as instants (Before, Later), never as
// text.
type Time string

// TimeOf is t in TimeLayout. Its digits are put in place by hand, as
// time.Format would put them for this one layout, in a third of its time
// (TestTimeOfIsFormat, BenchmarkTimeOf): a gateway turn writes a dozen
// times. A year outside 0 to 9999, which the 27 bytes cannot hold, is
// left to time.Format.
func TimeOf(t time.Time) Time {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return Time(t.Format(TimeLayout))
	}
	hour, min, sec := t.Clock()
	var b [len(TimeLayout) - 5]byte
	put := func(at, n, v int) {
		for i := at + n - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, 4, year)
	b[4] = '-'
	put(5, 2, int(month))
	b[7] = '-'
	put(8, 2, day)
	b[10] = 'T'
	put(11, 2, hour)
	b[13] = ':'
	put(14, 2, min)
	b[16] = ':'
	put(17, 2, sec)
	b[19] = '.'
	put(20, 6, t.Nanosecond()/1000)
	b[26] = 'Z'
	return Time(b[:])
}

// Instant parses t, which may be in any RFC 3339 form.
func (t Time) Instant() (time.Time, error) {
	return time.Parse(time.RFC3339Nano, string(t))
}

// Canonical is t in TimeLayout, "" for "", and ErrInvalid for text that
// is not an RFC 3339 time.
func (t Time) Canonical() (Time, error) {
	if t == "" {
		return "", nil
	}
	i, err := t.Instant()
	if err != nil {
		return "", Invalidf("%q is not an RFC 3339 time", string(t))
	}
	// A time read in TimeLayout (what every store writes) is its own
	// canonical form: 27 bytes of a time in UTC to the microsecond.
	if len(t) == len(TimeLayout)-5 && t[len(t)-1] == 'Z' && t[19] == '.' {
		return t, nil
	}
	return TimeOf(i), nil
}

// MarshalJSON writes t in TimeLayout (see Canonical); text that is not a
// time is an error, so a record holding one is not written.
func (t Time) MarshalJSON() ([]byte, error) {
	c, err := t.Canonical()
	if err != nil {
		return nil, err
	}
	return strconv.AppendQuote(make([]byte, 0, len(TimeLayout)+2), string(c)), nil
}

// Before reports whether t is an earlier instant than u. A time that is
// unset or unreadable counts as the earliest.
func (t Time) Before(u Time) bool {
	a, erra := t.Instant()
	b, errb := u.Instant()
	switch {
	case errb != nil:
		return false
	case erra != nil:
		return true
	}
	return a.Before(b)
}

// Later returns the later of two times, in TimeLayout, comparing the
// instants, not the text: a time written before the stores normalised
// every time may be in another zone. An unset or unreadable time counts
// as the earliest; two of them give "".
func Later(a, b Time) Time {
	if a.Before(b) {
		a = b
	}
	c, err := a.Canonical()
	if err != nil {
		return ""
	}
	return c
}
