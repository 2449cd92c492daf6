package fsstore

import (
	"reflect"
	"testing"
)

// parseStored must read every line the store writes exactly as the full
// decoder does, and refuse (so the caller falls back) any other shape.
func TestParseStoredMatchesParseMessage(t *testing.T) {
	lines := []string{
		`{"role":"user","content":"hello"}`,
		`{"role":"user","content":"quotes \" and \\ backslashes \\\" and \u00e9 é \n newlines"}`,
		`{"role":"user","content":"ends in a backslash \\"}`,
		`{"role":"user","content":[{"type":"text","text":"a \"part\" {with} [brackets]"},{"type":"image_url","image_url":{"url":"data:x"}}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"path\":\"/tmp\"}"}}]}`,
		`{"role":"tool","content":"out","tool_call_id":"c\"1","name":"ls"}`,
		`{"role":"assistant","content":"x","reasoning":"think","z":{"n":[1,2.5e3,true,null]}}`,
		`{"role":"system","content":""}`,
		`{"role":"assistant"}`,
	}
	for _, in := range lines {
		m, err := ParseMessage([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		m.Seq, m.TS = 42, "2026-11-21T02:07:34.512345Z"
		stored, _ := m.MarshalJSON()
		want, err := ParseMessage(stored)
		if err != nil {
			t.Fatalf("%s: %v", stored, err)
		}
		got, ok := parseStored(stored, string(stored))
		if !ok {
			t.Errorf("parseStored refused a stored line: %s", stored)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parseStored(%s)\n got %#v\nwant %#v", stored, got, want)
		}
	}
}

func TestParseStoredRefusesOtherShapes(t *testing.T) {
	for _, in := range []string{
		`{"role":"user","seq":1,"ts":"2026-11-21T00:00:00Z","content":"x"}`,
		`{ "seq":1,"ts":"2026-11-21T00:00:00Z","role":"user","content":"x"}`,
		`{"seq":1,"ts":"2026-11-21T00:00:00Z","role":"boss","content":"x"}`,
		`{"seq":0,"ts":"2026-11-21T00:00:00Z","role":"user","content":"x"}`,
		`{"seq":1,"ts":"2026-11-21T00:00:00Z","role":"user","content":"x"`,
		`{"seq":1,"ts":"2026-11-21T00:00:00Z","role":"user","content":"x}`,
		`{"seq":1,"ts":"2026-11-21T00:00:00Z","role":"user","content":12}`,
		`{"seq":1,"ts":"2026-11-21T00:00:00Z","role":"user","content":"x"} `,
		`{"seq":1,"ts":"2026-11-21T00:00:00Z","role":"user","content":[1,2}`,
	} {
		if _, ok := parseStored([]byte(in), in); ok {
			t.Errorf("parseStored accepted %s", in)
		}
	}
}
