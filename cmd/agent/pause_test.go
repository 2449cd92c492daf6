package agent

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/cmd/provider/anthropictest"
	"github.com/hermes/hermes/fsstore/usage"
)

// A reply that stops with pause_turn (the API paused a long turn) is not
// the turn's end: the paused message is stored and sent back as it is, and
// the model goes on from it in the same turn, within MaxSteps.
func TestPauseTurnContinues(t *testing.T) {
	t.Parallel()
	n := 0
	fake := &anthropictest.Server{
		Reply: func(r *anthropictest.Request) []anthropictest.Block {
			n++
			return []anthropictest.Block{{Type: "text", Text: map[int]string{1: "part one", 2: "part two", 3: "done"}[n]}}
		},
		Stop: func(r *anthropictest.Request) string {
			if last := r.Messages[len(r.Messages)-1]; last.Role == "user" || n < 3 {
				return "pause_turn"
			}
			return ""
		},
	}
	up := httptest.NewServer(fake)
	defer up.Close()
	prov, err := provider.New(provider.Config{Name: "anthropic", BaseURL: up.URL, Model: "claude-test", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(t)
	id := newSession(t, st)
	e := &Engine{Sessions: st, Provider: prov}
	res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("search long")})
	if err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 || res.Steps != 3 {
		t.Fatalf("%d requests, %d steps; want the turn to go on twice after pause_turn", len(reqs), res.Steps)
	}
	for _, r := range reqs {
		if r.Status != 200 {
			t.Fatalf("the API refused a continuation: %s", r.Error)
		}
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Role != "assistant" || !strings.Contains(reqs[1].LastText(), "part one") {
		t.Errorf("the continuation does not end with the paused message: %s", reqs[1].Body)
	}
	msgs := stored(t, st, id)
	if got := msgs[len(msgs)-1].Text(); got != "done" {
		t.Errorf("the turn ended on %q, want done:\n%s", got, dumpMsgs(msgs))
	}
}

// The step limit bounds continuations as it bounds tool calls.
func TestPauseTurnWithinMaxSteps(t *testing.T) {
	t.Parallel()
	fake := &anthropictest.Server{Stop: func(*anthropictest.Request) string { return "pause_turn" }}
	up := httptest.NewServer(fake)
	defer up.Close()
	prov, err := provider.New(provider.Config{Name: "anthropic", BaseURL: up.URL, Model: "claude-test", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(t)
	id := newSession(t, st)
	e := &Engine{Sessions: st, Provider: prov, MaxSteps: 4}
	res, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("go")})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(fake.Requests()); got != 4 || !res.StepLimit {
		t.Errorf("%d requests, step limit %v; want 4 and the limit said", got, res.StepLimit)
	}
}

// A model call that failed after the provider counted its tokens is kept:
// a turn that fails so stores a note holding the call, marked failed
// (usage.OtherField), and a turn whose retry succeeded keeps it on the
// reply; the report counts both.
func TestFailedCallUsageStored(t *testing.T) {
	t.Parallel()
	const head = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, head) // and the stream breaks off
	}))
	defer up.Close()
	prov, err := provider.New(provider.Config{Name: "anthropic", BaseURL: up.URL, Model: "claude-test", APIKey: "k", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(t)
	id := newSession(t, st)
	e := &Engine{Sessions: st, Provider: prov}
	if _, err := e.Run(context.Background(), Turn{SessionID: id, Input: user("hi"), Stream: io.Discard}); err == nil {
		t.Fatal("the turn succeeded")
	}
	var failed []usage.Call
	for _, m := range stored(t, st, id) {
		cs, err := usage.Others(m)
		if err != nil {
			t.Fatal(err)
		}
		failed = append(failed, cs...)
	}
	if len(failed) != 1 || !failed[0].Failed || failed[0].Input != 11 {
		t.Fatalf("failed calls %+v, want the one call, failed, stored:\n%s", failed, dumpMsgs(stored(t, st, id)))
	}
}
