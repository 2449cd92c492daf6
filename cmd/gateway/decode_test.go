package gateway

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeChatBody checks decodeChatBody, which cuts the messages out of
// a chat completion request before encoding/json decodes the rest, against
// json.Unmarshal of the whole body: the same request, or the same error.
func FuzzDecodeChatBody(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		` { "messages" : [ {"role":"user","content":"hi"} , {"role":"assistant","content":"ok"} ] , "stream" : true } `,
		`{"messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"temperature":0.5}`,
		`{"messages":null}`,
		`{"messages":"no"}`,
		`{"messages":{}}`,
		`{"Messages":[{"role":"user","content":"a"}],"MESSAGES":[{"role":"user","content":"b"}]}`,
		`{"messages":[{"role":"user","content":"a"}],"messages":"no"}`,
		`{"messages":"no","messages":[{"role":"user","content":"a"}]}`,
		`{"m\u0065ssages":[{"role":"user","content":"a"}]}`,
		`{"meſſages":[{"role":"user","content":"a"}]}`,
		`{"stream":"yes","messages":[{"role":"user","content":"a"}]}`,
		`{"stream":"yes","messages":7}`,
		`{"stream_options":{"include_usage":true},"stream":true,"messages":[1,"x",null]}`,
		`{}`, `[]`, `null`, `"x"`, `{"messages":[}`, `{"a":1,}`, `{"model":1}`,
		`{"max_tokens":100,"stop":["a"],"seed":null,"user":"u","messages":[{"role":"developer","content":"d"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want, got chatRequest
		werr := json.Unmarshal(body, &want)
		gerr := decodeChatBody(body, &got)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("%s: error %v, json.Unmarshal's %v", body, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decoded %+v, json.Unmarshal %+v", body, got, want)
		}
	})
}
