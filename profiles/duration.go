package profiles

import (
	"errors"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// MaxDuration is the longest duration hermes takes, whatever its units:
// the whole seconds of the longest time.Duration, about 292 years. One
// limit for every unit, so that 100000d is read like the 2400000h it is,
// and 106752d is refused like 2562048h.
const MaxDuration = 9223372036 * time.Second

// MaxDurationText is MaxDuration as a duration is written.
const MaxDurationText = "106751d23h47m16s"

// ErrTooLong is what a duration past MaxDuration wraps (within
// fsstore.ErrInvalid), so that a caller can say it in its own words.
var ErrTooLong = errors.New("longer than the longest duration, " + MaxDurationText + " (about 292 years)")

// unitNS is each unit's length in nanoseconds: time.ParseDuration's, and
// d (24h) and w (7d).
var unitNS = map[string]uint64{
	"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9,
	"d": 86400e9, "w": 7 * 86400e9,
}

// ParseDuration reads a duration: time.ParseDuration's units plus the ones
// people use for retention, d (24h) and w (7d), alone or combined ("1w2d",
// "90d", "12h", "1h30m"), each number whole or with a fraction ("1.5d").
// Zero ("0", "0s", "0d") is a duration: it is what a cutoff takes to mean
// now ("prune --older-than 0s" selects everything already ended); a period
// uses ParsePeriod, which refuses it. A duration past MaxDuration, in any
// units, is ErrInvalid wrapping ErrTooLong; anything else, a negative
// duration included, is ErrInvalid. Both name the text as given.
func ParseDuration(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, fsstore.Invalidf("invalid duration %q (use a number and a unit: s m h d w, e.g. 90d, 12h, 30s)", s)
	}
	tooLong := func() (time.Duration, error) {
		return 0, fsstore.Invalidf("invalid duration %q: %w", s, ErrTooLong)
	}
	if s == "0" {
		return 0, nil
	}
	if s == "" {
		return bad()
	}
	const limit = uint64(MaxDuration)
	var total uint64
	for rest := s; len(rest) > 0; {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		j := i
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		whole, frac, _ := strings.Cut(rest[:i], ".")
		per, ok := unitNS[rest[i:j]]
		if !ok || whole+frac == "" || strings.Contains(frac, ".") {
			return bad()
		}
		var n uint64
		for _, c := range whole {
			if n > limit/10 {
				return tooLong()
			}
			n = n*10 + uint64(c-'0')
		}
		if n > limit/per {
			return tooLong()
		}
		d := n * per
		// The fraction's digits past what a uint64 holds are below a
		// nanosecond, as time.ParseDuration reads them.
		var f uint64
		scale := 1.0
		for _, c := range frac {
			if f > limit/10 {
				break
			}
			f, scale = f*10+uint64(c-'0'), scale*10
		}
		d += uint64(float64(f) * (float64(per) / scale))
		if d > limit || total > limit-d {
			return tooLong()
		}
		total += d
		rest = rest[j:]
	}
	return time.Duration(total), nil
}

// ParsePeriod is ParseDuration for a period: a timeout, an interval, a
// TTL, which must be longer than zero (a zero timeout would fail every
// call, a zero interval spin). Zero is ErrInvalid naming the text.
func ParsePeriod(s string) (time.Duration, error) {
	d, err := ParseDuration(s)
	if err == nil && d == 0 {
		return 0, fsstore.Invalidf("invalid duration %q: it must be longer than zero", s)
	}
	return d, err
}
