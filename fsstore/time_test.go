package fsstore

import (
	"errors"
	"testing"
)

func TestCanonicalTime(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "",
		"2026-01-01T09:00:00+09:00":        "2026-01-01T00:00:00.000000Z",
		"2026-01-01T00:00:00Z":             "2026-01-01T00:00:00.000000Z",
		"2099-01-01T00:00:00+14:00":        "2098-12-31T10:00:00.000000Z",
		"2026-11-21T02:07:34.123456789Z":   "2026-11-21T02:07:34.123456Z",
		"2026-11-21T02:07:34.5-03:30":      "2026-11-21T05:37:34.500000Z",
		"2026-11-21T02:07:34.123456Z":      "2026-11-21T02:07:34.123456Z",
		"2026-11-21T02:07:34.123456+00:00": "2026-11-21T02:07:34.123456Z",
	} {
		got, err := CanonicalTime(in)
		if err != nil || got != want {
			t.Errorf("CanonicalTime(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "2026-01-01", "2026-01-01 00:00:00Z", "1700000000"} {
		if _, err := CanonicalTime(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CanonicalTime(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

func TestLater(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		// As strings the +14:00 time sorts after; as instants it is earlier.
		{"2099-01-01T00:00:00+14:00", "2098-12-31T11:00:00.000000Z", "2098-12-31T11:00:00.000000Z"},
		{"2098-12-31T11:00:00.000000Z", "2099-01-01T00:00:00+14:00", "2098-12-31T11:00:00.000000Z"},
		{"", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000Z"},
		{"2026-01-01T00:00:00Z", "garbage", "2026-01-01T00:00:00.000000Z"},
		{"", "", ""},
	} {
		if got := Later(c.a, c.b); got != c.want {
			t.Errorf("Later(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

// An appended message's own ts, in any zone, is stored in the store's one
// form, and the session's activity follows the instant.
