package sessions

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
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

// stored returns a line in the stored form with the fields after role
// given by rest (which starts with a comma, or is empty).
func stored(rest string) string {
	return `{"seq":7,"ts":"2026-11-21T02:07:34.512345Z","role":"user"` + rest + `}`
}

// A line damaged inside a value, with its shape intact, is one the full
// decoder rejects: parseStored must refuse it too, so that the caller's
// fallback reports it.
func TestParseStoredRefusesDamagedValues(t *testing.T) {
	for _, in := range []string{
		stored(`,"content":"a` + "\x01" + `b"`),
		stored(`,"content":"tab` + "\t" + `inside"`),
		stored(`,"content":"new` + "\n" + `line"`),
		stored(`,"content":"` + "\x1f" + `"`),
		stored(`,"content":"an \q escape"`),
		stored(`,"content":"\x41"`),
		stored(`,"content":"\u12"`),
		stored(`,"content":"\u12g4 truncated"`),
		stored(`,"content":"\U00e9"`),
		stored(`,"content":"ends in a lone backslash \"`),
		stored(`,"content":"0123456789abcdef` + "\x00" + `"`),
		stored(`,"content":nul`),
		stored(`,"content":nullx`),
		stored(`,"content":[1 2]`),
		stored(`,"content":[1,]`),
		stored(`,"content":[,1]`),
		stored(`,"content":[1,,2]`),
		stored(`,"content":[{"type":"text","text":"a` + "\x02" + `"}]`),
		stored(`,"content":[{"type":"text"]}`),
		stored(`,"content":[tru]`),
		stored(`,"tool_calls":[{"a"}]`),
		stored(`,"tool_calls":[{"id":"c1",}]`),
		stored(`,"tool_calls":[1:2]`),
		stored(`,"x":{"a"}`),
		stored(`,"x":{"a":}`),
		stored(`,"x":{1:2}`),
		stored(`,"x":{"a":1]`),
		stored(`,"x":tru`),
		stored(`,"x":truex`),
		stored(`,"x":nul`),
		stored(`,"x":01`),
		stored(`,"x":1.`),
		stored(`,"x":.5`),
		stored(`,"x":-`),
		stored(`,"x":+1`),
		stored(`,"x":1e`),
		stored(`,"x":0x10`),
		stored(`,"x":"bad \escape"`),
		stored(`,"x":"ctl` + "\x7f\x10" + `"`),
		stored(`,"na` + "\x01" + `me":"x"`),
		stored(`,"\z":"x"`),
		stored(`,"name":"f` + "\x0b" + `"`),
		stored(`,"tool_call_id":"c\u00"`),
		`{"seq":01,"ts":"2026-11-21T02:07:34.512345Z","role":"user"}`,
		`{"seq":+1,"ts":"2026-11-21T02:07:34.512345Z","role":"user"}`,
		`{"seq":1,"ts":"2026-11-21T02:07:34.512345` + "\xff" + `Z","role":"user"}`,
		`{"seq":1,"ts":"2026-11-21T02:07:34` + "\x01" + `Z","role":"user"}`,
		`{"seq":1,"ts":"yesterday","role":"user"}`,
		`{"seq":1,"ts":"2026-02-29T02:07:34Z","role":"user"}`,
		`{"seq":1,"ts":"2026-11-21T24:07:34Z","role":"user"}`,
		`{"seq":1,"ts":"2026-11-21 02:07:34Z","role":"user"}`,
	} {
		if _, err := ParseMessage([]byte(in)); err == nil {
			t.Errorf("ParseMessage accepts %q: not a damaged line", in)
		}
		if _, ok := parseStored([]byte(in), in); ok {
			t.Errorf("parseStored accepts %q", in)
		}
	}
}

