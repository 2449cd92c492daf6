package cron

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// benchStore holds n jobs, none due for a year, written as Add writes them
// but unsynced, and with the due index built once (RebuildIndex) rather
// than n times: the fixture's cost is not what is measured.
func benchStore(b *testing.B, n int) *Store {
	dir := b.TempDir()
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	s := NewStore(dir, 5*time.Second, func(string) {})
	s.Now = func() time.Time { return now }
	if err := fsstore.EnsureDir(s.jobsDir()); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		j := Job{ID: fmt.Sprintf("20260601_090000_%06x", i), Name: fmt.Sprintf("job %d", i), Schedule: "@yearly", TZ: "UTC",
			Command: []string{"true"}, Tools: []string{}, Session: SessionNew, CatchUp: CatchUpOnce,
			NextDue: fsstore.TimeOf(now.AddDate(1, 0, 0).Add(time.Duration(i) * time.Second)), CreatedAt: fsstore.TimeOf(now)}
		if err := os.WriteFile(s.docPath(j.ID), mustEncode(b, j), fsstore.FileMode); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.RebuildIndex(); err != nil {
		b.Fatal(err)
	}
	return s
}

func mustEncode(b *testing.B, j Job) []byte {
	out, err := fsstore.EncodeDocument(&j)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// benchTick is the store's part of a tick that finds nothing due: read
// the due index as far as the first job not due.
func benchTick(b *testing.B, n int) {
	s := benchStore(b, n)
	for b.Loop() {
		ids, err := s.Due(s.Now())
		if err != nil || len(ids) != 0 {
			b.Fatal(ids, err)
		}
	}
}

func BenchmarkTick10(b *testing.B)    { benchTick(b, 10) }
func BenchmarkTick10000(b *testing.B) { benchTick(b, 10000) }
