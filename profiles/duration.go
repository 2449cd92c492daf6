package profiles

import (
	"strconv"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// ParseDuration reads a duration: time.ParseDuration's units plus the ones
// people use for retention, d (24h) and w (7d), alone or combined ("1w2d",
// "90d", "12h", "1h30m"). Zero ("0", "0s", "0d") is a duration: it is what
// a cutoff takes to mean now ("prune --older-than 0s" selects everything
// already ended); a period uses ParsePeriod, which refuses it. Anything
// else, a negative duration included, is ErrInvalid naming the text as
// given.
func ParseDuration(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, fsstore.Invalidf("invalid duration %q (use a number and a unit: s m h d w, e.g. 90d, 12h, 30s)", s)
	}
	if s == "0" {
		return 0, nil
	}
	if s == "" {
		return bad()
	}
	var total time.Duration
	for rest := s; len(rest) > 0; {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		j := i
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		if num == "" || unit == "" {
			return bad()
		}
		var d time.Duration
		switch unit {
		case "d", "w":
			n, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return bad()
			}
			day := 24 * float64(time.Hour)
			if unit == "w" {
				day *= 7
			}
			if n*day > float64(1<<62) {
				return bad()
			}
			d = time.Duration(n * day)
		default:
			var err error
			if d, err = time.ParseDuration(num + unit); err != nil {
				return bad()
			}
		}
		if total+d < total {
			return bad()
		}
		total += d
		rest = rest[j:]
	}
	return total, nil
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
