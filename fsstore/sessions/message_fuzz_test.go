package sessions

import (
	"reflect"
	"testing"
)

// FuzzParseStored checks the fast transcript reader against the full one.
//
//   - Any line ParseMessage accepts, once stored (seq and ts set, written by
//     MarshalJSON), is read by parseStored to the same Message as
//     ParseMessage reads from it.
//   - parseStored never panics, and a line it accepts is one ParseMessage
//     accepts too, with an equal result: the fast path may decline a line
//     (the caller then falls back), but it must never accept what the full
//     decoder would call corrupt, nor read it differently.
func FuzzParseStored(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hello"}`,
		`{"seq":1,"ts":"2026-11-21T02:07:34.000000Z","role":"assistant","content":[{"type":"text","text":"hi"}],"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":\"}\"}"}}]}`,
		`{"seq":2,"ts":"2026-11-21T02:07:35.000000Z","role":"tool","content":"ok","tool_call_id":"c1","name":"f"}`,
		`{"role":"system","content":null,"zeta":{"b":[1,2,{"c":"\"]}"}]},"alpha":-1.5e3}`,
		`{"role":"user","content":"esc \" \\ \u00e9 \n \u2028 <&>","name":null,"tool_call_id":null}`,
		`{ "role" : "user" , "content" : [ 1 , 2 ] }`,
		`{"seq":3,"ts":"","role":"user"}`,
		`{"seq":4,"ts":"2026-11-21T02:07:35Z","role":"user","content":"a"}x`,
		`{"seq":5,"ts":"2026-11-21T02:07:35Z","role":"user","content":"\\"}`,
		`{"seq":6,"ts":"2026-11-21T02:07:35Z","role":"user","content":"\\\"}"}`,
		`{"seq":7,"ts":"2026-11-21T02:07:35Z","role":"user","\u0063ontent":"x"}`,
		`{"role":"user","content":"caf\xff"}`,
		`null`, `[]`, `{}`, `{"seq":1,`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		// The fast path on arbitrary bytes: no panic, and nothing the full
		// decoder rejects or reads differently.
		if fast, ok := parseStored(line, string(line)); ok {
			full, err := ParseMessage(line)
			if err != nil {
				t.Fatalf("parseStored accepts %q, ParseMessage rejects it: %v", line, err)
			}
			if !reflect.DeepEqual(fast, full) {
				t.Fatalf("parseStored and ParseMessage disagree on %q:\nfast %#v\nfull %#v", line, fast, full)
			}
		}

		// The round trip through the store's own writer.
		m, err := ParseMessage(line)
		if err != nil {
			return
		}
		m.Seq, m.TS = 42, "2026-11-21T02:07:34.123456Z"
		out, err := m.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of %q: %v", line, err)
		}
		full, err := ParseMessage(out)
		if err != nil {
			t.Fatalf("ParseMessage rejects MarshalJSON's %q (from %q): %v", out, line, err)
		}
		fast, ok := parseStored(out, string(out))
		if !ok {
			t.Fatalf("parseStored rejects MarshalJSON's %q (from %q)", out, line)
		}
		if !reflect.DeepEqual(fast, full) {
			t.Fatalf("on MarshalJSON's %q (from %q):\nfast %#v\nfull %#v", out, line, fast, full)
		}
		if !full.SameAs(m) || full.Seq != m.Seq || full.TS != m.TS {
			t.Fatalf("MarshalJSON round trip changed %#v into %#v", m, full)
		}
	})
}
