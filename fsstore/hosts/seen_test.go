package hosts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

type mono struct{ now time.Duration }

func (m *mono) Uptime() time.Duration { return m.now }

func newSeen(t *testing.T, host string, m *mono) *Seen {
	return &Seen{Dir: filepath.Join(t.TempDir(), "profiles", "p", "hosts"), Host: host, Boot: "boot-1", LockTimeout: time.Second, Clock: m.Uptime}
}

// A lease's watch starts when its beat is first seen and again at each
// change, runs on the host's monotonic clock, survives the process (it is
// a document), and starts again after a reboot.
func TestWatch(t *testing.T) {
	m := &mono{now: time.Hour}
	s := newSeen(t, "host-a", m)
	watch := func(beat string) time.Duration {
		t.Helper()
		d, err := s.Watch("task x", beat, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := watch("1"); d != 0 {
		t.Fatalf("first sighting watched %v", d)
	}
	m.now += 30 * time.Second
	if d := watch("1"); d != 30*time.Second {
		t.Fatalf("unchanged beat watched %v, want 30s", d)
	}
	if d := s.Peek("task x", "1"); d != 30*time.Second {
		t.Fatalf("peek %v", d)
	}
	if d := watch("2"); d != 0 {
		t.Fatalf("a new beat watched %v", d)
	}
	m.now += 10 * time.Second
	again := *s
	if d, err := again.Watch("task x", "2", time.Minute); err != nil || d != 10*time.Second {
		t.Fatalf("another process of the host: %v, %v", d, err)
	}
	// A reboot: the monotonic clock starts again, the sightings too.
	rebooted := *s
	rebooted.Boot, rebooted.Clock = "boot-2", (&mono{now: time.Second}).Uptime
	if d := rebooted.Peek("task x", "2"); d != 0 {
		t.Fatalf("after a reboot, peek %v", d)
	}
	if d, err := rebooted.Watch("task x", "2", time.Minute); err != nil || d != 0 {
		t.Fatalf("after a reboot: %v, %v", d, err)
	}
}

// A sighting long past its lease is forgotten at the next write; the one
// being looked at never is.
func TestWatchForgets(t *testing.T) {
	m := &mono{now: time.Hour}
	s := newSeen(t, "host-a", m)
	s.Watch("old", "1", time.Minute)
	s.Watch("kept", "1", time.Minute)
	m.now += time.Minute + forgetAfter + time.Second
	if d, _ := s.Watch("kept", "1", time.Minute); d != time.Minute+forgetAfter+time.Second {
		t.Fatalf("the sighting looked at was forgotten: %v", d)
	}
	if d := s.Peek("old", "1"); d == 0 {
		t.Fatal("forgotten without a write")
	}
	s.Watch("kept", "2", time.Minute)
	if d := s.Peek("old", "1"); d != 0 {
		t.Fatalf("a sighting long past its lease was kept: %v", d)
	}
}

// A document that does not parse is quarantined and reported; the next
// watch starts again.
func TestWatchCorrupt(t *testing.T) {
	m := &mono{now: time.Hour}
	s := newSeen(t, "host-a", m)
	if _, err := s.Watch("k", "1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path(), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	var corrupt *fsstore.CorruptError
	if _, err := s.Watch("k", "1", time.Minute); !errors.As(err, &corrupt) {
		t.Fatalf("watch over a corrupt document: %v", err)
	}
	asides, _ := filepath.Glob(s.path() + ".corrupt-*")
	if len(asides) != 1 {
		t.Fatalf("moved aside: %v", asides)
	}
	if d, err := s.Watch("k", "1", time.Minute); err != nil || d != 0 {
		t.Fatalf("after the quarantine: %v, %v", d, err)
	}
}