// The checks must not turn the fast path away from lines that are valid:
// each of these is read by parseStored itself, to what ParseMessage reads.
func TestParseStoredReadsValidValues(t *testing.T) {
	lines := []string{
		stored(`,"content":"every escape: \" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00 \u2028 \u0000"`),
		stored(`,"content":"a lone surrogate \ud800 is valid JSON"`),
		stored(`,"content":"non-ASCII: héllo, 日本語, 😀, and DEL ` + "\x7f" + `"`),
		// encoding/json keeps invalid UTF-8 in a raw value as it is.
		stored(`,"content":"invalid UTF-8 ` + "\xff\xfe\xc3" + ` kept"`),
		stored(`,"content":"\\"`),
		stored(`,"content":"\\\""`),
		stored(`,"content":""`),
		stored(`,"content":null`),
		stored(`,"content":[[1,[2,{"a":[true,false,null,-0.5e+10,0,1E3,"\u0041"]}]],{},[]]`),
		stored(`,"content":[{"type":"text","text":"a \"part\" {with} [brackets] \\"}]`),
		stored(`,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":\"}\"}"}}],"tool_call_id":"c\"1","name":"caf\u00e9"`),
		stored(`,"tool_calls":null`),
		stored(`,"\u0063ontent":"x"`),
		stored(`,"a":0,"b":-1.5e-3,"c":true,"d":false,"e":null,"f":"s\/","g":{"h":[{}]},"日本":"x"`),
		`{"seq":9223372036854775807,"ts":"2026-11-21T02:07:34Z","role":"assistant"}`,
		`{"seq":1,"ts":"2024-02-29T23:59:59.123456789Z","role":"tool"}`,
		`{"seq":1,"ts":"2026-11-21T02:07:34.5Z","role":"system"}`,
		`{"seq":1,"ts":"","role":"system"}`,
	}
	// Every length and position around the eight-byte steps of the string
	// check.
	for n := range 20 {
		for _, c := range []string{`\n`, `\\`, `\"`, `\u00e9`, "é", "\x7f"} {
			s := strings.Repeat("a", n) + c + strings.Repeat("b", 19-n)
			lines = append(lines, stored(`,"content":"`+s+`","name":"`+s+`"`))
		}
	}
	for _, in := range lines {
		want, err := ParseMessage([]byte(in))
		if err != nil {
			t.Errorf("ParseMessage(%q): %v", in, err)
			continue
		}
		got, ok := parseStored([]byte(in), in)
		if !ok {
			t.Errorf("parseStored refused a valid line: %q", in)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parseStored(%q)\n got %#v\nwant %#v", in, got, want)
		}
	}
}

// The same sweep for damage: a byte the string check must catch, at every
// position around its eight-byte steps.
func TestParseStoredRefusesDamageAtEveryPosition(t *testing.T) {
	for n := range 20 {
		for _, c := range []string{"\x00", "\x1f", "\n", `\q`, `\u12`, `\`} {
			// z is neither an escape letter nor a hex digit.
			s := strings.Repeat("a", n) + c + strings.Repeat("z", 19-n)
			for _, in := range []string{stored(`,"content":"` + s + `"`), stored(`,"name":"` + s + `"`)} {
				if _, err := ParseMessage([]byte(in)); err == nil {
					t.Errorf("ParseMessage accepts %q: not a damaged line", in)
				}
				if _, ok := parseStored([]byte(in), in); ok {
					t.Errorf("parseStored accepts %q", in)
				}
			}
		}
	}
}

// storedTime stands in for time.Parse on the fast path. On the form the
// store writes it must agree with time.Parse exactly; on anything else it
// may refuse (ParseMessage then judges) but never accept what time.Parse
// refuses.
func TestStoredTimeAgreesWithTimeParse(t *testing.T) {
	parses := func(ts string) bool {
		_, err := time.Parse(time.RFC3339Nano, ts)
		return err == nil
	}
	for _, year := range []int{0, 1900, 2000, 2023, 2024, 9999} {
		for month := range 14 {
			for day := range 33 {
				ts := fmt.Sprintf("%04d-%02d-%02dT23:59:59.123456Z", year, month, day)
				if got, want := storedTime([]byte(ts)), parses(ts); got != want {
					t.Errorf("storedTime(%q) = %v, time.Parse accepts it: %v", ts, got, want)
				}
			}
		}
	}
	for _, hms := range [][3]int{{23, 59, 59}, {24, 0, 0}, {0, 60, 0}, {0, 0, 60}, {99, 99, 99}} {
		ts := fmt.Sprintf("2026-11-21T%02d:%02d:%02dZ", hms[0], hms[1], hms[2])
		if got, want := storedTime([]byte(ts)), parses(ts); got != want {
			t.Errorf("storedTime(%q) = %v, time.Parse accepts it: %v", ts, got, want)
		}
	}
	for _, base := range []string{
		string(fsstore.TimeOf(time.Date(2024, 2, 29, 2, 7, 34, 512345000, time.UTC))),
		"2026-11-21T02:07:34Z",
		"2026-11-21T02:07:34.5Z",
		"2026-12-31T23:59:59.123456789Z",
	} {
		if !storedTime([]byte(base)) {
			t.Errorf("storedTime refuses %q", base)
		}
		for i := range len(base) {
			for c := range 256 {
				ts := []byte(base)
				ts[i] = byte(c)
				if storedTime(ts) && !parses(string(ts)) {
					t.Errorf("storedTime accepts %q, time.Parse refuses it", ts)
				}
			}
		}
		for n := range len(base) {
			if storedTime([]byte(base[:n])) && !parses(base[:n]) {
				t.Errorf("storedTime accepts %q, time.Parse refuses it", base[:n])
			}
		}
	}
}
