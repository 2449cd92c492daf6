// Command gwbench is the comparison of scripts/bench-gateway.sh: a fake
// upstream model, a bare reverse proxy to put in front of it, and the
// clients that load whichever gateway is measured.
//
//	gwbench upstream -addr 127.0.0.1:0 [-delay 20ms]
//	gwbench proxy -addr 127.0.0.1:0 -upstream http://127.0.0.1:PORT
//	gwbench load -url http://127.0.0.1:PORT -clients 16 -turns 50 [-stream] [-history N]
//
// upstream answers POST /v1/chat/completions (whole or streamed) with a
// short reply after delay, counts the connections it accepted, and tells
// the count at GET /stats. proxy is httputil.ReverseProxy and nothing
// else: the floor a gateway that stores nothing could reach. load runs
// clients at once, each a conversation that re-sends its whole history
// every turn (a stateless chat client), and prints the turns, turns/s and
// p50/p99 latency. upstream and proxy print their address on stdout.
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
		fmt.Fprintln(os.Stderr, "usage: gwbench upstream|proxy|load [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	delay := fs.Duration("delay", 0, "upstream: how long the model takes to answer")
	upstream := fs.String("upstream", "", "proxy: the upstream's URL")
	target := fs.String("url", "", "load: the gateway's URL")
	clients := fs.Int("clients", 16, "load: clients at once")
	turns := fs.Int("turns", 50, "load: turns of each client")
	stream := fs.Bool("stream", false, "load: ask for streamed replies")
	history := fs.Int("history", 0, "load: messages each client's conversation holds before its first turn")
	fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "upstream":
		err = serveUpstream(*addr, *delay)
	case "proxy":
		err = serveProxy(*addr, *upstream)
	case "load":
		err = load(*target, *clients, *turns, *history, *stream)
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

func load(target string, clients, turns, history int, stream bool) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var mu sync.Mutex
	var lat []time.Duration
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			var msgs []map[string]string
			for i := range history / 2 {
				msgs = append(msgs,
					map[string]string{"role": "user", "content": fmt.Sprintf("client %d at %d, earlier question %d: %s", c, start.UnixNano(), i, strings.Repeat("x", 150))},
					map[string]string{"role": "assistant", "content": "ok"})
			}
			for t := range turns {
				msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprintf("client %d at %d, turn %d: what next?", c, start.UnixNano(), t)})
				body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "stream": stream})
				t0 := time.Now()
				reply, err := turn(client, target, body, stream)
				d := time.Since(t0)
				if err != nil {
					failed.Add(1)
					fmt.Fprintln(os.Stderr, "gwbench:", err)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				msgs = append(msgs, map[string]string{"role": "assistant", "content": reply})
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
func turn(client *http.Client, target string, body []byte, stream bool) (string, error) {
	resp, err := client.Post(target+"/v1/chat/completions", "application/json", bytes.NewReader(body))
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
