package hosts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// The skew of a host's clock is measured against the shared filesystem's:
// the time the file server stamps on a file this host creates. Within
// Tolerance the clocks are taken to agree (a filesystem may keep whole
// seconds, a kernel stamps with a coarse clock); past it the host warns,
// and a scheduled time is judged by its clock less its skew (cron); past
// MaxSkew it claims nothing.
const (
	Tolerance = 2 * time.Second
	// MaxSkew is a quarter of a background task's lease (tasks.Lease,
	// 60 s), the slack its heartbeats allow.
	MaxSkew = 15 * time.Second
	// measureEvery is how long a measure is trusted, on this host's
	// monotonic clock.
	measureEvery = time.Minute
)

// Skew is a host's last measure of its clock, kept in hosts/<key>.json.
type Skew struct {
	Host string `json:"host"`
	// SkewMS is how far the host's clock was ahead of the filesystem's
	// (negative: behind), in milliseconds.
	SkewMS int64 `json:"skew_ms"`
	// MeasuredAt is the filesystem's time of the measure.
	MeasuredAt fsstore.Time `json:"measured_at"`
	// Boot and Uptime say when, on the host's monotonic clock, it was
	// measured: the host measures again a minute later.
	Boot   string        `json:"boot"`
	Uptime time.Duration `json:"uptime_ns"`
}

// Skew is s's skew as a duration.
func (s Skew) Skew() time.Duration { return time.Duration(s.SkewMS) * time.Millisecond }

// Clock is this host's clock as the shared filesystem sees it.
type Clock struct {
	Dir         string // <profile>/hosts
	Host, Boot  string
	LockTimeout time.Duration
	Now         func() time.Time     // fsstore.Now
	Uptime      func() time.Duration // fsstore.Uptime
	Warn        func(string)

	mu   sync.Mutex
	last *Skew // measured or read by this process
}

// NewClock returns this host's clock in the profile whose directory is
// profileDir.
func NewClock(profileDir string, lockTimeout time.Duration, warn func(string)) *Clock {
	return &Clock{Dir: filepath.Join(profileDir, "hosts"), Host: fsstore.ThisHost(), Boot: fsstore.BootID(),
		LockTimeout: lockTimeout, Now: fsstore.Now, Uptime: fsstore.Uptime, Warn: warn}
}

func (c *Clock) path() string { return filepath.Join(c.Dir, Key(c.Host)+".json") }

// Measure creates a file in hosts/, reads the time the filesystem stamped
// on it, removes it, and records the skew: this host's clock halfway
// through the create, less that time. A skew past Tolerance is warned of.
func (c *Clock) Measure() (Skew, error) {
	if err := fsstore.EnsureDir(c.Dir); err != nil {
		return Skew{}, err
	}
	probe := filepath.Join(c.Dir, "."+Key(c.Host)+".probe-"+fsstore.NewID(c.Now()))
	before := c.Now()
	f, err := os.OpenFile(probe, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	after := c.Now()
	if err != nil {
		return Skew{}, fmt.Errorf("measure this host's clock: %w", err)
	}
	fi, err := f.Stat()
	f.Close()
	os.Remove(probe)
	if err != nil {
		return Skew{}, fmt.Errorf("measure this host's clock: %w", err)
	}
	local := before.Add(after.Sub(before) / 2)
	s := Skew{Host: c.Host, SkewMS: local.Sub(fi.ModTime()).Milliseconds(), MeasuredAt: fsstore.TimeOf(fi.ModTime()),
		Boot: c.Boot, Uptime: c.Uptime()}
	unlock, err := fsstore.Lock(c.path()+".lock", c.LockTimeout)
	if err != nil {
		return s, err
	}
	defer unlock()
	b, err := fsstore.EncodeDoc(c.path(), s)
	if err == nil {
		err = fsstore.WriteCacheFile(c.path(), b)
	}
	if err != nil {
		return s, err
	}
	c.remember(s)
	return s, nil
}

// warned holds the profiles' clock documents of which this process has
// warned: a process that opens several stores warns once.
var warned sync.Map

// remember keeps s as this process's measure, and warns of a skew past
// Tolerance, once per process and profile.
func (c *Clock) remember(s Skew) {
	c.mu.Lock()
	c.last = &s
	c.mu.Unlock()
	if !outside(s.Skew(), Tolerance) || c.Warn == nil {
		return
	}
	if _, done := warned.LoadOrStore(c.path(), true); !done {
		c.Warn(fmt.Sprintf("this host's clock is %s the shared filesystem's (measured %s); "+
			"hosts that share a profile should keep their clocks within %s (NTP)", Describe(s.Skew()), s.MeasuredAt, Tolerance))
	}
}

func outside(d, limit time.Duration) bool { return d > limit || d < -limit }

// Describe says a skew in words, to a tenth of a second: "5m0s ahead
// of", "2.5s behind".
func Describe(d time.Duration) string {
	d = d.Round(100 * time.Millisecond)
	switch {
	case d > 0:
		return d.String() + " ahead of"
	case d < 0:
		return (-d).String() + " behind"
	}
	return "in step with"
}

// Current is this host's skew: its last measure, when it was taken within
// a minute on this host's monotonic clock, else a new one.
func (c *Clock) Current() (time.Duration, error) {
	now := c.Uptime()
	fresh := func(s *Skew) bool {
		return s != nil && s.Boot == c.Boot && s.Uptime <= now && now-s.Uptime < measureEvery
	}
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if fresh(last) {
		return last.Skew(), nil
	}
	var s Skew
	if err := fsstore.ReadDoc(c.path(), &s); err == nil && fresh(&s) {
		c.remember(s)
		return s.Skew(), nil
	}
	s, err := c.Measure()
	return s.Skew(), err
}

// Offset is what a host subtracts from its clock to judge a scheduled
// time (cron): its skew when it is ahead past Tolerance, else 0. A skew
// past MaxSkew either way is refused (ErrRefused): the host claims
// nothing until its clock is set.
func (c *Clock) Offset() (time.Duration, error) {
	skew, err := c.Current()
	if err != nil {
		return 0, err
	}
	if outside(skew, MaxSkew) {
		return 0, fsstore.Refusedf("this host's clock is %s the shared filesystem's: past %s (a quarter of a lease) it claims nothing; set its clock (NTP)",
			Describe(skew), MaxSkew)
	}
	if skew > Tolerance {
		return skew, nil
	}
	return 0, nil
}

// All reads the last skew of every host that measured one, by host. A
// document that does not parse (a power cut while it was written: it is
// not synced) is left out; its host measures again.
func All(profileDir string) ([]Skew, error) {
	dir := filepath.Join(profileDir, "hosts")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Skew
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".seen.json") || strings.HasPrefix(name, ".") {
			continue
		}
		var s Skew
		var corrupt *fsstore.CorruptError
		if err := fsstore.ReadDoc(filepath.Join(dir, name), &s); errors.As(err, &corrupt) {
			continue
		} else if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out, nil
}
