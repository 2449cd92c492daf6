package gateway

import (
	"net/http"
	"slices"
)

// Protect wraps h, another HTTP service of the profile's (hermes mcp
// serve --http), in the gateway's own checks, in its order: a foreign
// Host or an Origin not in origins refused with 403, CORS for the allowed
// ones, then the bearer key when key is set. hosts and origins are as
// ParseAllowedHosts and ParseAllowedOrigins return them; addr, the listen
// address, is a name the service answers to as well.
func Protect(h http.Handler, addr, key string, hosts, origins []string) http.Handler {
	s := &Server{opts: Options{APIKey: key, AllowedHosts: slices.Concat(hosts, listenHost(addr)), AllowedOrigins: origins}}
	return s.guard(s.auth(h))
}
