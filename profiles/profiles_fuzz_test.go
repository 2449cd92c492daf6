package profiles

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// nameRule is DESIGN.md's profile-name rule as written there, so the
// fuzzer compares CheckName's hand-written loop with the rule itself.
var nameRule = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// FuzzCheckName: CheckName accepts exactly the names the rule allows.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{
		"default", "work", "a", "0", "a-b_c", "-a", "_a", "A", "ab C", "", "a\n", "\na", "a\x00",
		strings.Repeat("a", 64), strings.Repeat("a", 65), "caf\u00e9", "\u212a", "a.b", "../x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := CheckName(name)
		if want := nameRule.MatchString(name); (err == nil) != want {
			t.Fatalf("CheckName(%q) = %v; the rule says valid=%v", name, err, want)
		}
		if err != nil && !errors.Is(err, fsstore.ErrInvalid) {
			t.Fatalf("CheckName(%q) = %v, not ErrInvalid", name, err)
		}
	})
}

var unitDur = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}

// FuzzParseDuration: ParseDuration never panics, accepts only durations of
// zero or more, names the text in every refusal, and reads one integer with
// one unit exactly; ParsePeriod is the same without zero.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{
		"90d", "12h", "30s", "1h30m", "1w2d", "1.5d", "0d", "0", "", "d", "-1d", "1x", "1e3d",
		"106751d", "106752d", "15250w", "15251w", "9223372036854775807s", "9223372036854775808ns",
		"2562047h", "2562048h", "100000d", "9223372036s", "9223372037s",
		"1w1w1w", ".d", "1..5d", "0.0000000000001d", "1d-1h", "5µs", "1ms", "NaNd", "+1d", "00", "0s0s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		p, perr := ParsePeriod(s)
		if err != nil {
			if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
				t.Fatalf("ParseDuration(%q) = %v, not ErrInvalid naming the text", s, err)
			}
		} else if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		switch {
		case err == nil && d > 0 && (perr != nil || p != d):
			t.Fatalf("ParsePeriod(%q) = %v, %v; ParseDuration says %v", s, p, perr, d)
		case (err != nil || d == 0) && perr == nil:
			t.Fatalf("ParsePeriod(%q) = %v; want an error (ParseDuration: %v, %v)", s, p, d, err)
		case perr != nil && (!errors.Is(perr, fsstore.ErrInvalid) || !strings.Contains(perr.Error(), fmt.Sprintf("%q", s))):
			t.Fatalf("ParsePeriod(%q) = %v, not ErrInvalid naming the text", s, perr)
		}

		// One integer and one unit: the exact value, or an error exactly
		// when it does not fit.
		var n uint64
		var unit string
		if k, _ := fmt.Sscanf(s, "%d%s", &n, &unit); k != 2 || fmt.Sprintf("%d%s", n, unit) != s {
			return
		}
		per, ok := unitDur[unit]
		if !ok {
			return
		}
		// One maximum whatever the unit: MaxDuration.
		fits := n <= uint64(MaxDuration)/uint64(per)
		switch {
		case !fits:
			if err == nil {
				t.Fatalf("ParseDuration(%q) = %v, want an error (out of range)", s, d)
			}
		case err != nil:
			t.Fatalf("ParseDuration(%q) = %v, want %v", s, err, time.Duration(n)*per)
		case d != time.Duration(n)*per:
			t.Fatalf("ParseDuration(%q) = %v (%d), want %v (%d)", s, d, int64(d), time.Duration(n)*per, int64(time.Duration(n)*per))
		}
	})
}
