package cron

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/profiles"
)

// Schedule says when a job's occurrences fall. Next returns the first
// occurrence strictly after t, and false when there is none (an `at` job
// whose time has passed, a day that never comes, such as 30 February).
type Schedule interface {
	Next(t time.Time) (time.Time, bool)
}

// MinEvery is the shortest period `every` takes.
const MinEvery = time.Second

// searchYears bounds the search for a cron expression's next occurrence:
// 29 February falls within any eight years, and an expression that
// matches no day in that time matches none.
const searchYears = 8

// ParseSchedule reads a schedule: five cron fields (minute, hour, day of
// month, month, day of week; lists, ranges, steps, month and day names),
// @hourly, @daily (@midnight), @weekly, @monthly, @yearly (@annually),
// "every DURATION" (at least MinEvery, at most profiles.MaxDuration;
// occurrences fall at anchor plus a whole number of periods) or "at TIME"
// (once: RFC 3339, or "2006-01-02 15:04" in loc). Cron fields are read as wall-clock times in
// loc. Anything else is fsstore.ErrInvalid naming the schedule.
func ParseSchedule(spec string, loc *time.Location, anchor time.Time) (Schedule, error) {
	s := strings.TrimSpace(spec)
	bad := func(why string) error {
		return fsstore.Invalidf("invalid schedule %q: %s", spec, why)
	}
	if rest, ok := strings.CutPrefix(s, "every "); ok {
		d, err := profiles.ParseDuration(strings.TrimSpace(rest))
		if errors.Is(err, profiles.ErrTooLong) {
			return nil, bad("every takes at most " + profiles.MaxDurationText + " (about 292 years)")
		}
		if err != nil {
			return nil, bad("every takes a duration such as 30s, 5m, 1h or 1d")
		}
		if d < MinEvery {
			return nil, bad("every takes at least 1s")
		}
		return every{anchor: anchor, period: d}, nil
	}
	if rest, ok := strings.CutPrefix(s, "at "); ok {
		rest = strings.TrimSpace(rest)
		t, err := time.Parse(time.RFC3339, rest)
		if err != nil {
			t, err = time.ParseInLocation("2006-01-02 15:04", rest, loc)
		}
		if err != nil {
			return nil, bad(`at takes an RFC 3339 time or "2006-01-02 15:04"`)
		}
		return at{t}, nil
	}
	if alias, ok := aliases[s]; ok {
		s = alias
	} else if strings.HasPrefix(s, "@") {
		return nil, bad("unknown; use @hourly, @daily, @weekly, @monthly or @yearly")
	}
	fields := strings.Fields(s)
	if len(fields) != 5 {
		return nil, bad("a cron expression has five fields (minute hour day-of-month month day-of-week)")
	}
	var c cronSpec
	c.loc = loc
	for i, f := range []struct {
		dst      *uint64
		min, max int
		names    []string
	}{
		{&c.minute, 0, 59, nil},
		{&c.hour, 0, 23, nil},
		{&c.dom, 1, 31, nil},
		{&c.month, 1, 12, monthNames},
		{&c.dow, 0, 7, dayNames},
	} {
		set, err := parseField(fields[i], f.min, f.max, f.names)
		if err != nil {
			return nil, bad(fmt.Sprintf("field %d (%s): %v", i+1, fieldNames[i], err))
		}
		*f.dst = set
	}
	if c.dow&(1<<7) != 0 {
		c.dow |= 1 // 7 is Sunday, as 0 is
	}
	c.domStar = strings.HasPrefix(fields[2], "*")
	c.dowStar = strings.HasPrefix(fields[4], "*")
	return c, nil
}

var aliases = map[string]string{
	"@hourly":   "0 * * * *",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@weekly":   "0 0 * * 0",
	"@monthly":  "0 0 1 * *",
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
}

