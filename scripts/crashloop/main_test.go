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

func TestCheckToolCalls(t *testing.T) {
	call := func(ids ...string) string {
		var cs []string
		for _, id := range ids {
			cs = append(cs, `{"id":"`+id+`","type":"function","function":{"name":"terminal","arguments":"{}"}}`)
		}
		return `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(cs, ",") + `]}` + "\n"
	}
	result := func(id, text string) string {
		return `{"role":"tool","content":"` + text + `","tool_call_id":"` + id + `"}` + "\n"
	}
	user := `{"role":"user","content":"go"}` + "\n"
	done := `{"role":"assistant","content":"done go"}` + "\n"
	for _, c := range []struct {
		name                    string
		in                      string
		unanswered, interrupted int
		bad                     string
	}{
		{"good", user + call("a", "b") + result("a", "ok") + result("b", "interrupted: x") + done, 0, 1, ""},
		{"unanswered", user + call("a", "b") + result("a", "ok"), 1, 0, ""},
		{"answered twice", user + call("a") + result("a", "ok") + result("a", "interrupted: x"), 0, 1, "answered twice"},
		{"orphan", user + result("z", "ok"), 0, 0, "which no earlier message made"},
		{"made twice", user + call("a") + result("a", "ok") + call("a"), 0, 0, "made twice"},
	} {
		got, probs := checkToolCalls([]byte(c.in))
		if got.unanswered != c.unanswered || got.interrupted != c.interrupted {
			t.Errorf("%s: %+v", c.name, got)
		}
		if (c.bad == "") != (len(probs) == 0) || (c.bad != "" && !strings.Contains(strings.Join(probs, "; "), c.bad)) {
			t.Errorf("%s: problems %q, want %q", c.name, probs, c.bad)
		}
	}
	if got, _ := checkToolCalls([]byte(user + call("a") + result("a", "ok") + done)); !got.texts["done go"] {
		t.Error("the reply's text is not among the texts")
	}
}

func TestCheckRanTwice(t *testing.T) {
	if got := checkRanTwice([]byte("a\nb\na\nc\n")); len(got) != 1 || got[0] != "a" {
		t.Errorf("ran twice: %q", got)
	}
	if got := checkRanTwice([]byte("a\nb\n")); len(got) != 0 {
		t.Errorf("ran twice: %q", got)
	}
}

func TestUsageOf(t *testing.T) {
	data := `{"role":"user","content":"t1"}
{"role":"assistant","content":"done t1","usage":{"id":"u1","input":10,"output":1}}
{"role":"assistant","content":"again","usage":{"id":"u1","input":10,"output":1}}
{"role":"assistant","content":"done t2"}
`
	ids, costed := usageOf([]byte(data))
	if len(ids) != 1 || !costed["done t1"] || costed["done t2"] {
		t.Errorf("ids %v, costed %v", ids, costed)
	}
}
