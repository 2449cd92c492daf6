package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/checkpoints"
	"github.com/hermes/hermes/fsstore/sessions"
)

// state is a file's content, or absent (nil).
type state []byte

func readState(t *testing.T, path string) state {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

func sameState(a, b state) bool { return (a == nil) == (b == nil) && string(a) == string(b) }

// The property of restores: random turns in which the agent writes,
// edits and creates files, the user edits, creates and removes them
// between turns, then a rewind to a random turn: every file the agent
// changed since is back as it was just before that turn unless the user
// changed it after the agent's last write there (a conflict: reported,
// left as it is); files nobody rewound are untouched; and taking the
// rewind back gives the files as they were before it.
func TestRewindProperty(t *testing.T) {
	t.Parallel()
	for seed := range uint64(15) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { rewindRounds(t, rand.New(rand.NewPCG(seed, 41))) })
	}
}

func rewindRounds(t *testing.T, rng *rand.Rand) {
	st := newStore(t)
	id := newSession(t, st)
	ck := checkpoints.Open(t.TempDir())
	env := &Env{SessionID: id, Cwd: t.TempDir(), Checkpoints: ck, MaxOutput: DefaultMaxOutput}
	names := []string{"a", "b", "sub/c", "d.bin"}
	path := func(n string) string { return filepath.Join(env.Cwd, n) }
	all := func() map[string]state {
		out := map[string]state{}
		for _, n := range names {
			out[n] = readState(t, path(n))
		}
		return out
	}
	// What the agent (or a restore) last left in each file, and, for each
	// change, the file just before it and the seq of the message that
	// records it.
	lastAgent := map[string]state{}
	type event struct {
		seq   int64
		name  string
		prior state
	}
	var events []event
	record := func(seq int64, name string, prior, now state) {
		events = append(events, event{seq, name, prior})
		lastAgent[name] = now
	}
	var userSeqs []int64
	calls := 0
	for round := 0; round < 3; round++ {
		for turn := 0; turn < 1+rng.IntN(4); turn++ {
			// The user, between turns.
			for range rng.IntN(3) {
				n := names[rng.IntN(len(names))]
				switch rng.IntN(3) {
				case 0:
					os.Remove(path(n))
				default:
					os.MkdirAll(filepath.Dir(path(n)), 0o755)
					os.WriteFile(path(n), []byte(fmt.Sprintf("user %d\x00\xff", rng.IntN(5))), 0o644)
				}
			}
			seq, err := st.Append(id, user(fmt.Sprint("turn ", turn)))
			if err != nil {
				t.Fatal(err)
			}
			userSeqs = append(userSeqs, seq)
			// The agent.
			for range rng.IntN(4) {
				n := names[rng.IntN(len(names))]
				content := fmt.Sprintf("agent %d\n", rng.IntN(6))
				calls++
				callID := fmt.Sprint("call_", calls)
				cenv := env.withCall(callID)
				var tool Tool = writeFileTool{}
				argv := map[string]string{"path": n, "content": content}
				if cur := readState(t, path(n)); len(cur) > 0 && rng.IntN(2) == 0 {
					tool = editFileTool{}
					argv = map[string]string{"path": n, "old_string": string(cur), "new_string": content}
				}
				raw, _ := json.Marshal(argv)
				prior := readState(t, path(n))
				_, runErr := tool.Run(context.Background(), cenv, raw)
				m := toolResult(providerCall(callID, tool.Name(), string(raw)), resultText("", runErr), false)
				checkpoints.Attach(&m, cenv.call.changes())
				call := callMessage(callID, tool.Name(), string(raw))
				seq, err := st.Append(id, []sessions.Message{call, m})
				if err != nil {
					t.Fatal(err)
				}
				ck.ClearPending(id, callID)
				if runErr == nil {
					record(seq, n, prior, readState(t, path(n)))
				}
			}
		}
		// Rewind to a random turn.
		to := userSeqs[rng.IntN(len(userSeqs))]
		msgs := stored(t, st, id)
		recs, err := checkpoints.Records(id, msgs)
		if err != nil {
			t.Fatal(err)
		}
		// The state each file is to be put back to: as it was before the
		// first change after to, the user's edits before it kept.
		wants := map[string]state{}
		changed := map[string]bool{}
		for _, ev := range events {
			if ev.seq > to && !changed[path(ev.name)] {
				changed[path(ev.name)] = true
				wants[ev.name] = ev.prior
			}
		}
		pre := all()
		res, err := Restore(context.Background(), st, ck, id, checkpoints.Plan(checkpoints.After(recs, to)), false, false, "rewound")
		if err != nil {
			t.Fatal(err)
		}
		conflicts := map[string]bool{}
		for _, c := range res.Conflicts {
			conflicts[c.Path] = true
		}
		if len(res.Lost) > 0 {
			t.Fatalf("lost: %+v", res.Lost)
		}
		post := all()
		for _, n := range names {
			want := wants[n]
			switch {
			case !changed[path(n)]:
				if !sameState(post[n], pre[n]) {
					t.Fatalf("round %d, rewind to %d: %s, which no change after it touched, went from %q to %q", round, to, n, pre[n], post[n])
				}
			case sameState(pre[n], want):
				if !sameState(post[n], want) {
					t.Fatalf("round %d: %s was already as wanted, became %q", round, n, post[n])
				}
			case sameState(pre[n], lastAgent[n]):
				if conflicts[path(n)] || !sameState(post[n], want) {
					t.Fatalf("round %d, rewind to %d: %s = %q (conflict %v), want %q", round, to, n, post[n], conflicts[path(n)], want)
				}
			default:
				if !conflicts[path(n)] || !sameState(post[n], pre[n]) {
					t.Fatalf("round %d, rewind to %d: %s, changed by the user since (%q, the agent left %q), = %q, conflict %v", round, to, n, pre[n], lastAgent[n], post[n], conflicts[path(n)])
				}
			}
		}
		if len(res.Changes) == 0 {
			continue
		}
		msgs = stored(t, st, id)
		for _, c := range res.Changes {
			name, _ := filepath.Rel(env.Cwd, c.Path)
			record(int64(len(msgs)), name, pre[name], post[name])
		}
		// Rewinding the rewind.
		last, err := checkpoints.Records(id, msgs[len(msgs)-1:])
		if err != nil || len(last) != 1 {
			t.Fatalf("the restore's record: %v, %v", last, err)
		}
		undo, err := Restore(context.Background(), st, ck, id, checkpoints.Plan(last), false, false, "undone")
		if err != nil || len(undo.Conflicts) > 0 || len(undo.Lost) > 0 {
			t.Fatalf("undo: %+v, %v", undo, err)
		}
		for _, n := range names {
			if got := readState(t, path(n)); !sameState(got, pre[n]) {
				t.Fatalf("round %d: after the undo %s = %q, want %q", round, n, got, pre[n])
			}
			if slices.Contains(checkpoints.Paths(undo.Changes), path(n)) {
				record(int64(len(msgs))+1, n, post[n], pre[n])
			}
		}
	}
}

// providerCall is a call of tool with arguments, by id.
func providerCall(id, tool, arguments string) provider.ToolCall {
	return provider.ToolCall{ID: id, Type: "function", Function: provider.ToolFunction{Name: tool, Arguments: arguments}}
}

// callMessage is the assistant message holding that call.
func callMessage(id, tool, arguments string) sessions.Message {
	raw, _ := json.Marshal([]provider.ToolCall{providerCall(id, tool, arguments)})
	return sessions.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: raw}
}
