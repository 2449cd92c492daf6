package mcp

import (
	"fmt"
	"net/http"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport is the streamable HTTP transport of a url server, its
// headers (and bearer token) added to every request.
func httpTransport(s Spec) (sdk.Transport, error) {
	u, err := expand("url", s.Config.URL)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	for k, v := range s.Config.Headers {
		v, err := expand("headers "+k, v)
		if err != nil {
			return nil, err
		}
		h.Set(k, v)
	}
	if name := s.Config.BearerTokenEnv; name != "" {
		token := os.Getenv(name)
		if token == "" {
			return nil, fmt.Errorf("bearer_token_env: $%s is not set", name)
		}
		h.Set("Authorization", "Bearer "+token)
	}
	return &sdk.StreamableClientTransport{
		Endpoint:   u,
		HTTPClient: &http.Client{Transport: headerTransport{h: h, next: http.DefaultTransport}},
		// A server that is gone is said at once, not after retries.
		MaxRetries: -1,
	}, nil
}

type headerTransport struct {
	h    http.Header
	next http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}
