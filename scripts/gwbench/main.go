// Command gwbench is the comparison of scripts/bench-gateway.sh: a fake
// upstream model, a bare reverse proxy to put in front of it, and the
// clients that load whichever gateway is measured.
//
//	gwbench upstream -addr 127.0.0.1:0 [-delay 20ms]
//	gwbench proxy -addr 127.0.0.1:0 -upstream http://127.0.0.1:PORT
//	gwbench load -url http://127.0.0.1:PORT -clients 16 [-conversations 1] -turns 50 [-stream] [-history N] [-header 'K: V']...
//	gwbench port
//
// upstream answers POST /v1/chat/completions (whole or streamed) with a
// short reply after delay, counts the connections it accepted, and tells
// the count at GET /stats. proxy is httputil.ReverseProxy and nothing
// else: the floor a gateway that stores nothing could reach. load runs
// clients at once, each holding its conversations one after the other,
// each re-sending its whole history every turn (a stateless chat client),
// and prints the turns, turns/s and p50/p99 latency; each -header is sent
// with every request (Portkey is told its provider and upstream in
// headers). upstream and proxy print their address on stdout; port prints
// a free port of 127.0.0.1, for a server that must be given one (Portkey).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gwbench upstream|proxy|load|port [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	delay := fs.Duration("delay", 0, "upstream: how long the model takes to answer")
	upstream := fs.String("upstream", "", "proxy: the upstream's URL")
	target := fs.String("url", "", "load: the gateway's URL")
	clients := fs.Int("clients", 16, "load: clients at once")
	turns := fs.Int("turns", 50, "load: turns of each conversation")
	conversations := fs.Int("conversations", 1, "load: conversations of each client, one after the other")
	stream := fs.Bool("stream", false, "load: ask for streamed replies")
	history := fs.Int("history", 0, "load: messages each client's conversation holds before its first turn")
	header := http.Header{}
	fs.Func("header", "load: a header `K: V` to send with every request (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("%q is not K: V", v)
		}
		header.Add(strings.TrimSpace(k), strings.TrimSpace(val))
		return nil
	})
	fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "upstream":
		err = serveUpstream(*addr, *delay)
	case "proxy":
		err = serveProxy(*addr, *upstream)
	case "load":
		err = load(*target, *clients, *conversations, *turns, *history, *stream, header)
	case "port":
		err = freePort()
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwbench:", err)
		os.Exit(1)
	}
}

func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Printf("http://%s\n", ln.Addr())
	os.Stdout.Sync()
	return ln, nil
}

func serveUpstream(addr string, delay time.Duration) error {
	ln, err := listen(addr)
	if err != nil {
		return err
	}
	var conns atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "{\"conns\":%d}\n", conns.Load())
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		time.Sleep(delay)
		msg := map[string]any{"role": "assistant", "content": "a short reply"}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
				"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": msg, "finish_reason": "stop"}}})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunk)
	})
	srv := &http.Server{Handler: mux, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	return srv.Serve(ln)
}

func serveProxy(addr, upstream string) error {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-upstream %q is not a URL", upstream)
	}
	ln, err := listen(addr)
	if err != nil {
		return err
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	proxy.Transport = t
	return http.Serve(ln, proxy)
}

// freePort prints a port of 127.0.0.1 that nothing listens on: the
// kernel's choice for a listener, closed at once.
func freePort() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	return nil
}

func load(target string, clients, conversations, turns, history int, stream bool, header http.Header) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var mu sync.Mutex
	var lat []time.Duration
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	// converse runs client c's conversation conv; false when a turn failed.
	converse := func(c, conv int) bool {
		var msgs []map[string]string
		for i := range history / 2 {
			msgs = append(msgs,
				map[string]string{"role": "user", "content": fmt.Sprintf("client %d at %d, conversation %d, earlier question %d: %s", c, start.UnixNano(), conv, i, strings.Repeat("x", 150))},
				map[string]string{"role": "assistant", "content": "ok"})
		}
		for t := range turns {
			msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprintf("client %d at %d, conversation %d, turn %d: what next?", c, start.UnixNano(), conv, t)})
			body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "stream": stream})
			t0 := time.Now()
			reply, err := turn(client, target, body, stream, header)
			d := time.Since(t0)
			if err != nil {
				failed.Add(1)
				fmt.Fprintln(os.Stderr, "gwbench:", err)
				return false
			}
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
			msgs = append(msgs, map[string]string{"role": "assistant", "content": reply})
		}
		return true
	}
	for c := range clients {
		wg.Go(func() {
			for conv := range conversations {
				if !converse(c, conv) {
					return
				}
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	fmt.Printf("turns %d failed %d seconds %.3f turns/s %.1f p50_ms %.2f p99_ms %.2f\n", len(lat), failed.Load(), secs, float64(len(lat))/secs, pct(0.50), pct(0.99))
	if failed.Load() > 0 {
		return fmt.Errorf("%d clients failed", failed.Load())
	}
	return nil
}

// turn sends one request and returns the reply's text.
func turn(client *http.Client, target string, body []byte, stream bool, header http.Header) (string, error) {
	req, err := http.NewRequest(http.MethodPost, target+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if !stream {
		var out struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 {
			return "", fmt.Errorf("reply: %v", err)
		}
		return out.Choices[0].Message.Content, nil
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if json.Unmarshal([]byte(data), &chunk) == nil && len(chunk.Choices) > 0 {
			text.WriteString(chunk.Choices[0].Delta.Content)
		}
	}
	return text.String(), sc.Err()
}
