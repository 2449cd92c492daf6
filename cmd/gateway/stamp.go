package gateway

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// stampField is the field of a transcript line that names the stored
// response its turn answers (a Responses request with store): every
// message the turn stores after its input carries it (agent.Turn.Mark),
// in the same line and the same sync, with what the response's document
// holds beyond the reply. So the document is a cache, written without a
// sync (gatewaystate.CacheResponse), which the transcript rebuilds
// (rebuildResponse) when a crash lost it.
const stampField = "hermes_response"

// responseStamp is the value of stampField: the response's id, what its
// request said that its response reports, and the names of the gateway's
// own tools in the turn (Own), which tell a reply cut short in one of them
// from one that ended with calls for the client. From, when set, is the
// seq where the reply begins: a turn that carries on a reply cut short
// (runTurn) returns that reply too, whose first messages carry the stamp
// of the request that was cut.
type responseStamp struct {
	ID                 string                      `json:"id"`
	CreatedAt          fsstore.Time                `json:"created_at"`
	Model              string                      `json:"model,omitempty"`
	PreviousResponseID string                      `json:"previous_response_id,omitempty"`
	Conversation       string                      `json:"conversation,omitempty"`
	Instructions       string                      `json:"instructions,omitempty"`
	Params             gatewaystate.ResponseParams `json:"params"`
	Own                []string                    `json:"own,omitempty"`
	From               int64                       `json:"from,omitempty"`
}

// newStamp is the stamp of the response doc, begun before its turn, whose
// gateway runs tools.
func newStamp(doc gatewaystate.Response, tools []agent.Tool) *responseStamp {
	st := &responseStamp{ID: doc.ID, CreatedAt: doc.CreatedAt, Model: doc.Model, PreviousResponseID: doc.PreviousResponseID,
		Conversation: doc.Conversation, Instructions: doc.Instructions, Params: doc.Params}
	for _, t := range tools {
		st.Own = append(st.Own, t.Name())
	}
	return st
}

// mark is the stamp as the fields of agent.Turn.Mark, its reply beginning
// at seq from (0: with the turn's first stored message).
func (st *responseStamp) mark(from int64) map[string]json.RawMessage {
	if st == nil {
		return nil
	}
	v := *st
	v.From = from
	b, _ := json.Marshal(v) // its values always encode
	return map[string]json.RawMessage{stampField: b}
}

// stampOf is the stamp of m, if it carries one.
func stampOf(m sessions.Message) (responseStamp, bool) {
	var st responseStamp
	raw, ok := m.Extra[stampField]
	return st, ok && json.Unmarshal(raw, &st) == nil && st.ID != ""
}

// response returns the stored response id: its document, else, when the
// document is missing or unreadable (a crash after the reply lost what
// was written of it without a sync), the one the transcript of its
// session rebuilds, written again. A response evicted (Evicted), of a
// deleted session, never stored, or whose turn did not end is not found.
func (ro *router) response(id string) (gatewaystate.Response, error) {
	doc, err := ro.opts.Store.GetResponse(id)
	if err == nil || !(errors.Is(err, fsstore.ErrNotFound) || errors.As(err, new(*fsstore.CorruptError))) {
		return doc, err
	}
	sid := gatewaystate.ResponseSession(id)
	if sid == "" {
		return doc, err
	}
	evicted, eerr := ro.opts.Store.Evicted([]string{id}, ro.opts.MaxStoredResponses)
	if eerr != nil {
		return doc, eerr
	}
	if evicted[id] {
		return doc, err
	}
	msgs, merr := ro.opts.Sessions.Messages(sid)
	if errors.Is(merr, fsstore.ErrNotFound) {
		return doc, err
	}
	if merr != nil {
		return doc, merr
	}
	rebuilt, ok := rebuildResponse(id, sid, msgs)
	if !ok {
		return doc, err
	}
	if werr := ro.opts.Store.RestoreResponse(rebuilt); werr != nil {
		ro.opts.Logf("session %s: response %s was rebuilt from the transcript, but writing its document failed: %v", sid, id, werr)
	}
	return rebuilt, nil
}

