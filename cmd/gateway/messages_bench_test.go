package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/sessions"
)

// BenchmarkMessagesTurn is a turn of a client that re-sends a conversation
// of 1,000 messages, found by its history, on /v1/messages (the Messages
// API's shape) and on /v1/chat/completions (the same conversation), the
// model answering at once, handled in-process. The target (issue 44):
// /v1/messages at most 1.1x /v1/chat/completions a turn.
func BenchmarkMessagesTurn(b *testing.B) {
	for _, route := range []string{"/v1/chat/completions", "/v1/messages"} {
		b.Run(route[4:], func(b *testing.B) { benchRouteTurn(b, route) })
	}
}

func benchRouteTurn(b *testing.B, route string) {
	dir := b.TempDir()
	st := sessions.NewStore(dir, "default", 10*time.Second, func(string) {})
	gs := gatewaystate.NewStore(dir, 10*time.Second, func(string) {})
	answer := &funcProvider{name: "fast", fn: func(context.Context, provider.Request) (provider.Reply, error) {
		return assistant("ok"), nil
	}}
	h := New(Options{Sessions: st, Store: gs, Provider: answer}).Handler()
	sess, _, err := st.Create(sessions.Session{Source: "gateway"})
	if err != nil {
		b.Fatal(err)
	}
	var history []sessions.Message
	var client []map[string]any
	for i := range 500 {
		u := fmt.Sprintf("question %d: %s", i, bytes.Repeat([]byte("x"), 150))
		history = append(history, sessions.Message{Role: "user", Content: sessions.TextContent(u)},
			sessions.Message{Role: "assistant", Content: sessions.TextContent("ok")})
		client = append(client, map[string]any{"role": "user", "content": u}, map[string]any{"role": "assistant", "content": "ok"})
	}
	if _, err := st.Append(sess.ID, sessions.CopyMessages(history)); err != nil {
		b.Fatal(err)
	}
	index := func() {
		stored, err := st.Messages(sess.ID)
		if err != nil {
			b.Fatal(err)
		}
		if err := gs.PutHistory(gatewaystate.History{Digest: conversationDigest("", history), SessionID: sess.ID, MessageCount: int64(len(stored)), LastTS: stored[len(stored)-1].TS}); err != nil {
			b.Fatal(err)
		}
	}
	index()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		msgs := append(client, map[string]any{"role": "user", "content": fmt.Sprint("new ", i)})
		req := map[string]any{"messages": msgs}
		if route == "/v1/messages" {
			req["max_tokens"] = 1024
		}
		body, _ := json.Marshal(req)
		r := httptest.NewRequest("POST", route, bytes.NewReader(body))
		r.Host = "127.0.0.1"
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		b.StartTimer()
		h.ServeHTTP(w, r)
		b.StopTimer()
		if w.Code != http.StatusOK || w.Header().Get(SessionHeader) != sess.ID {
			b.Fatalf("status %d, session %s: %s", w.Code, w.Header().Get(SessionHeader), w.Body.Bytes())
		}
		if _, err := st.Save(sess.ID, history, true); err != nil {
			b.Fatal(err)
		}
		index()
		b.StartTimer()
	}
}
