package main

import (
	"strings"
	"testing"
)

func TestCheckTranscript(t *testing.T) {
	good := `{"seq":1,"ts":"x","role":"user","content":"tok-a-1"}
{"seq":2,"ts":"x","role":"assistant","content":[{"type":"text","text":"hi"}]}
{"seq":3,"ts":"x","role":"user","content":"tok-a-1"}
`
	tr, probs := checkTranscript([]byte(good))
	if len(probs) != 0 || tr.lines != 3 || tr.tokens["tok-a-1"] != 2 {
		t.Fatalf("good transcript: %+v %v", tr, probs)
	}
	if tr, probs := checkTranscript(nil); len(probs) != 0 || tr.lines != 0 {
		t.Fatalf("empty transcript: %+v %v", tr, probs)
	}
	for name, in := range map[string]string{
		"gap":       `{"seq":1,"content":"a"}` + "\n" + `{"seq":3,"content":"b"}` + "\n",
		"no seq":    `{"content":"a"}` + "\n",
		"torn tail": `{"seq":1,"content":"a"}` + "\n" + `{"seq":2,"con`,
		"garbage":   `{"seq":1,"content":"a"}` + "\n" + "xx\n",
	} {
		if _, probs := checkTranscript([]byte(in)); len(probs) == 0 {
			t.Errorf("%s: no problem found", name)
		}
	}
}

func TestCheckTorn(t *testing.T) {
	for in, bad := range map[string]bool{
		`{"seq":4,"ro`:        false,
		`{"seq":4}` + "\n":    false,
		"{\"a\":1}\n{\"b\"":   true,
		"{\"a\":1}\n{\"b\"\n": true,
	} {
		if got := checkTorn([]byte(in)) != ""; got != bad {
			t.Errorf("checkTorn(%q) bad=%v, want %v", in, got, bad)
		}
	}
}

func TestValidTitles(t *testing.T) {
	keys := func(m map[string]bool) string {
		var s []string
		for _, k := range []string{"", "a", "b", "c"} {
			if m[k] {
				s = append(s, k+".")
			}
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		rs   []renameAttempt
		want string
	}{
		{nil, "."},
		{[]renameAttempt{{"a", false}}, ".,a."},
		{[]renameAttempt{{"a", true}, {"b", false}}, "a.,b."},
		{[]renameAttempt{{"a", true}, {"b", true}, {"c", false}}, "b.,c."},
		{[]renameAttempt{{"a", false}, {"b", true}}, "b."},
	} {
		if got := keys(validTitles(c.rs)); got != c.want {
			t.Errorf("validTitles(%v) = %s, want %s", c.rs, got, c.want)
		}
	}
}
