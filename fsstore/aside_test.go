package fsstore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAsideOf: the names recovery gives its copies (every suffix freeName
// can write) are copies of their file, and nothing else is: not a record
// whose id contains a marker, not a marker without its unix time.
func TestAsideOf(t *testing.T) {
	copies := map[string]string{
		"abc.jsonl.torn-1700000000":             "abc.jsonl",
		"abc.jsonl.torn-1700000000.1":           "abc.jsonl",
		"abc.jsonl.torn-1700000000.12":          "abc.jsonl",
		"abc.jsonl.replaced-1700000000":         "abc.jsonl",
		"abc.jsonl.replaced-1700000000.3":       "abc.jsonl",
		"abc.json.corrupt-1700000000":           "abc.json",
		"abc.json.corrupt-1700000000.2":         "abc.json",
		"t1.events.jsonl.uncommitted-17":        "t1.events.jsonl",
		".catalog.jsonl.torn-5":                 ".catalog.jsonl",
		"abc.jsonl.keep.jsonl.torn-1700000000":  "abc.jsonl.keep.jsonl",
		"a.torn-1.jsonl.torn-2":                 "a.torn-1.jsonl",
		"abc.jsonl.torn-1700000000.json.torn-9": "abc.jsonl.torn-1700000000.json",
	}
	for name, want := range copies {
		if got, ok := AsideOf(name); !ok || got != want {
			t.Errorf("AsideOf(%q) = %q, %v; want %q, true", name, got, ok, want)
		}
	}
	for _, name := range []string{
		"abc.json", "abc.jsonl", "abc.lock",
		"abc.jsonl.keep.json", "abc.jsonl.keep.jsonl", "abc.jsonl.keep.lock",
		"abc.jsonl.torn-x.json", "abc.jsonl.torn-1700000000.json", "a.torn-5.lock",
		"abc.jsonl.torn-", "abc.jsonl.torn-.1", "abc.jsonl.torn-1.x", "abc.jsonl.torn-1.1.1",
		".torn-5", "abc.jsonl.torn5", "abc.json.corrupt-12a", "abc.jsonl.kept-5",
	} {
		if got, ok := AsideOf(name); ok {
			t.Errorf("AsideOf(%q) = %q, true; want false", name, got)
		}
	}
}

// TestCopiesAside: the copies of one record's files are found by the names
// MoveAside and CopyAside give them, and never the files of a record
// whose id begins with this one's.
func TestCopiesAside(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"abc.json", "abc.jsonl", "abc.lock",
		"abc.jsonl.keep.json", "abc.jsonl.keep.jsonl", "abc.jsonl.keep.lock", "abc.jsonl.keep.jsonl.torn-1",
		"abc.json.x.json", "abc.json.corrupt-9.json", "abcd.jsonl.torn-1", "ab.jsonl.torn-1",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for _, step := range []func() (string, error){
		func() (string, error) { return CopyAside(filepath.Join(dir, "abc.jsonl"), ".replaced-5") },
		func() (string, error) { return CopyAside(filepath.Join(dir, "abc.jsonl"), ".replaced-5") },
		func() (string, error) { return CopyAside(filepath.Join(dir, "abc.jsonl"), ".torn-6") },
		func() (string, error) { return CopyAside(filepath.Join(dir, "abc.json"), ".corrupt-7") },
		func() (string, error) { return MoveAside(filepath.Join(dir, "abc.json"), ".corrupt-7") },
	} {
		p, err := step()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}
	got, err := CopiesAside(dir, "abc.json", "abc.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("CopiesAside = %q; want %q", got, want)
	}
}

// TestCheckNewID: ids whose files would begin with another record's file
// name and a '.' are refused, naming the id and the rule; SafeID maps
// each to one that passes, the same way every time, and leaves a good id
// as it is.
func TestCheckNewID(t *testing.T) {
	refused := map[string]string{
		"abc.jsonl.keep":     "abc_jsonl.keep",
		"proj.jsonl.archive": "proj_jsonl.archive",
		"abc.json.x":         "abc_json.x",
		"abc.json":           "abc_json",
		"abc.jsonl":          "abc_jsonl",
		"abc.lock":           "abc_lock",
		"abc.log":            "abc_log",
		"abc.JSONL.keep":     "abc_JSONL.keep",
		"a.b.Lock.c":         "a.b_Lock.c",
		"a.json.jsonl":       "a_json_jsonl",
	}
	for id, safe := range refused {
		err := CheckNewID("session id", id)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"`+id+`"`) || !strings.Contains(err.Error(), "json, jsonl, lock or log") {
			t.Errorf("CheckNewID(%q) = %v; want ErrInvalid naming the id and the rule", id, err)
		}
		if got := SafeID(id); got != safe {
			t.Errorf("SafeID(%q) = %q; want %q", id, got, safe)
		}
		if err := CheckNewID("session id", SafeID(id)); err != nil {
			t.Errorf("CheckNewID(SafeID(%q)) = %v", id, err)
		}
	}
	for _, id := range []string{
		"abc", NewID(time.Now()), "json", "jsonl.x", "lock", "abc.jsonly", "abc.xjson", "abc_jsonl.keep",
		"a.b.c", "v1.2", "abc.torn-5", "abc.events",
	} {
		if err := CheckNewID("session id", id); err != nil {
			t.Errorf("CheckNewID(%q) = %v; want nil", id, err)
		}
		if got := SafeID(id); got != id {
			t.Errorf("SafeID(%q) = %q; want it unchanged", id, got)
		}
	}
	if err := CheckNewID("session id", "../x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("CheckNewID(../x) = %v; want CheckID's refusal", err)
	}
}
