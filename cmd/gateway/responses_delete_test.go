package gateway

import (
	"net/http"
	"testing"
)

// Deleting a session takes its stored responses with it: GET answers 404,
// and a chain from one is a 404 too.
func TestResponsesOfADeletedSession(t *testing.T) {
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/v1/responses", map[string]any{"input": "secret"}, nil)
	mustStatus(t, resp, body, 200)
	sid, id := resp.Header.Get(SessionHeader), decode[respObj](t, body).ID
	resp, body = e.do("GET", "/v1/responses/"+id, nil, nil)
	mustStatus(t, resp, body, 200)
	if _, err := e.sessions.End(sid, "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sessions.Delete(sid, false); err != nil {
		t.Fatal(err)
	}
	resp, body = e.do("GET", "/v1/responses/"+id, nil, nil)
	mustError(t, resp, body, http.StatusNotFound, "invalid_request_error")
	resp, body = e.do("POST", "/v1/responses", map[string]any{"input": "more", "previous_response_id": id}, nil)
	mustError(t, resp, body, http.StatusNotFound, "invalid_request_error")
}
