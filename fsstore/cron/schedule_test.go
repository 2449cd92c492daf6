package cron

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestScheduleNext is the parser against a table: each row's schedule,
// read in its zone, from the instant after, gives these next occurrences
// (RFC 3339, with the offset in force).
func TestScheduleNext(t *testing.T) {
	for _, tc := range []struct {
		spec, tz, after string
		want            []string
	}{
		{"*/15 * * * *", "UTC", "2026-03-01T10:07:00Z", []string{"2026-03-01T10:15:00Z", "2026-03-01T10:30:00Z", "2026-03-01T10:45:00Z", "2026-03-01T11:00:00Z"}},
		{"5-7 9 * * *", "UTC", "2026-03-01T09:06:00Z", []string{"2026-03-01T09:07:00Z", "2026-03-02T09:05:00Z"}},
		{"10-40/15 * * * *", "UTC", "2026-03-01T09:00:00Z", []string{"2026-03-01T09:10:00Z", "2026-03-01T09:25:00Z", "2026-03-01T09:40:00Z", "2026-03-01T10:10:00Z"}},
		{"50/5 8 * * *", "UTC", "2026-03-01T08:00:00Z", []string{"2026-03-01T08:50:00Z", "2026-03-01T08:55:00Z", "2026-03-02T08:50:00Z"}},
		{"0 9 * * mon-fri", "UTC", "2026-11-27T10:00:00Z", []string{"2026-11-30T09:00:00Z", "2026-12-01T09:00:00Z"}},
		{"0 9 * * 7", "UTC", "2026-11-25T00:00:00Z", []string{"2026-11-29T09:00:00Z"}},
		{"0 0 1 jan,JUL *", "UTC", "2026-02-01T00:00:00Z", []string{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"0 12 29 feb *", "UTC", "2026-01-01T00:00:00Z", []string{"2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z"}},
		{"0 0 31 * *", "UTC", "2026-01-31T00:00:00Z", []string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z"}},
		{"0 0 28-31 * *", "UTC", "2027-02-27T00:00:00Z", []string{"2027-02-28T00:00:00Z", "2027-03-28T00:00:00Z"}},
		// Day of month and day of week both restricted: either (Vixie).
		{"0 0 13 * fri", "UTC", "2026-11-01T00:00:00Z", []string{"2026-11-06T00:00:00Z", "2026-11-13T00:00:00Z", "2026-11-20T00:00:00Z", "2026-11-27T00:00:00Z", "2026-12-04T00:00:00Z"}},
		// One restricted, the other *: both.
		{"0 0 */10 * *", "UTC", "2026-11-01T00:00:00Z", []string{"2026-11-11T00:00:00Z", "2026-11-21T00:00:00Z", "2026-12-01T00:00:00Z"}},
		{"@hourly", "UTC", "2026-11-25T10:59:59Z", []string{"2026-11-25T11:00:00Z", "2026-11-25T12:00:00Z"}},
		{"@daily", "UTC", "2026-11-25T10:00:00Z", []string{"2026-11-26T00:00:00Z"}},
		{"@weekly", "UTC", "2026-11-25T10:00:00Z", []string{"2026-11-29T00:00:00Z", "2026-12-06T00:00:00Z"}},
		{"@monthly", "UTC", "2026-11-25T10:00:00Z", []string{"2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"@yearly", "UTC", "2026-11-25T10:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"30 9 * * *", "Asia/Tokyo", "2026-11-25T00:00:00Z", []string{"2026-11-25T09:30:00+09:00"}},
		// Europe/Berlin springs forward on 29 March 2026 at 02:00 CET to
		// 03:00 CEST: 02:30 does not exist and runs at 03:00, once.
		{"30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", []string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"*/20 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", []string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"}},
		{"0 * * * *", "Europe/Berlin", "2026-03-29T00:30:00+01:00", []string{"2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T04:00:00+02:00"}},
		// It falls back on 25 October 2026 at 03:00 CEST to 02:00 CET:
		// 02:30 happens twice and runs once, the first time.
		{"30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", []string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"0 * * * *", "Europe/Berlin", "2026-10-25T01:30:00+02:00", []string{"2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00", "2026-10-25T04:00:00+01:00"}},
		// From inside the repeated hour's second pass: nothing of that
		// hour runs again.
		{"*/30 * * * *", "Europe/Berlin", "2026-10-25T02:10:00+01:00", []string{"2026-10-25T03:00:00+01:00"}},
		// America/New_York: 8 March 2026 02:00 EST → 03:00 EDT; 1 November
		// 2026 02:00 EDT → 01:00 EST.
		{"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"0 * * * *", "America/New_York", "2026-11-01T00:30:00-04:00", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00"}},
		{"every 90s", "UTC", "2026-11-25T10:00:00Z", []string{"2026-11-25T10:01:30Z", "2026-11-25T10:03:00Z"}},
		{"every 1d", "Europe/Berlin", "2026-11-25T10:00:00Z", []string{"2026-11-26T11:00:00+01:00"}},
		{"at 2026-12-24 18:00", "Europe/Berlin", "2026-11-25T10:00:00Z", []string{"2026-12-24T18:00:00+01:00"}},
		{"at 2026-12-24T18:00:00Z", "Europe/Berlin", "2026-12-25T10:00:00Z", nil},
		{"0 0 30 feb *", "UTC", "2026-01-01T00:00:00Z", nil},
	} {
		loc := zone(t, tc.tz)
		after, err := time.Parse(time.RFC3339, tc.after)
		if err != nil {
			t.Fatal(err)
		}
		anchor := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
		s, err := ParseSchedule(tc.spec, loc, anchor)
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		var got []string
		for i := 0; i < max(len(tc.want), 1); i++ {
			next, ok := s.Next(after)
			if !ok {
				break
			}
			got = append(got, next.In(loc).Format(time.RFC3339))
			after = next
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s in %s after %s:\n got %v\nwant %v", tc.spec, tc.tz, tc.after, got, tc.want)
		}
	}
}

func TestScheduleInvalid(t *testing.T) {
	for _, spec := range []string{
		"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8",
		"5-1 * * * *", "*/0 * * * *", "x * * * *", "* * * foo *", "@often", "every", "every 500ms",
		"every 0s", "every soon", "at tomorrow", "at 2026-13-01 10:00",
	} {
		if _, err := ParseSchedule(spec, time.UTC, time.Now()); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("ParseSchedule(%q) = %v, want ErrInvalid", spec, err)
		}
	}
}

// TestEveryLimit: every takes a period up to profiles.MaxDuration in any
// units, and refuses a longer one saying so; the occurrences of the
// longest go forward, never wrapping round to before the anchor.
func TestEveryLimit(t *testing.T) {
	anchor := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, spec := range []string{"every 106751d23h47m16s", "every 2562047h47m16s", "every 100000d", "every 2562047h"} {
		s, err := ParseSchedule(spec, time.UTC, anchor)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		after := anchor
		for range 3 {
			next, ok := s.Next(after)
			if !ok || !next.After(after) {
				t.Errorf("%s: after %s: %s, %v", spec, after, next, ok)
				break
			}
			after = next
		}
	}
	for _, spec := range []string{"every 106752d", "every 2562048h", "every 200000d", "every 15251w"} {
		_, err := ParseSchedule(spec, time.UTC, anchor)
		want := fmt.Sprintf("invalid schedule %q: every takes at most 106751d23h47m16s (about 292 years)", spec)
		if !errors.Is(err, fsstore.ErrInvalid) || err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}