// rebuildResponse is the document of response id that the transcript msgs
// of session sid holds: the messages its turn stored after its input
// carry its stamp, and the reply they make ended the turn (agent.Ended).
// It is the document createResponse wrote (finishDoc), but for the usage
// and the model, taken from the reply's usage records (what the provider
// reported, summed) when they have them.
func rebuildResponse(id, sid string, msgs []sessions.Message) (gatewaystate.Response, bool) {
	first, last := -1, -1
	var st responseStamp
	for i, m := range msgs {
		if s, ok := stampOf(m); ok && s.ID == id {
			if first < 0 {
				first, st = i, s
			}
			last = i
		}
	}
	if first < 0 {
		return gatewaystate.Response{}, false
	}
	if st.From > 0 {
		if i := slices.IndexFunc(msgs, func(m sessions.Message) bool { return m.Seq == st.From }); i >= 0 && i < first {
			first = i
		}
	}
	reply := msgs[first : last+1]
	if !agent.Ended(reply, func(name string) bool { return slices.Contains(st.Own, name) }) {
		return gatewaystate.Response{}, false
	}
	var raw []json.RawMessage
	json.Unmarshal(st.Params.Tools, &raw)
	_, client, _ := responsesTools(raw) // the tools of a request that was answered
	doc := gatewaystate.Response{
		ID: id, SessionID: sid, CreatedAt: st.CreatedAt, Model: st.Model, PreviousResponseID: st.PreviousResponseID,
		Conversation: st.Conversation, Instructions: st.Instructions, Params: st.Params,
	}
	out := turnOutcome{reply: provider.Reply{Messages: reply}, count: msgs[last].Seq}
	var in, outTokens int64
	for _, m := range reply {
		if c, ok, _ := usage.Of(m); ok {
			in, outTokens = in+c.Input, outTokens+c.Output
			out.model = orDefault(c.Model, out.model)
		}
	}
	doc = finishDoc(doc, out, nil, client)
	if in+outTokens > 0 {
		doc.Usage = &gatewaystate.Usage{InputTokens: int(in), OutputTokens: int(outTokens), TotalTokens: int(in + outTokens)}
	}
	return doc, true
}

// RebuildResponses writes again the response documents that a crash lost
// (or left unreadable) after their turns, from the transcripts that carry
// them, leaving out those evicted with at most max kept (Evicted, which
// is told of every one lost) (fsck --repair, while no gateway runs). Only
// sessions written since the oldest response the index keeps are read.
// It returns how many it wrote.
func RebuildResponses(st *sessions.Store, gs *gatewaystate.Store, max int) (int, error) {
	if max <= 0 {
		max = DefaultMaxStoredResponses
	}
	since, err := gs.OldestKept(max)
	if err != nil {
		return 0, err
	}
	all, err := st.All()
	if err != nil {
		return 0, err
	}
	var lost []gatewaystate.Response
	for _, sess := range all {
		if at, err := sess.UpdatedAt.Instant(); err == nil && at.Before(since) {
			continue
		}
		msgs, err := st.Messages(sess.ID)
		if errors.Is(err, fsstore.ErrNotFound) || errors.As(err, new(*fsstore.CorruptError)) {
			continue // fsck reports a transcript it cannot read
		}
		if err != nil {
			return 0, err
		}
		seen := map[string]bool{}
		for _, m := range msgs {
			stamp, ok := stampOf(m)
			if !ok || seen[stamp.ID] || gatewaystate.ResponseSession(stamp.ID) != sess.ID {
				continue
			}
			seen[stamp.ID] = true
			_, err := gs.GetResponse(stamp.ID)
			if err == nil {
				continue
			}
			if !errors.Is(err, fsstore.ErrNotFound) && !errors.As(err, new(*fsstore.CorruptError)) {
				return 0, err
			}
			if doc, ok := rebuildResponse(stamp.ID, sess.ID, msgs); ok {
				lost = append(lost, doc)
			}
		}
	}
	ids := make([]string, len(lost))
	for i, doc := range lost {
		ids[i] = doc.ID
	}
	evicted, err := gs.Evicted(ids, max)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, doc := range lost {
		if evicted[doc.ID] {
			continue
		}
		if err := gs.RestoreResponse(doc); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
