package hosts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// aheadClock is host's clock, ahead of this machine's (whose filesystem
// stamps the probe) by ahead, its warnings collected.
func aheadClock(t *testing.T, profileDir, host string, ahead time.Duration, m *mono, warned *[]string) *Clock {
	c := NewClock(profileDir, time.Second, func(msg string) { *warned = append(*warned, msg) })
	c.Host, c.Boot, c.Uptime = host, "boot-1", m.Uptime
	c.Now = func() time.Time { return time.Now().Add(ahead) }
	return c
}

// Each host measures its clock against the time the filesystem stamps on
// a file it creates, keeps its last skew in a document of its own, warns
// past Tolerance, and refuses to claim past MaxSkew; All lists every
// host's last skew.
func TestSkewMeasured(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profiles", "p")
	m := &mono{now: time.Hour}
	var warned []string
	inStep := aheadClock(t, dir, "host-b", 0, m, &warned)
	if off, err := inStep.Offset(); err != nil || off != 0 {
		t.Fatalf("a host in step: offset %v, %v", off, err)
	}
	few := aheadClock(t, dir, "host-c", 10*time.Second, m, &warned)
	off, err := few.Offset()
	if err != nil || off < 9*time.Second || off > 11*time.Second {
		t.Fatalf("a host 10 s ahead: offset %v, %v", off, err)
	}
	far := aheadClock(t, dir, "host-a", 5*time.Minute, m, &warned)
	_, err = far.Offset()
	if !errors.Is(err, fsstore.ErrRefused) || !strings.Contains(err.Error(), "s ahead of the shared filesystem's: past 15s") {
		t.Fatalf("a host 5 minutes ahead: %v, want refused", err)
	}
	if len(warned) != 2 || !strings.Contains(warned[0], "clock is 10") || !strings.Contains(warned[1], "clock is 5m0") {
		t.Fatalf("warnings %q", warned)
	}
	all, err := All(dir)
	if err != nil || len(all) != 3 {
		t.Fatalf("All = %+v, %v", all, err)
	}
	if all[0].Host != "host-a" || all[0].Skew() < 299*time.Second || all[1].Host != "host-b" || all[1].Skew() > time.Second {
		t.Fatalf("All = %+v", all)
	}
	// Within a minute of its monotonic clock the last measure stands,
	// read by another process; then the host measures again.
	again := aheadClock(t, dir, "host-a", 0, m, &warned)
	if skew, err := again.Current(); err != nil || skew < 299*time.Second {
		t.Fatalf("the last measure, read again: %v, %v", skew, err)
	}
	m.now += measureEvery
	if skew, err := again.Current(); err != nil || skew > time.Second {
		t.Fatalf("measured again after a minute: %v, %v", skew, err)
	}
}

// fsck reports the hosts whose last skew is past Tolerance, a problem
// past MaxSkew, and moves a probe a crashed measure left to lost+found.
func TestCheckSkews(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profiles", "p")
	m := &mono{now: time.Hour}
	var warned []string
	for host, ahead := range map[string]time.Duration{"in-step": 0, "few": 5 * time.Second, "far": -5 * time.Minute} {
		if _, err := aheadClock(t, dir, host, ahead, m, &warned).Measure(); err != nil {
			t.Fatal(err)
		}
	}
	probe := filepath.Join(dir, "hosts", "."+Key("gone")+".probe-20261121_020734_aaaaaa")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(probe, old, old)
	lostFound := filepath.Join(dir, "lost+found")
	got, err := Check(dir, true, lostFound)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, f := range got {
		text = append(text, fmt.Sprintf("%v %v %s", f.Problem, f.Repaired, f.What))
	}
	// To a tenth of a second: a loaded machine may take that long to
	// create the probe.
	want := []string{"true false clock of far: 5m0", "false false clock of few: 5",
		"true true probe of a clock measure that did not finish"}
	if len(text) != len(want) {
		t.Fatalf("findings %q", text)
	}
	for i := range want {
		if !strings.HasPrefix(text[i], want[i]) {
			t.Fatalf("finding %d: %q, want %q…", i, text[i], want[i])
		}
	}
	if _, err := os.Stat(probe); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("probe left: %v", err)
	}
}
