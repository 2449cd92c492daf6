package gateway

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/provider"
)

// logged collects what the server reports through Options.Logf.
type logged struct {
	mu    sync.Mutex
	lines []string
}

func (l *logged) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logged) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// An API client learns what failed, not where the server keeps its files:
// a failure of the store is a 500 saying "internal error", with the
// detail (path included) in the server's log.
func TestInternalErrorNamesNoPath(t *testing.T) {
	t.Parallel()
	var log logged
	e := newTestEnv(t, func(o *Options) { o.Logf = log.logf })
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(e.dir, "sessions")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/responses", "/v1/chat/completions"} {
		resp, out := e.send("POST", path, "", `{"input":"hi","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Content-Type": jsonType})
		er := mustError(t, resp, out, 500, "server_error")
		if strings.Contains(string(out), e.dir) || strings.Contains(string(out), elsewhere) || !strings.Contains(*er.Error.Message, "internal error") {
			t.Fatalf("%s: 500 body %s", path, out)
		}
	}
	if !strings.Contains(log.String(), filepath.Join(e.dir, "sessions")) {
		t.Fatalf("the log lacks the detail: %s", log.String())
	}
}

// A lock wait that times out says which kind of lock, not its path.
func TestLockTimeoutNamesNoPath(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.Store.LockTimeout = 10 * time.Millisecond })
	unlock, err := e.store.LockConversation("busy")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	resp, out := e.send("POST", "/v1/responses", "", `{"input":"hi","conversation":"busy"}`, map[string]string{"Content-Type": jsonType})
	er := mustError(t, resp, out, 503, "server_error")
	if strings.Contains(string(out), e.dir) || !strings.Contains(*er.Error.Message, "conversation busy") || er.Error.Code == nil || *er.Error.Code != "lock_timeout" {
		t.Fatalf("503 body %s", out)
	}
}

// A provider failure is a 502 that names what failed, but not a local
// file the provider used.
func TestProviderErrorNamesNoPath(t *testing.T) {
	t.Parallel()
	var log logged
	const secret = "/srv/hermes/secret/tools-123.json"
	e := newTestEnv(t, func(o *Options) {
		o.Logf = log.logf
		o.Provider = &funcProvider{name: "exec", fn: func(context.Context, provider.Request) (provider.Reply, error) {
			err := &fs.PathError{Op: "open", Path: secret, Err: fs.ErrPermission}
			return provider.Reply{}, &provider.Error{Provider: "exec", Message: "exec provider: " + err.Error(), Err: err}
		}}
	})
	for _, body := range []string{`{"input":"hi"}`, `{"input":"hi","stream":true}`} {
		resp, out := e.send("POST", "/v1/responses", "", body, map[string]string{"Content-Type": jsonType})
		if strings.Contains(string(out), secret) || !strings.Contains(string(out), "provider") {
			t.Fatalf("%s: status %d, body %s", body, resp.StatusCode, out)
		}
	}
	if !strings.Contains(log.String(), secret) {
		t.Fatalf("the log lacks the detail: %s", log.String())
	}
}

// A deleted session takes its replies with it: its stored responses
// answer 404, as an unknown one does, and cannot be chained from.
func TestResponsesOfDeletedSessionNotFound(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, out := e.send("POST", "/v1/responses", "", `{"input":"private"}`, map[string]string{"Content-Type": jsonType})
	mustStatus(t, resp, out, 200)
	id := decode[respObj](t, out).ID
	sid := resp.Header.Get(SessionHeader)
	if _, err := e.sessions.End(sid, "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sessions.Delete(sid, false); err != nil {
		t.Fatal(err)
	}
	resp, out = e.send("GET", "/v1/responses/"+id, "", "", nil)
	mustCode(t, resp, out, 404, "response_not_found")
	if strings.Contains(string(out), "private") {
		t.Fatalf("the deleted session's reply was sent: %s", out)
	}
	resp, out = e.send("POST", "/v1/responses", "", `{"input":"more","previous_response_id":"`+id+`"}`, map[string]string{"Content-Type": jsonType})
	mustCode(t, resp, out, 404, "previous_response_not_found")
}
