package sessions

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeCommon checks UnmarshalJSON's fast path against its full
// decoder: on any valid JSON message, decodeCommon either declines (the
// full decoder reads it) or reads it exactly as the full decoder does. The
// full decoder is made to run by a key the fast path does not take,
// removed from the result.
func FuzzDecodeCommon(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hello"}`,
		`{ "content" : [ {"type": "text", "text": "a b"} ] , "role" : "assistant" }`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\": \"}\"}"}}]}`,
		`{"role":"tool","content":"ok","tool_call_id":"c1","name":"f"}`,
		`{"role":"tool","content":"ok","tool_call_id":null,"name":null}`,
		`{"role":"user","content":"esc \" \\ \u00e9 \n \u2028 <&>"}`,
		`{"role":"us\u0065r","content":"x"}`,
		`{"role":"user","role":"system"}`,
		`{"role":"user","\u0063ontent":"x"}`,
		`{"role":"user","content":"caf` + "\xff" + `"}`,
		`{"role":1}`, `{"role":"user","name":2}`, `{}`, `[]`, `null`, `"x"`,
		"{\n\t\"role\":\r\"user\" ,\"content\":{\"a\":[1, 2.5e3, true, null]}\n}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var fast Message
		if !fast.decodeCommon(b) {
			return
		}
		// The same object with one more key, which sends it to the full
		// decoder.
		i := bytes.IndexByte(b, '{')
		forced := append(append(append([]byte{}, b[:i+1]...), `"x_full":0,`...), b[i+1:]...)
		var full Message
		if err := json.Unmarshal(forced, &full); err != nil {
			t.Fatalf("%q: the fast path read it, the full decoder says %v", b, err)
		}
		delete(full.Extra, "x_full")
		if len(full.Extra) == 0 {
			full.Extra = nil
		}
		if !reflect.DeepEqual(fast, full) {
			t.Fatalf("%q: the fast path read %+v, the full decoder %+v", b, fast, full)
		}
	})
}

// BenchmarkParseMessage is ParseMessage of a client's message: a user
// message of about 170 bytes, compact (as the SDKs send it) and spaced (as
// Python's json.dumps does).
func BenchmarkParseMessage(b *testing.B) {
	for name, line := range map[string]string{
		"compact": `{"role":"user","content":"question 1: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`,
		"spaced":  `{"role": "user", "content": "question 1: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`,
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := ParseMessage([]byte(line)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCutArray checks CutArray against encoding/json: on any valid JSON,
// it cuts an array into the elements []json.RawMessage holds, says null
// is none, and refuses every other value.
func FuzzCutArray(f *testing.F) {
	for _, s := range []string{
		`[]`, `null`, ` [ 1 , "a\"]" , {"b": [2, {}]}, [], true, null ] `, `[{"role":"user","content":"x"}]`,
		`{}`, `"x"`, `1`, `[1,[2,[3]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var got []json.RawMessage
		isList, err := CutArray(b, func(e []byte) { got = append(got, e) })
		var want []json.RawMessage
		werr := json.Unmarshal(b, &want)
		switch {
		case (err == nil) != (werr == nil):
			t.Fatalf("%q: CutArray says %v, encoding/json %v", b, err, werr)
		case err == nil && isList != (want != nil):
			t.Fatalf("%q: CutArray says list=%v, encoding/json read %q", b, isList, want)
		case err == nil && isList && !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0):
			t.Fatalf("%q: CutArray cut %q, encoding/json %q", b, got, want)
		}
	})
}
