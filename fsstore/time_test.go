package fsstore

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestTimeCanonical(t *testing.T) {
	for in, want := range map[Time]Time{
		"":                                 "",
		"2026-01-01T09:00:00+09:00":        "2026-01-01T00:00:00.000000Z",
		"2026-01-01T00:00:00Z":             "2026-01-01T00:00:00.000000Z",
		"2099-01-01T00:00:00+14:00":        "2098-12-31T10:00:00.000000Z",
		"2026-11-21T02:07:34.123456789Z":   "2026-11-21T02:07:34.123456Z",
		"2026-11-21T02:07:34.5-03:30":      "2026-11-21T05:37:34.500000Z",
		"2026-11-21T02:07:34.123456Z":      "2026-11-21T02:07:34.123456Z",
		"2026-11-21T02:07:34.123456+00:00": "2026-11-21T02:07:34.123456Z",
	} {
		got, err := in.Canonical()
		if err != nil || got != want {
			t.Errorf("Time(%q).Canonical() = %q, %v; want %q", in, got, err, want)
		}
		if want != "" && len(got) != len(TimeLayout)-5 {
			t.Errorf("%q is %d bytes, not the fixed 27", got, len(got))
		}
	}
	for _, bad := range []Time{"yesterday", "2026-01-01", "2026-01-01 00:00:00Z", "1700000000"} {
		if _, err := bad.Canonical(); !errors.Is(err, ErrInvalid) {
			t.Errorf("Time(%q).Canonical(): %v, want ErrInvalid", bad, err)
		}
	}
}

// A record's times are written in TimeLayout, whatever form they hold,
// and one that is not a time stops the write; they are read as they are.
func TestTimeWritesOneForm(t *testing.T) {
	type doc struct {
		At    Time `json:"at"`
		Unset Time `json:"unset"`
	}
	b, err := json.Marshal(doc{At: "2026-01-01T09:00:00+09:00"})
	if err != nil || string(b) != `{"at":"2026-01-01T00:00:00.000000Z","unset":""}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	if b, err := json.Marshal(doc{At: "noon"}); err == nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Marshal of a time that is not one = %s, %v; want ErrInvalid", b, err)
	}
	var d doc
	if err := json.Unmarshal([]byte(`{"at":"2026-01-01T09:00:00+09:00"}`), &d); err != nil || d.At != "2026-01-01T09:00:00+09:00" {
		t.Fatalf("Unmarshal = %+v, %v: a time is read as it is on disk", d, err)
	}
}

func TestLater(t *testing.T) {
	for _, c := range []struct{ a, b, want Time }{
		// As text the +14:00 time sorts after; as instants it is earlier.
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
	east, utc := Time("2099-01-01T00:00:00+14:00"), Time("2098-12-31T11:00:00.000000Z")
	if !east.Before(utc) || utc.Before(east) || utc.Before(utc) {
		t.Errorf("Before compares the text, not the instants")
	}
	if !Time("").Before(utc) || utc.Before("garbage") {
		t.Errorf("an unset or unreadable time is not the earliest")
	}
}
