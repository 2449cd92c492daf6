package sessions

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// noteMarker is the extra field of the messages hermes adds itself (the
// agent engine's NoteMarker): a check of a transcript's calls skips them.
const noteMarker = "hermes_note"

// callCheck follows the tool calls of one transcript, a message at a time
// in seq order (Check), for what no writer may leave: a call answered
// twice, a result stored after its turn ended (its reply, or the next
// user message, came first), and a reply stored twice in a row (the same
// assistant text again with only results between). Each such message is
// one a repair drops (drop): the transcript is written again without it,
// the old one kept whole beside it (Save with force).
//
// Results of calls the transcript does not hold (an import of a log that
// begins mid-turn) are left alone: they break no promise of hermes's.
type callCheck struct {
	called  map[string]int64 // a call's id: the seq of the message that made it
	open    map[string]bool  // calls of the current turn without a result yet
	closed  map[string]bool  // calls whose turn ended without their result
	results map[string]int64 // a call's id: the seq of its one result
	// reply is the digest of the content of the last assistant reply
	// without calls, while only results and notes followed it (replySeq
	// > 0): the store writes content compact, so the same bytes are the
	// same reply.
	reply    [sha256.Size]byte
	replySeq int64
	findings []string
	drop     []int64
}

// A callCheck's maps are made on first use: most transcripts hold no
// call, and fsck reads every one.
func setSeq(m *map[string]int64, k string, v int64) {
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[k] = v
}

func setFlag(m *map[string]bool, k string) {
	if *m == nil {
		*m = map[string]bool{}
	}
	(*m)[k] = true
}

// add checks the next message of the transcript; m may share the
// scanner's buffer (lineMessage), so what is kept is copied.
func (c *callCheck) add(m Message) {
	if v, ok := m.Extra[noteMarker]; ok && string(v) == "true" {
		return
	}
	switch m.Role {
	case "assistant":
		ids := callIDs(m.ToolCalls)
		if len(ids) == 0 {
			sum := sha256.Sum256(m.Content)
			if c.replySeq > 0 && sum == c.reply {
				c.flag(m.Seq, fmt.Sprintf("seq %d repeats the reply at seq %d (a reply stored twice)", m.Seq, c.replySeq))
				return
			}
			c.endTurn()
			c.reply, c.replySeq = sum, m.Seq
			return
		}
		c.replySeq = 0
		for _, id := range ids {
			setSeq(&c.called, id, m.Seq)
			setFlag(&c.open, id)
		}
	case "tool":
		id := m.ToolCallID
		switch {
		case c.results[id] > 0:
			c.flag(m.Seq, fmt.Sprintf("seq %d is a second result of call %s, answered at seq %d", m.Seq, id, c.results[id]))
		case c.closed[id]:
			c.flag(m.Seq, fmt.Sprintf("seq %d is a result of call %s (seq %d) stored after its turn ended", m.Seq, id, c.called[id]))
		case c.open[id]:
			delete(c.open, id)
			setSeq(&c.results, strings.Clone(id), m.Seq)
		}
	default:
		c.endTurn()
		c.replySeq = 0
	}
}

// endTurn closes the calls left open: a result of one from now on comes
// after its turn.
func (c *callCheck) endTurn() {
	for id := range c.open {
		setFlag(&c.closed, id)
	}
	clear(c.open)
}

func (c *callCheck) flag(seq int64, what string) {
	c.findings = append(c.findings, what)
	c.drop = append(c.drop, seq)
}

// callIDs are the ids of the calls a message's tool_calls hold.
func callIDs(calls json.RawMessage) []string {
	if len(calls) == 0 || calls[0] != '[' {
		return nil
	}
	var list []struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(calls, &list) != nil {
		return nil
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		if c.ID != "" {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// dropMessages writes the transcript of id again without the messages of
// seqs (what callCheck flagged), keeping the old transcript whole beside
// it (<id>.jsonl.replaced-<unix>, as Save with force does): nothing is
// lost, and the session reads as the turns were meant to be stored.
func (s *Store) dropMessages(id string, seqs []int64, what string) (bool, string) {
	msgs, err := s.Messages(id)
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	kept := slices.DeleteFunc(msgs, func(m Message) bool { return slices.Contains(seqs, m.Seq) })
	for i := range kept {
		kept[i].Seq = 0
	}
	res, err := s.Save(id, kept, true)
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, fmt.Sprintf("%s; dropped, the transcript as it was kept in %s", what, res.Replaced)
}
