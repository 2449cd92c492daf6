package profiles

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

func TestParseDuration(t *testing.T) {
	day := 24 * time.Hour
	for in, want := range map[string]time.Duration{
		"30s": 30 * time.Second, "12h": 12 * time.Hour, "90d": 90 * day, "1w": 7 * day,
		"1w2d": 9 * day, "1h30m": 90 * time.Minute, "1.5d": 36 * time.Hour, "500ms": 500 * time.Millisecond,
	} {
		for _, parse := range []func(string) (time.Duration, error){ParseDuration, ParsePeriod} {
			got, err := parse(in)
			if err != nil || got != want {
				t.Errorf("%q = %v, %v; want %v", in, got, err, want)
			}
		}
	}
	// Zero is a cutoff (everything older than now), never a period.
	for _, in := range []string{"0", "0s", "0d", "0w0d", "0.0h"} {
		if got, err := ParseDuration(in); err != nil || got != 0 {
			t.Errorf("ParseDuration(%q) = %v, %v; want 0", in, got, err)
		}
		_, err := ParsePeriod(in)
		if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) || !strings.Contains(err.Error(), "longer than zero") {
			t.Errorf("ParsePeriod(%q): %v, want ErrInvalid naming it and saying it must be longer than zero", in, err)
		}
	}
	// Every refusal names the text as typed, not what was left of it.
	for _, in := range []string{"", "5", "d", "5x", "-1d", "1d-", "1h30x", "1 d", "9999999999999w", "1e3d", "1w1w99999999999999999h", "00"} {
		for _, parse := range []func(string) (time.Duration, error){ParseDuration, ParsePeriod} {
			_, err := parse(in)
			if !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("invalid duration %q", in)) {
				t.Errorf("%q: %v, want ErrInvalid naming %q", in, err, in)
			}
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"default", "a", "work-2", "x_y", "0", strings.Repeat("a", 64)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Work", "-x", "_x", "../x", "a/b", "a.b", ".", "a b", "é", strings.Repeat("a", 65)} {
		if err := CheckName(bad); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("CheckName(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

// The profile comes from the flag, else $HERMES_PROFILE, else
// active_profile, else default; a bad name from any of them is an error,
// never a fallback.
func TestResolveOrder(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HERMES_PROFILE", "")
	check := func(flag, wantName, wantFrom string) {
		t.Helper()
		p, err := Resolve(root, flag)
		if err != nil || p.Name != wantName || p.From != wantFrom {
			t.Errorf("Resolve(%q) = %+v, %v; want %s from %s", flag, p, err, wantName, wantFrom)
		}
	}
	check("", "default", "default")
	if err := Use(root, "work"); err != nil {
		t.Fatal(err)
	}
	check("", "work", "active_profile")
	t.Setenv("HERMES_PROFILE", "env")
	check("", "env", "env")
	check("flag", "flag", "flag")

	t.Setenv("HERMES_PROFILE", "Bad")
	if _, err := Resolve(root, ""); !errors.Is(err, fsstore.ErrInvalid) {
		t.Errorf("a bad $HERMES_PROFILE: %v, want ErrInvalid", err)
	}
	t.Setenv("HERMES_PROFILE", "")
	os.WriteFile(filepath.Join(root, "active_profile"), []byte("../etc\n"), 0o600)
	if _, err := Resolve(root, ""); !errors.Is(err, fsstore.ErrInvalid) {
		t.Errorf("a bad active_profile: %v, want ErrInvalid", err)
	}
}

// newProfile makes a profile's directory, as hermes would, under a root
// of its own.
func newProfile(t *testing.T) Profile {
	t.Helper()
	p := Profile{Root: t.TempDir(), Name: DefaultName}
	if err := fsstore.EnsureDir(p.Dir()); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	p := newProfile(t)
	dir := p.Dir()
	if c, err := Load(p); err != nil || c.Provider != "" {
		t.Fatalf("no config.yaml: %+v %v", c, err)
	}
	write := func(s string) { os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(s), 0o600) }
	write("")
	if _, err := Load(p); err != nil {
		t.Errorf("empty config.yaml: %v", err)
	}
	write("provider: exec\nkanban:\n  resume_on_respawn: false\ngateway:\n  max_stored_responses: 5\n")
	c, err := Load(p)
	if err != nil || c.Provider != "exec" || c.Kanban.ResumeOnRespawn == nil || *c.Kanban.ResumeOnRespawn || c.Gateway.MaxStoredResponses != 5 {
		t.Errorf("config: %+v %v", c, err)
	}
	for _, bad := range []string{"providr: echo\n", "provider: [\n", "gateway: 3\n"} {
		write(bad)
		if _, err := Load(p); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("config %q: %v, want ErrInvalid", bad, err)
		}
	}
}

