package gateway

import (
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// corsHeaders are the request headers a page from an allowed origin may
// send: those the API reads and those the official SDKs add. The SDKs
// also send x-stainless-* headers (os, arch, runtime, retry count …),
// whose set changes with their versions: any of those a preflight asks
// for is allowed too.
var corsHeaders = []string{"Authorization", "Content-Type", SessionHeader, "Idempotency-Key",
	"OpenAI-Beta", "OpenAI-Organization", "OpenAI-Project",
	"X-Api-Key", "Anthropic-Version", "Anthropic-Beta", "Anthropic-Dangerous-Direct-Browser-Access"}

// guard refuses what a web page could send the gateway without the user:
// a Host that is not a name of this server (DNS rebinding) and an Origin
// that is not allowed, both with 403 before anything else runs. It
// answers CORS for allowed origins only: their preflights here (before the
// API key is asked for, since browsers send none with a preflight) and the
// origin echoed on every response, errors included.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var local netip.Addr
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if ap, err := netip.ParseAddrPort(a.String()); err == nil {
				local = ap.Addr()
			}
		}
		if !hostAllowed(r.Host, local, s.opts.AllowedHosts) {
			s.fail(w, r, &apiError{status: http.StatusForbidden, typ: "invalid_request_error", code: "host_not_allowed",
				msg: fmt.Sprintf("Host %q is not a name of this gateway (loopback names, the address it was reached at, gateway.allowed_hosts)", r.Host)})
			return
		}
		origins, sent := r.Header["Origin"]
		if !sent {
			next.ServeHTTP(w, r)
			return
		}
		origin := strings.ToLower(origins[0])
		if len(origins) != 1 || !slices.Contains(s.opts.AllowedOrigins, origin) {
			s.fail(w, r, &apiError{status: http.StatusForbidden, typ: "invalid_request_error", code: "origin_not_allowed",
				msg: fmt.Sprintf("Origin %q is not in gateway.allowed_origins", strings.Join(origins, ", "))})
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origins[0])
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			preflight(w, r)
			return
		}
		h.Set("Access-Control-Expose-Headers", SessionHeader)
		next.ServeHTTP(w, r)
	})
}

// preflight answers a CORS preflight of an allowed origin.
func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	allow := slices.Clone(corsHeaders)
	for _, name := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		if name = strings.TrimSpace(name); strings.HasPrefix(strings.ToLower(name), "x-stainless-") {
			allow = append(allow, name)
		}
	}
	h.Set("Access-Control-Allow-Headers", strings.Join(allow, ", "))
	// A public page calling a gateway on the user's machine or network is
	// what Chrome's Private Network Access asks about; the user allowed
	// this origin.
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// hostAllowed reports whether a request's Host (a port, if any, is not
// compared) names this server: localhost, a loopback address, local (the
// address the request came in on: one the server listens on), or one of
// allowed (as ParseAllowedHosts returns them). A name that resolves to
// the server is not enough: it is what a DNS-rebinding page uses.
func hostAllowed(host string, local netip.Addr, allowed []string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	} else if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		name = host[1 : len(host)-1]
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "" {
		return false
	}
	if name == "localhost" {
		return true
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		ip = ip.Unmap().WithZone("")
		return ip.IsLoopback() || (local.IsValid() && ip == local.Unmap().WithZone("")) || slices.Contains(allowed, ip.String())
	}
	return slices.Contains(allowed, name)
}

// ParseAllowedHosts checks gateway.allowed_hosts: host names or IP
// addresses, without scheme or port. It returns them in the form
// hostAllowed compares: lower case, no trailing dot, an IPv6 address
// without brackets.
func ParseAllowedHosts(hosts []string) ([]string, error) {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		name := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if len(name) > 1 && name[0] == '[' && name[len(name)-1] == ']' {
			name = name[1 : len(name)-1]
		}
		if ip, err := netip.ParseAddr(name); err == nil {
			out = append(out, ip.Unmap().WithZone("").String())
			continue
		}
		if !validHostName(name) {
			return nil, fmt.Errorf("%q is not a host name or an IP address (no scheme, port, path or wildcard)", h)
		}
		out = append(out, name)
	}
	return out, nil
}

func validHostName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// ParseAllowedOrigins checks gateway.allowed_origins: origins as browsers
// send them, scheme://host[:port], with nothing after. It returns them as
// the guard compares them: lower case, without a scheme's default port
// or a trailing slash. "*" and "null" (sandboxed frames and local files
// send it: any page can) are refused: list the origins.
func ParseAllowedOrigins(origins []string) ([]string, error) {
	out := make([]string, 0, len(origins))
	for _, o := range origins {
		bad := func(why string) error { return fmt.Errorf("%q is not an origin (%s)", o, why) }
		s := strings.TrimSpace(o)
		if s == "*" || strings.EqualFold(s, "null") {
			return nil, bad("list each origin a page may call from, e.g. http://localhost:5173")
		}
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
			return nil, bad("want scheme://host[:port], e.g. http://localhost:5173")
		}
		if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#") {
			return nil, bad("nothing may follow the host and port")
		}
		scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
		if port := u.Port(); (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
			host = strings.TrimSuffix(host, ":"+port)
		}
		out = append(out, scheme+"://"+host)
	}
	return out, nil
}

// checkJSONType refuses a body that is not declared application/json (a
// charset parameter, if any, must be utf-8, as JSON is): a page can send
// text/plain, a form or no type to any server without a preflight, so
// taking those would let it drive the gateway.
func checkJSONType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	if ct == "" {
		ct = "none"
	}
	return &apiError{status: http.StatusUnsupportedMediaType, typ: "invalid_request_error", code: "unsupported_media_type",
		msg: fmt.Sprintf("the request body must be JSON sent as Content-Type: application/json, not %s", ct)}
}

// markerPrefix begins the names of the fields that mark the messages
// hermes puts in a transcript itself (agent.NoteMarker,
// instructionsMarker, and any it adds later). A client's message carrying
// one is refused rather than stripped: it could only come from a client
// replaying hermes's own transcript, or one trying to pass its text off
// as hermes's, and either should hear so.
const markerPrefix = "hermes_"

// refuseMarkers refuses the fields of a client's message (param names it)
// whose names begin with markerPrefix, in any case.
func refuseMarkers(fields map[string]json.RawMessage, param string) error {
	var found []string
	for k := range fields {
		if strings.HasPrefix(strings.ToLower(k), markerPrefix) {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	return badRequest(param+"."+found[0], "%s.%s: fields named %s* mark hermes's own messages; a client's message cannot carry them",
		param, found[0], markerPrefix)
}

// bearerToken is the token of an Authorization header of the Bearer
// scheme, whose name is case-insensitive (RFC 9110, section 11.1:
// clients send "bearer" too), followed by one or more spaces.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(token, " "), true
}
