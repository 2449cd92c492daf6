package profiles

import (
	"strconv"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// ParseDuration is time.ParseDuration plus the units people use for
// retention: d (24h) and w (7d), alone or combined ("1w2d", "90d", "12h",
// "1h30m"). The duration must be positive; anything else is ErrInvalid.
func ParseDuration(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, fsstore.Invalidf("invalid duration %q (use a number and a unit: s m h d w, e.g. 90d, 12h, 30s)", s)
	}
	if s == "" {
		return bad()
	}
	var total time.Duration
	for len(s) > 0 {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		j := i
		for j < len(s) && !(s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		num, unit := s[:i], s[i:j]
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
		s = s[j:]
	}
	if total <= 0 {
		return bad()
	}
	return total, nil
}