var (
	fieldNames = []string{"minute", "hour", "day of month", "month", "day of week"}
	monthNames = []string{"", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// parseField reads one cron field into a bit set of the values it takes.
func parseField(f string, lo, hi int, names []string) (uint64, error) {
	var set uint64
	for _, part := range strings.Split(f, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("bad step %q", stepText)
			}
			step = n
		}
		var from, to int
		switch {
		case rng == "*":
			from, to = lo, hi
			if names != nil && hi == 7 {
				to = 6 // * in day of week is 0-6: 7 would only repeat Sunday
			}
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if from, err = value(a, lo, hi, names); err != nil {
				return 0, err
			}
			if to, err = value(b, lo, hi, names); err != nil {
				return 0, err
			}
			if to < from {
				return 0, fmt.Errorf("range %q runs backwards", rng)
			}
		default:
			v, err := value(rng, lo, hi, names)
			if err != nil {
				return 0, err
			}
			from, to = v, v
			if hasStep {
				to = hi // "a/n" is "a-max/n"
			}
		}
		for v := from; v <= to; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value reads one number or name of a field.
func value(s string, lo, hi int, names []string) (int, error) {
	for i, n := range names {
		if n != "" && strings.EqualFold(s, n) {
			return i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number or a name", s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, lo, hi)
	}
	return v, nil
}

// cronSpec is a parsed five-field expression: a bit set per field.
type cronSpec struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
	loc                           *time.Location
}

// Next walks the wall-clock days after t in c.loc, and in a matching day
// its matching hours and minutes. A wall time that a daylight-saving
// change skips falls at the end of the gap (02:30 on the spring-forward
// day of Europe/Berlin runs at 03:00 CEST), once however many skipped
// times match; a wall time that a change repeats runs once, at its first
// instant (wallInstant).
func (c cronSpec) Next(t time.Time) (time.Time, bool) {
	local := t.In(c.loc)
	y, m, d := local.Date()
	for i := 0; i < searchYears*366; i++ {
		day := time.Date(y, m, d+i, 12, 0, 0, 0, c.loc)
		if !c.dayMatches(day) {
			continue
		}
		dy, dm, dd := day.Date()
		// On t's own day the times before t's wall clock are passed
		// over unread, so that counting a year of missed minutes costs
		// a minute each, not a day each.
		h0, m0 := 0, 0
		if i == 0 {
			h0, m0 = local.Hour(), local.Minute()
		}
		for h := h0; h < 24; h++ {
			if c.hour&(1<<h) == 0 {
				continue
			}
			mStart := 0
			if h == h0 {
				mStart = m0
			}
			for mi := mStart; mi < 60; mi++ {
				if c.minute&(1<<mi) == 0 {
					continue
				}
				if at := wallInstant(dy, dm, dd, h, mi, c.loc); at.After(t) {
					return at, true
				}
			}
		}
	}
	return time.Time{}, false
}

// dayMatches applies the day fields as Vixie cron does: when both day of
// month and day of week are restricted (neither starts with *), a day
// matching either runs; otherwise both must match.
func (c cronSpec) dayMatches(day time.Time) bool {
	if c.month&(1<<int(day.Month())) == 0 {
		return false
	}
	domOK := c.dom&(1<<day.Day()) != 0
	dowOK := c.dow&(1<<int(day.Weekday())) != 0
	if !c.domStar && !c.dowStar {
		return domOK || dowOK
	}
	return domOK && dowOK
}

// wallInstant is the first instant at which the clock of loc reads
// y-m-d h:mi, or, for a wall time that a daylight-saving change skips, the
// instant the clock jumps over it.
func wallInstant(y int, m time.Month, d, h, mi int, loc *time.Location) time.Time {
	at := time.Date(y, m, d, h, mi, 0, 0, loc)
	if ah, am := at.Hour(), at.Minute(); ah != h || am != mi {
		// Skipped: time.Date has read it with one of the two offsets;
		// the jump is where the zone period it landed in starts, or the
		// one before it ends.
		start, end := at.ZoneBounds()
		if ah*60+am > h*60+mi {
			return start
		}
		return end
	}
	// Repeated: the same wall time an offset change earlier comes first
	// (an hour in most zones, half an hour on Lord Howe Island).
	for _, back := range []time.Duration{time.Hour, 30 * time.Minute} {
		if e := at.Add(-back); e.Hour() == h && e.Minute() == mi && e.Day() == d {
			return e
		}
	}
	return at
}

// every falls at anchor + k·period. The count is taken from the last
// occurrence found, never as one product: t.Sub saturates, and k·period
// overflows, past the longest Duration, which two of the longest periods
// are.
type every struct {
	anchor time.Time
	period time.Duration
}

func (e every) Next(t time.Time) (time.Time, bool) {
	if t.Before(e.anchor) {
		return e.anchor, true
	}
	base := e.anchor
	for {
		d := t.Sub(base)
		base = base.Add(d / e.period * e.period)
		if d < math.MaxInt64 {
			return base.Add(e.period), true
		}
	}
}

// at falls once.
type at struct{ t time.Time }

func (a at) Next(t time.Time) (time.Time, bool) {
	if a.t.After(t) {
		return a.t, true
	}
	return time.Time{}, false
}

// NextOccurrences returns the next n occurrences of job j from now on: its
// next_due first (which may be past, awaiting a tick), then those after.
// A paused job's are those it would have had; an at job that ran has
// none.
func NextOccurrences(j Job, n int) ([]time.Time, error) {
	sched, err := scheduleOf(j)
	if err != nil {
		return nil, err
	}
	t, err := j.NextDue.Instant()
	if err != nil {
		return nil, nil // no occurrence left
	}
	var out []time.Time
	for len(out) < n {
		out = append(out, t)
		next, more := sched.Next(t)
		if !more {
			break
		}
		t = next
	}
	return out, nil
}
