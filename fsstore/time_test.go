package fsstore

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
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

// TestTimeOfIsFormat: TimeOf's hand-placed digits are time.Format's in
// TimeLayout, over the years it can hold and past them.
func TestTimeOfIsFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	times := []time.Time{
		{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 28, 9, 5, 3, 1000, time.FixedZone("", 14*3600)),
	}
	for range 100_000 {
		times = append(times, time.Unix(r.Int64N(400_000_000_000)-62_000_000_000, r.Int64N(1e9)).In(time.FixedZone("", r.IntN(50_000)-25_000)))
	}
	for _, at := range times {
		if got, want := TimeOf(at), Time(at.UTC().Format(TimeLayout)); got != want {
			t.Fatalf("TimeOf(%v) = %q, want %q", at, got, want)
		}
	}
}

// FuzzCanonical: Canonical gives what parsing a time and writing it in
// TimeLayout gives, for text already in that form (which it keeps) and
// any other.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"2026-11-21T02:07:34.123456Z", "2026-11-21t02:07:34.123456Z", "2026-11-21T02:07:34,123456Z",
		"2026-11-21T02:07:34.123456z", "2026-11-21T02:07:34.12345+01:00", "0000-01-01T00:00:00.000000Z", "2026-02-30T00:00:00.000000Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Time(s).Canonical()
		at, perr := time.Parse(time.RFC3339Nano, s)
		switch {
		case s == "":
			if got != "" || err != nil {
				t.Fatalf("Canonical(\"\") = %q, %v", got, err)
			}
		case perr != nil:
			if err == nil {
				t.Fatalf("Canonical(%q) = %q, want an error (%v)", s, got, perr)
			}
		case err != nil || got != Time(at.UTC().Format(TimeLayout)):
			t.Fatalf("Canonical(%q) = %q, %v; want %q", s, got, err, at.UTC().Format(TimeLayout))
		}
	})
}

func BenchmarkTimeOf(b *testing.B) {
	at := time.Date(2026, 11, 28, 19, 40, 1, 123456789, time.UTC)
	b.ReportAllocs()
	for range b.N {
		TimeOf(at)
	}
}
