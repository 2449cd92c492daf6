package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStdioAnswersWhatItRuns: a client that writes its requests and
// closes its end at once (a script: printf … | hermes mcp serve) gets a
// reply to every call; before, of 20 kanban_create calls 2 ran with no
// reply and 18 were dropped. Every task made (the calls' side effect) is
// named by a reply, and every call is answered.
func TestStdioAnswersWhatItRuns(t *testing.T) {
	const n = 20
	o := testOptions(t)
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"kanban_create","arguments":{"title":"task %d"}}}`+"\n", i, i)
	}
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := New(o).Run(ctx, Stdio(io.NopCloser(&in), &out)); err != nil && ctx.Err() != nil {
		t.Fatalf("run: %v", err)
	}
	answered := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r struct {
			ID     *int `json:"id"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if line == "" || json.Unmarshal([]byte(line), &r) != nil || r.ID == nil || *r.ID == 0 {
			continue
		}
		if len(r.Result.Content) != 1 || r.Result.IsError {
			t.Errorf("call %d: %s", *r.ID, line)
			continue
		}
		answered[*r.ID] = r.Result.Content[0].Text
	}
	tasks, err := o.Board.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		var id int
		if _, err := fmt.Sscanf(task.Title, "task %d", &id); err != nil || !strings.Contains(answered[id], `"id":"`+task.ID+`"`) {
			t.Errorf("task %s (%s) was made with no reply naming it", task.ID, task.Title)
		}
	}
	if len(answered) != n || len(tasks) != n {
		t.Errorf("%d calls answered and %d tasks made, want %d of each", len(answered), len(tasks), n)
	}
}

// syncBuffer is a bytes.Buffer that handlers may write while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStdioPending: what the end of input waits for. A request is counted
// by its id, integer or string, alone or in a batch, until its reply is
// written; a notification, a reply from the client, a line that does not
// parse and an id the SDK answers by no id are not; a request the client
// cancels is not waited for.
func TestStdioPending(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in, out    []string
		stillOwing int
	}{
		{"answered", []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`}, []string{`{"jsonrpc":"2.0","id":1,"result":{}}`}, 0},
		{"not yet", []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":"a","method":"ping"}`}, []string{`{"jsonrpc":"2.0","id":"a","result":{}}`}, 1},
		{"an error is a reply", []string{`{"jsonrpc":"2.0","id":"x","method":"nope"}`}, []string{`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}`}, 0},
		{"a string id is not a number", []string{`{"jsonrpc":"2.0","id":"1","method":"ping"}`}, []string{`{"jsonrpc":"2.0","id":1,"result":{}}`}, 1},
		{"batch", []string{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`}, []string{`[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":1,"result":{}}]`}, 0},
		{"not requests", []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":7,"result":{}}`, `{"jsonrpc":`, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`}, nil, 0},
		{"an id reused in flight", []string{`{"jsonrpc":"2.0","id":4,"method":"ping"}`, `{"jsonrpc":"2.0","id":4,"method":"ping"}`}, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"in use"}}`, `{"jsonrpc":"2.0","id":4,"result":{}}`}, 0},
		{"cancelled", []string{`{"jsonrpc":"2.0","id":3,"method":"tools/call"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pending{ids: map[string]bool{}}
			p.cond = sync.NewCond(&p.mu)
			r := &heldReader{r: io.NopCloser(strings.NewReader(strings.Join(tc.in, "\n") + "\n")), p: p}
			w := &replyWriter{w: io.Discard, p: p}
			b := make([]byte, 1<<16)
			if n, err := r.Read(b); n == 0 || err != nil {
				t.Fatalf("read %d, %v", n, err)
			}
			for _, line := range tc.out {
				// Written in two pieces: a reply counts once whole.
				w.Write([]byte(line[:5]))
				w.Write([]byte(line[5:] + "\n"))
			}
			if tc.stillOwing == 0 {
				// The end of input is given at once: nothing is owed.
				if n, err := r.Read(b); n != 0 || err != io.EOF {
					t.Errorf("at the end: %d, %v", n, err)
				}
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if len(p.ids) != tc.stillOwing {
				t.Errorf("owing %v, want %d", p.ids, tc.stillOwing)
			}
		})
	}
}

// TestStdioOutFails: once stdout fails (the client closed it), no reply
// can be written, and the end of input is not held back for one.
func TestStdioOutFails(t *testing.T) {
	p := &pending{ids: map[string]bool{}}
	p.cond = sync.NewCond(&p.mu)
	r := &heldReader{r: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")), p: p}
	w := &replyWriter{w: failingWriter{}, p: p}
	b := make([]byte, 1<<16)
	if n, err := r.Read(b); n == 0 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")); err == nil {
		t.Fatal("the write did not fail")
	}
	if n, err := r.Read(b); n != 0 || err != io.EOF {
		t.Errorf("at the end: %d, %v", n, err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }
