package gateway

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// send sends a request whose Host (when set), headers and body the test
// chooses, and returns the response with its body read.
func (e *testEnv) send(method, path, host, body string, header map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	return sendTo(e.t, e.ts.URL, method, path, host, body, header)
}

func sendTo(t *testing.T, base, method, path, host, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang guard
	defer cancel()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp, out
}

// mustCode checks an OpenAI error body with status and code.
func mustCode(t *testing.T, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	e := mustError(t, resp, body, status, "invalid_request_error")
	if e.Error.Code == nil || *e.Error.Code != code {
		t.Fatalf("%s %s: code %v, want %q; body %s", resp.Request.Method, resp.Request.URL.Path, e.Error.Code, code, body)
	}
}

// noSessions fails the test if a refused request left a session.
func (e *testEnv) noSessions() {
	e.t.Helper()
	if ids, _ := e.sessions.IDs(); len(ids) != 0 {
		e.t.Fatalf("refused requests made sessions %v", ids)
	}
}

func noCORS(t *testing.T, resp *http.Response) {
	t.Helper()
	for k := range resp.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Fatalf("%s %s: CORS header %s: %s", resp.Request.Method, resp.Request.URL.Path, k, resp.Header.Get(k))
		}
	}
}

const jsonType = "application/json"

// A DNS-rebinding page reaches the gateway under its own name: refused
// whatever the route, before anything is read or stored.
func TestForeignHostRefused(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.AllowedHosts = []string{"hermes.lan"} })
	body := `{"input":"hi"}`
	for _, host := range []string{"evil.example", "evil.example:8642", "127.0.0.1.evil.example", "localhost.evil.example:80", "hermes.lan.evil.example"} {
		resp, out := e.send("POST", "/v1/responses", host, body, map[string]string{"Content-Type": jsonType})
		mustCode(t, resp, out, 403, "host_not_allowed")
		resp, out = e.send("GET", "/health", host, "", nil)
		mustCode(t, resp, out, 403, "host_not_allowed")
	}
	e.noSessions()
	for _, host := range []string{"localhost", "LOCALHOST:8642", "127.0.0.1", "127.1.2.3:80", "[::1]:8642", "hermes.lan", "Hermes.LAN:443", e.ts.Listener.Addr().String()} {
		resp, out := e.send("POST", "/v1/responses", host, body, map[string]string{"Content-Type": jsonType})
		mustStatus(t, resp, out, 200)
	}
}

// The address a request came in on is one the server listens on, so its
// Host may name it (a gateway on 0.0.0.0 reached at 192.0.2.7); a name
// that resolves to it may not.
func TestHostAllowed(t *testing.T) {
	t.Parallel()
	local := netip.MustParseAddr("192.0.2.7")
	mapped := netip.MustParseAddr("::ffff:192.0.2.7")
	allowed := []string{"hermes.lan"}
	for host, want := range map[string]bool{
		"192.0.2.7": true, "192.0.2.7:8642": true, "192.0.2.8": false, "[::ffff:192.0.2.7]:1": true,
		"localhost": true, "localhost.": true, "[::1]": true, "127.0.0.9": true, "hermes.lan": true, "hermes.lan.": true,
		"rebind.example": false, "": false, "[::1": false, "0.0.0.0": false, "[::]:80": false,
	} {
		for _, l := range []netip.Addr{local, mapped} {
			if got := hostAllowed(host, l, allowed); got != want {
				t.Errorf("hostAllowed(%q, %s) = %v, want %v", host, l, got, want)
			}
		}
	}
}

// A web page's request carries its Origin: refused unless listed, and
// never answered with a CORS header, whatever its content type.
func TestForeignOriginRefused(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.AllowedOrigins = []string{"http://app.test"} })
	for _, origin := range []string{"http://evil.example", "null", "http://app.test:8080", "https://app.test", "http://127.0.0.1:8642"} {
		for _, ct := range []string{"text/plain", jsonType} {
			resp, out := e.send("POST", "/v1/responses", "", `{"input":"from a web page"}`, map[string]string{"Origin": origin, "Content-Type": ct})
			mustCode(t, resp, out, 403, "origin_not_allowed")
			noCORS(t, resp)
		}
		resp, out := e.send("OPTIONS", "/v1/responses", "", "", map[string]string{
			"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type",
		})
		mustCode(t, resp, out, 403, "origin_not_allowed")
		noCORS(t, resp)
		resp, out = e.send("GET", "/v1/models", "", "", map[string]string{"Origin": origin})
		mustCode(t, resp, out, 403, "origin_not_allowed")
		noCORS(t, resp)
	}
	e.noSessions()
	// Without an Origin (not a browser) nothing changes.
	resp, out := e.send("GET", "/v1/models", "", "", nil)
	mustStatus(t, resp, out, 200)
	noCORS(t, resp)
}

// An allowed origin gets CORS: a preflight naming the methods and the
// headers the API and the official SDKs use, before any API key is asked
// for, and the origin echoed on every response.
func TestAllowedOriginCORS(t *testing.T) {
	t.Parallel()
	const origin = "http://localhost:5173"
	e := newTestEnv(t, func(o *Options) {
		o.AllowedOrigins = []string{origin}
		o.APIKey = "s3cret"
	})
	// The Anthropic SDK in a browser sends its key as x-api-key, its
	// version and betas, and the header it needs to run in a page at all.
	requested := "authorization, content-type, x-hermes-session-id, idempotency-key, openai-beta, x-stainless-os, x-stainless-retry-count, " +
		"x-api-key, anthropic-version, anthropic-beta, anthropic-dangerous-direct-browser-access"
	resp, out := e.send("OPTIONS", "/v1/chat/completions", "", "", map[string]string{
		"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": requested,
	})
	mustStatus(t, resp, out, 204)
	h := resp.Header
	if h.Get("Access-Control-Allow-Origin") != origin || !slices.Contains(h.Values("Vary"), "Origin") {
		t.Fatalf("preflight headers: %v", h)
	}
	methods := strings.ToLower(h.Get("Access-Control-Allow-Methods"))
	for _, m := range []string{"get", "post"} {
		if !strings.Contains(methods, m) {
			t.Fatalf("Access-Control-Allow-Methods %q lacks %s", methods, m)
		}
	}
	allowedHeaders := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
	for _, name := range strings.Split(requested, ", ") {
		if !slices.Contains(strings.Split(allowedHeaders, ", "), name) {
			t.Fatalf("Access-Control-Allow-Headers %q lacks %s", allowedHeaders, name)
		}
	}
	if h.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("credentials allowed: %v", h)
	}

	resp, out = e.send("POST", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{
		"Origin": origin, "Content-Type": jsonType, "Authorization": "Bearer s3cret",
	})
	mustStatus(t, resp, out, 200)
	if resp.Header.Get("Access-Control-Allow-Origin") != origin || !slices.Contains(resp.Header.Values("Vary"), "Origin") ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), SessionHeader) {
		t.Fatalf("response headers: %v", resp.Header)
	}
	// The page can read a refusal too.
	resp, out = e.send("POST", "/v1/chat/completions", "", `{"messages":[]}`, map[string]string{"Origin": origin, "Content-Type": jsonType})
	mustCode(t, resp, out, 401, "invalid_api_key")
	if resp.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("401 headers: %v", resp.Header)
	}
}

// A "simple" request (text/plain, form, no type) needs no preflight, so a
// page could send one from anywhere: the API takes JSON only.
func TestContentTypeMustBeJSON(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	paths := []string{"/v1/responses", "/v1/chat/completions"}
	body := `{"input":"hi","messages":[{"role":"user","content":"hi"}]}`
	for _, path := range paths {
		for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/json; charset=latin1", "application/jsonx"} {
			resp, out := e.send("POST", path, "", body, map[string]string{"Content-Type": ct})
			mustCode(t, resp, out, 415, "unsupported_media_type")
		}
	}
	e.noSessions()
	for _, path := range paths {
		for _, ct := range []string{jsonType, "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"} {
			resp, out := e.send("POST", path, "", body, map[string]string{"Content-Type": ct})
			mustStatus(t, resp, out, 200)
		}
	}
}

func TestParseAllowedHostsAndOrigins(t *testing.T) {
	t.Parallel()
	hosts, err := ParseAllowedHosts([]string{"Hermes.LAN.", "[::1]", "192.0.2.7", "::ffff:192.0.2.8", "my_box"})
	if err != nil || !slices.Equal(hosts, []string{"hermes.lan", "::1", "192.0.2.7", "192.0.2.8", "my_box"}) {
		t.Fatalf("ParseAllowedHosts: %q, %v", hosts, err)
	}
	for _, bad := range []string{"", "http://hermes.lan", "hermes.lan:8642", "*.lan", "hermes.lan/x", "a..b", "-a.lan"} {
		if _, err := ParseAllowedHosts([]string{bad}); err == nil {
			t.Errorf("ParseAllowedHosts(%q) took it", bad)
		}
	}
	origins, err := ParseAllowedOrigins([]string{"http://localhost:5173", "HTTPS://App.Example/", "http://a.test:80", "https://b.test:443", "https://c.test:8443", "chrome-extension://abcdef"})
	want := []string{"http://localhost:5173", "https://app.example", "http://a.test", "https://b.test", "https://c.test:8443", "chrome-extension://abcdef"}
	if err != nil || !slices.Equal(origins, want) {
		t.Fatalf("ParseAllowedOrigins: %q, %v", origins, err)
	}
	for _, bad := range []string{"", "*", "null", "NULL", "localhost:5173", "app.example", "http://", "http://a.test/app", "http://a.test?x", "http://a.test#x", "http://u@a.test", "mailto:x@y"} {
		if _, err := ParseAllowedOrigins([]string{bad}); err == nil {
			t.Errorf("ParseAllowedOrigins(%q) took it", bad)
		}
	}
}

// gateway serve applies the settings of config.yaml: the names and
// origins it allows, and refuses the others.
func TestProcessAllowedHostsAndOrigins(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeConfig(t, home, "gateway:\n  allowed_hosts: [hermes.test]\n  allowed_origins: [\"http://app.test\"]\n"+
		"  read_timeout: 5s\n  write_timeout: 5s\n  max_connections: 16\n")
	g := startGateway(t, home)
	body := `{"input":"hi"}`
	resp, out := sendTo(t, g.url, "POST", "/v1/responses", "evil.test:8642", body, map[string]string{"Content-Type": jsonType})
	mustCode(t, resp, out, 403, "host_not_allowed")
	resp, out = sendTo(t, g.url, "POST", "/v1/responses", "", body, map[string]string{"Content-Type": jsonType, "Origin": "http://evil.test"})
	mustCode(t, resp, out, 403, "origin_not_allowed")
	resp, out = sendTo(t, g.url, "POST", "/v1/responses", "", body, map[string]string{"Content-Type": "text/plain"})
	mustCode(t, resp, out, 415, "unsupported_media_type")
	resp, out = sendTo(t, g.url, "POST", "/v1/responses", "hermes.test:8642", body, map[string]string{"Content-Type": jsonType, "Origin": "http://app.test"})
	mustStatus(t, resp, out, 200)
	if resp.Header.Get("Access-Control-Allow-Origin") != "http://app.test" {
		t.Fatalf("headers %v", resp.Header)
	}
}

func TestListenHost(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string][]string{
		"Hermes.LAN:8642": {"hermes.lan"}, "[::1]:1": {"::1"}, "192.0.2.7:80": {"192.0.2.7"}, ":8642": nil, "nonsense": nil,
	} {
		if got := listenHost(addr); !slices.Equal(got, want) {
			t.Errorf("listenHost(%q) = %q, want %q", addr, got, want)
		}
	}
}

// The scheme of Authorization is case-insensitive (RFC 9110 11.1), and
// one or more spaces may follow it: clients that send "bearer" are let in.
func TestBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, func(o *Options) { o.APIKey = "s3cret" })
	chat := map[string]any{"messages": []any{userMsg("x")}}
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret", "bEaReR  s3cret"} {
		resp, body := e.do("POST", "/v1/chat/completions", chat, map[string]string{"Authorization": auth})
		mustStatus(t, resp, body, 200)
	}
	for _, auth := range []string{"Bearers3cret", "bearer", "bearer nope", "Basic s3cret", "Bearer\ts3cret x"} {
		resp, body := e.do("GET", "/v1/models", nil, map[string]string{"Authorization": auth})
		mustCode(t, resp, body, 401, "invalid_api_key")
	}
}
