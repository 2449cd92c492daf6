package mcpserve

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is MCP over in and out, one message a line, as hermes mcp serve
// speaks it on stdin and stdout. The SDK's own stdio transport ends the
// session the moment its input ends: calls in flight are cancelled and
// their replies never written, calls read but not begun are dropped. So a
// client that writes its requests and closes its end (printf … | hermes
// mcp serve) could not tell which calls ran. Here the end of the input is
// held back until every request read has its reply written: each call runs
// to its end (its waits bounded by --lock-timeout, as any call's) and is
// answered, stdout being still open, before the server exits. A request
// the client cancels (notifications/cancelled) is not waited for. A
// request is known by its id on a line of its own, MCP's stdio framing;
// batches are read too.
func Stdio(in io.ReadCloser, out io.Writer) mcp.Transport {
	p := &pending{ids: map[string]bool{}}
	p.cond = sync.NewCond(&p.mu)
	return &mcp.IOTransport{Reader: &heldReader{r: in, p: p}, Writer: &replyWriter{w: out, p: p}}
}

// pending are the ids of the requests read and not yet answered. A set,
// not a count: the SDK answers a request that reuses the id of one in
// flight with no id, and the one in flight with its own.
type pending struct {
	mu     sync.Mutex
	cond   *sync.Cond
	ids    map[string]bool
	closed bool // closed, or out failed: nothing waits any more
}

// read records the requests of a line read, and forgets those it cancels
// (a cancelled request may get no reply).
func (p *pending) read(line []byte) {
	for _, m := range messages(line) {
		switch {
		case m.Method == "notifications/cancelled":
			var params struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if json.Unmarshal(m.Params, &params) == nil {
				p.done(params.RequestID)
			}
		case m.Method != "":
			if k, ok := idKey(m.ID); ok {
				p.mu.Lock()
				p.ids[k] = true
				p.mu.Unlock()
			}
		}
	}
}

// wrote forgets the requests a line written answers.
func (p *pending) wrote(line []byte) {
	for _, m := range messages(line) {
		if m.Method == "" && (m.Result != nil || m.Error != nil) {
			p.done(m.ID)
		}
	}
}

func (p *pending) done(id json.RawMessage) {
	k, ok := idKey(id)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ids, k)
	p.cond.Broadcast()
}

// wait returns once every request read is answered, or the transport
// is closed.
func (p *pending) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.ids) > 0 && !p.closed {
		p.cond.Wait()
	}
}

func (p *pending) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.cond.Broadcast()
}

// message is what Stdio reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// messages are the messages of one line: one, a batch's, or none when it
// does not parse (the SDK answers that with no id to wait for).
func messages(line []byte) []message {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '[' {
		var batch []message
		json.Unmarshal(line, &batch)
		return batch
	}
	var m message
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []message{m}
}

// idKey is a request id as a map key: a string, or an integer in its
// shortest form (the SDK writes the id back as it read it). Anything else
// is no id the SDK answers by.
func idKey(id json.RawMessage) (string, bool) {
	id = bytes.TrimSpace(id)
	var s string
	if len(id) > 0 && id[0] == '"' && json.Unmarshal(id, &s) == nil {
		return "s" + s, true
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return "", false
	}
	return "n" + strconv.FormatInt(n, 10), true
}

// eachLine calls fn with each whole line of what *part holds after b, and
// keeps the partial line that ends it; at the end of input (last), that
// line too.
func eachLine(part *[]byte, b []byte, last bool, fn func([]byte)) {
	*part = append(*part, b...)
	rest := *part
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		fn(rest[:i])
		rest = rest[i+1:]
	}
	if last && len(rest) > 0 {
		fn(rest)
		rest = nil
	}
	*part = append((*part)[:0], rest...)
}

// heldReader records each request as it is read, before the SDK sees it,
// and holds the end of the input back until they are answered.
type heldReader struct {
	r    io.ReadCloser
	p    *pending
	part []byte
	err  error // the input's end, once reached
}

func (h *heldReader) Read(b []byte) (int, error) {
	if h.err != nil {
		h.p.wait()
		return 0, h.err
	}
	n, err := h.r.Read(b)
	eachLine(&h.part, b[:n], err != nil, h.p.read)
	if err != nil {
		h.err = err
		if n > 0 {
			return n, nil
		}
		h.p.wait()
	}
	return n, err
}

func (h *heldReader) Close() error {
	h.p.close()
	return h.r.Close()
}

// replyWriter forgets each request once its reply is written. When out
// fails (the client closed it), nothing more can be answered, and nothing
// is waited for.
type replyWriter struct {
	w    io.Writer
	p    *pending
	part []byte
}

func (r *replyWriter) Write(b []byte) (int, error) {
	n, err := r.w.Write(b)
	eachLine(&r.part, b[:n], false, r.p.wrote)
	if err != nil {
		r.p.close()
	}
	return n, err
}

// Close leaves out open: it is the process's stdout.
func (r *replyWriter) Close() error { return nil }
