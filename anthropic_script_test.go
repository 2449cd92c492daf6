package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hermes/hermes/cmd/provider/anthropictest"
)

// anthropicRule is a line of an anthropic-server script: the blocks
// (text, tool_use) that answer the first request whose last message's
// text holds match, times times (default 1, -1 for no limit), with
// stop_reason when set.
type anthropicRule struct {
	Match      string                `json:"match"`
	Times      int                   `json:"times"`
	Blocks     []anthropictest.Block `json:"blocks"`
	StopReason string                `json:"stop_reason"`
}

// anthropicServerCmd is `anthropic-server start FILE`: the strict fake
// Messages API (cmd/provider/anthropictest) playing FILE's rules for the
// rest of the script, with hermes pointed at it (provider anthropic);
// each request is appended to $WORK/anthropic-requests.jsonl as
// {"status","error","usage","body"}. A request no rule answers gets the
// text "no rule for: <its last text>". `anthropic-server requests N`
// checks how many requests came.
func anthropicServerCmd(servers *sync.Map) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: anthropic-server start FILE | anthropic-server requests N")
		}
		switch args[0] {
		case "start":
			data, err := os.ReadFile(ts.MkAbs(args[1]))
			ts.Check(err)
			var rules []*anthropicRule
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				r := &anthropicRule{}
				if err := json.Unmarshal([]byte(line), r); err != nil {
					ts.Fatalf("%s: %v", line, err)
				}
				if r.Times == 0 {
					r.Times = 1
				}
				rules = append(rules, r)
			}
			var mu sync.Mutex
			stops := map[*anthropictest.Request]string{}
			fake := &anthropictest.Server{Reply: func(req *anthropictest.Request) []anthropictest.Block {
				mu.Lock()
				defer mu.Unlock()
				last := req.LastText()
				for _, r := range rules {
					if r.Times != 0 && strings.Contains(last, r.Match) {
						r.Times--
						stops[req] = r.StopReason
						return r.Blocks
					}
				}
				return []anthropictest.Block{{Type: "text", Text: "no rule for: " + last}}
			}, Stop: func(req *anthropictest.Request) string {
				mu.Lock()
				defer mu.Unlock()
				return stops[req]
			}}
			log := filepath.Join(ts.Getenv("WORK"), "anthropic-requests.jsonl")
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fake.ServeHTTP(w, r)
				reqs := fake.Requests()
				last := reqs[len(reqs)-1]
				line, _ := json.Marshal(map[string]any{"status": last.Status, "error": last.Error, "usage": last.Usage, "body": json.RawMessage(last.Body)})
				mu.Lock()
				defer mu.Unlock()
				f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
				if err == nil {
					f.Write(append(line, '\n'))
					f.Close()
				}
			})
			l, err := net.Listen("tcp", "127.0.0.1:0")
			ts.Check(err)
			srv := &http.Server{Handler: handler}
			go srv.Serve(l)
			ts.Defer(func() { srv.Shutdown(context.Background()) })
			servers.Store(ts, fake)
			ts.Setenv("HERMES_PROVIDER", "anthropic")
			ts.Setenv("HERMES_BASE_URL", "http://"+l.Addr().String())
			ts.Setenv("HERMES_MODEL", "claude-test")
			ts.Setenv("ANTHROPIC_API_KEY", "test-key")
		case "requests":
			v, ok := servers.Load(ts)
			if !ok {
				ts.Fatalf("anthropic-server requests: no server started")
			}
			want, err := strconv.Atoi(args[1])
			ts.Check(err)
			if got := len(v.(*anthropictest.Server).Requests()); got != want {
				ts.Fatalf("the server got %d requests, want %d (see $WORK/anthropic-requests.jsonl)", got, want)
			}
		default:
			ts.Fatalf("usage: anthropic-server start FILE | anthropic-server requests N")
		}
	}
}
