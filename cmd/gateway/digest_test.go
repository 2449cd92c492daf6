package gateway

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"testing"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/fsstore/sessions"
)

// walkBefore is walkConversation as it was before it hashed texts from
// their raw bytes: each element decoded to strings, written in one call.
// The digests are on disk (the history index), so they must not change.
func walkBefore(h hash.Hash, msgs []sessions.Message, atEnd func(n int)) {
	atom := func(fields ...string) {
		var b []byte
		b = binary.BigEndian.AppendUint64(b, uint64(len(fields)))
		for _, f := range fields {
			b = binary.BigEndian.AppendUint64(b, uint64(len(f)))
			b = append(b, f...)
		}
		h.Write(b)
	}
	for i := 0; i < len(msgs); {
		m := msgs[i]
		switch {
		case agent.IsNote(m) || marked(m, instructionsMarker):
			i++
		case isReplyRole(m.Role):
			var run []sessions.Message
			end := i
			for ; i < len(msgs) && (isReplyRole(msgs[i].Role) || agent.IsNote(msgs[i])); i++ {
				if !agent.IsNote(msgs[i]) {
					run = append(run, msgs[i])
					end = i + 1
				}
			}
			atom("assistant", replyText(run))
			for _, c := range pendingToolCalls(run) {
				atom("call", c.ID, c.Function.Name, callArguments(c.Function.Arguments))
			}
			if atEnd != nil {
				atEnd(end)
			}
		default:
			atom(m.Role, m.Text())
			i++
		}
	}
}

// fuzzConversation is a conversation made of the bytes of a fuzz input:
// each byte picks a message's role, content shape and marks.
func fuzzConversation(in []byte) []sessions.Message {
	roles := []string{"user", "assistant", "tool", "system"}
	contents := []json.RawMessage{
		nil, json.RawMessage(`""`), json.RawMessage(`"plain"`), json.RawMessage(`"line\nbreak \"quoted\" \u00e9"`),
		json.RawMessage(`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`), json.RawMessage(`null`),
		json.RawMessage(`"ok"`), json.RawMessage(`[{"type":"image_url","image_url":{"url":"x"}}]`),
	}
	var msgs []sessions.Message
	for i, b := range in {
		m := sessions.Message{Role: roles[b&3], Content: contents[(b>>2)&7]}
		if b&0x20 != 0 && m.Role == "assistant" {
			m.ToolCalls = json.RawMessage(fmt.Sprintf(`[{"id":"c%d","type":"function","function":{"name":"f","arguments":"{\"input\":\"x\"}"}}]`, i))
		}
		switch b >> 6 {
		case 1:
			m.Extra = map[string]json.RawMessage{agent.NoteMarker: json.RawMessage("true")}
		case 2:
			if b&1 != 0 {
				m.Extra = map[string]json.RawMessage{instructionsMarker: json.RawMessage("true")}
			}
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// FuzzConversationDigest checks the digest of a conversation, and of each
// of its replies' ends, against walkBefore's.
func FuzzConversationDigest(f *testing.F) {
	for _, seed := range []string{"", "\x00\x01", "\x08\x05\x09\x25\x02\x41\x0d", "\x00\x21\x02\x02\x45\x10\x81\x19", "\x14\x15\x1d\x11\x0c\x09\x3d\x06", "\x00\x09\x19", "\x00\x09\x02\x19\x48\x19"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		msgs := fuzzConversation(in)
		var want, got []string
		hw, hg := sha256.New(), sha256.New()
		walkBefore(hw, msgs, func(n int) { want = append(want, fmt.Sprint(n, hex.EncodeToString(hw.Sum(nil)))) })
		walkConversation(hg, msgs, func(n int) { got = append(got, fmt.Sprint(n, hex.EncodeToString(hg.Sum(nil)))) })
		if fmt.Sprint(got) != fmt.Sprint(want) || hex.EncodeToString(hg.Sum(nil)) != hex.EncodeToString(hw.Sum(nil)) {
			t.Fatalf("%q: digests %v, before %v", in, got, want)
		}
	})
}
