package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A 401 says which variable the key came from and which to set; no key
// at all says which to set. A missing model names the three places one
// is given.
func TestUnauthorizedNamesTheKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`))
	}))
	defer srv.Close()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "openai", Model: "m", BaseURL: srv.URL, APIKey: "bad", KeyFrom: "OPENAI_API_KEY", MaxRetries: -1},
			"the key sent came from $OPENAI_API_KEY: set HERMES_API_KEY (or OPENAI_API_KEY) to the server's key"},
		{Config{Name: "openai", Model: "m", BaseURL: srv.URL, MaxRetries: -1},
			"no key was sent: set HERMES_API_KEY (or OPENAI_API_KEY) to the server's key"},
		{Config{Name: "anthropic", Model: "m", BaseURL: srv.URL, APIKey: "bad", KeyFrom: "ANTHROPIC_API_KEY", MaxRetries: -1},
			"the key sent came from $ANTHROPIC_API_KEY: set HERMES_API_KEY (or ANTHROPIC_API_KEY) to the server's key"},
	} {
		p, err := New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Complete(context.Background(), Request{History: Messages{{Role: "user", Content: []byte(`"hi"`)}}})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "HTTP 401") {
			t.Errorf("%s: %v\nwant it to say %q", c.cfg.Name, err, c.want)
		}
	}
	for _, name := range []string{"openai", "anthropic"} {
		_, err := New(Config{Name: name})
		if err == nil || !strings.Contains(err.Error(), "--model, $HERMES_MODEL or model: in config.yaml") {
			t.Errorf("%s without a model: %v", name, err)
		}
	}
}