// A config.yaml that does not decode is bad input whose error names the
// file, the line and the key.
func TestLoadNamesTheLine(t *testing.T) {
	p := newProfile(t)
	path := filepath.Join(p.Dir(), "config.yaml")
	if err := os.WriteFile(path, []byte("agent:\n  max_steps: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if !errors.Is(err, fsstore.ErrInvalid) || !strings.HasPrefix(err.Error(), path+": line 2: agent.max_steps: ") {
		t.Fatalf("err %v (%T): want ErrInvalid naming %s, line 2 and agent.max_steps", err, err, path)
	}
}

// TestDurationLimit: one maximum, MaxDuration, whatever the units: a
// duration at it is taken, written in any units; one past it, by a
// nanosecond, a digit or a sum, is refused naming the text and the
// maximum, never wrapped round or read as another duration.
func TestDurationLimit(t *testing.T) {
	if MaxDuration != 106751*24*time.Hour+23*time.Hour+47*time.Minute+16*time.Second {
		t.Fatalf("MaxDuration = %v", MaxDuration)
	}
	for _, tc := range []struct {
		in   string
		want time.Duration // -1: refused as too long
	}{
		{"106751d23h47m16s", MaxDuration},
		{"2562047h47m16s", MaxDuration},
		{"153722867m16s", MaxDuration},
		{"9223372036s", MaxDuration},
		{"9223372036000ms", MaxDuration},
		{"9223372036000000000ns", MaxDuration},
		{"15250w1d23h47m16s", MaxDuration},
		{"100000d", 100000 * 24 * time.Hour},
		{"2562047h", 2562047 * time.Hour},
		{"106751d", 106751 * 24 * time.Hour},
		{"15250w", 15250 * 7 * 24 * time.Hour},
		{"0.5w", 84 * time.Hour},
		{"106751d23h47m17s", -1},
		{"106751d23h47m16.000000001s", -1},
		{"9223372036000000001ns", -1},
		{"9223372037s", -1},
		{"2562048h", -1},
		{"2562047h47m16.854775807s", -1},
		{"2562047h47m16.854775808s", -1},
		{"106752d", -1},
		{"106751.99d", 106751*24*time.Hour + 23*time.Hour + 45*time.Minute + 36*time.Second},
		{"106751.999d", -1},
		{"15251w", -1},
		{"200000d", -1},
		{"9999999999999w", -1},
		{"99999999999999999999999h", -1},
		{"99999999999999999999999ns", -1},
		{"60000d60000d", -1},
		{"1w1w99999999999999999h", -1},
	} {
		got, err := ParseDuration(tc.in)
		if tc.want >= 0 {
			if err != nil || got != tc.want {
				t.Errorf("%q = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		want := fmt.Sprintf("invalid duration %q: longer than the longest duration, 106751d23h47m16s (about 292 years)", tc.in)
		if !errors.Is(err, fsstore.ErrInvalid) || err.Error() != want {
			t.Errorf("%q = %v, %v; want ErrInvalid %q", tc.in, got, err, want)
		}
	}
}
