package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hermes/hermes/cmd/agent"
	"github.com/hermes/hermes/cmd/hooks"
	"github.com/hermes/hermes/cmd/provider"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/gatewaystate"
	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/sessions"
)

// Defaults of the settings under gateway: in config.yaml.
const (
	DefaultAddr               = "127.0.0.1:8642"
	DefaultMaxStoredResponses = 1000
	DefaultResumeFreshness    = time.Hour
	DefaultMaxBodyBytes       = 10 << 20
	DefaultHeaderTimeout      = 10 * time.Second
	DefaultReadTimeout        = 30 * time.Second
	DefaultWriteTimeout       = 30 * time.Second
	// DefaultToolTimeout bounds each call of a gateway tool
	// (gateway.tool_timeout).
	DefaultToolTimeout    = 10 * time.Minute
	DefaultMaxConnections = 256
	// DefaultAPIKeyEnv is the variable that holds the API key when
	// gateway.api_key_env names none.
	DefaultAPIKeyEnv = "HERMES_GATEWAY_API_KEY"
	// SessionHeader carries the session of a request and of every response.
	SessionHeader = "X-Hermes-Session-Id"
	// SuspendAfter is how many restarts in a row may interrupt a session
	// before it is suspended.
	SuspendAfter = 3
	// RecentActivity is how recent a session's activity must be for a start
	// after a crash to count it as interrupted.
	RecentActivity = 2 * time.Minute
)

// Options set up a Server.
type Options struct {
	Sessions *sessions.Store
	Store    *gatewaystate.Store
	Provider provider.Provider
	// Model is the model name responses report and new sessions record
	// when a request names none; empty: the provider's name.
	Model string
	// Models are the models a request may name that another provider
	// answers (gateway.models); with ModelsOnly, a request naming a model
	// that is neither one of them nor Model is a 404 model_not_found.
	Models     []Model
	ModelsOnly bool
	// APIKey, when set, is required as a bearer token on every route but
	// /health: the gateway's single key, whose scope is empty.
	APIKey string
	// Keys are named keys (gateway.api_keys), accepted besides APIKey,
	// each with its clients' conversations kept apart (see Key).
	Keys []Key
	// AllowedHosts are the names, besides loopback ones and the address
	// a request came in on, that a request's Host may carry
	// (gateway.allowed_hosts); AllowedOrigins the origins a web page may
	// call from (gateway.allowed_origins; none by default). Both as
	// ParseAllowedHosts and ParseAllowedOrigins return them.
	AllowedHosts   []string
	AllowedOrigins []string
	MaxBodyBytes   int64 // 0: DefaultMaxBodyBytes
	// HeaderTimeout bounds the reading of a request's headers (0:
	// DefaultHeaderTimeout); ReadTimeout the reading of a request,
	// headers and body (0: DefaultReadTimeout); WriteTimeout each write
	// of a response (0: DefaultWriteTimeout).
	HeaderTimeout time.Duration
	ReadTimeout   time.Duration
	WriteTimeout  time.Duration
	// ToolTimeout bounds each call of the gateway's tools
	// (DefaultToolTimeout when 0): past it the call is cancelled and
	// answered as timed out, and the turn goes on (agent.Engine).
	ToolTimeout        time.Duration
	MaxStoredResponses int           // 0: DefaultMaxStoredResponses
	ResumeFreshness    time.Duration // 0: DefaultResumeFreshness
	IdleEnd            time.Duration // 0: DefaultIdleEnd
	// Tools are the built-in tools a turn runs (gateway.tools; none by
	// default), approved by Approver (never a prompt), with ToolEnv as
	// their environment; MaxSteps bounds a turn's provider calls.
	Tools    []agent.Tool
	Approver agent.Approver
	ToolEnv  agent.Env
	MaxSteps int
	// Instructions, when set, are stored at a conversation's first turn
	// (gateway.instructions).
	Instructions *agent.Instructions
	// Memory and Skills, when set, are stored at a conversation's first
	// turn too, after the instructions (memory.gateway, skills.gateway).
	Memory *memory.Store
	Skills *agent.Skills
	// Hooks run at the events of the gateway's turns (gateway.hooks).
	Hooks *hooks.Set
	// Logf reports what a person running the server should see (store
	// damage, failed turns). Nil: nothing is reported.
	Logf func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Model is an entry of gateway.models: the provider that answers for a
// model name, and the name it is asked by (Upstream; empty: Name).
type Model struct {
	Name     string
	Upstream string
	Provider provider.Provider
}

// Server is the HTTP gateway: the handlers and the turns in flight.
type Server struct {
	opts     Options
	engine   *agent.Engine
	now      func() time.Time
	sessions keyedMutex // one turn at a time per session
	router   *router

	baseCtx context.Context
	cancel  context.CancelFunc

	mu        sync.Mutex
	inflight  map[string]int // session id -> turns in flight
	abandoned bool           // the drain timed out: turns still running no longer clear their state
	turns     sync.WaitGroup
}

// New returns a server. Nothing is written until a request comes.
func New(opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxStoredResponses <= 0 {
		opts.MaxStoredResponses = DefaultMaxStoredResponses
	}
	if opts.ResumeFreshness <= 0 {
		opts.ResumeFreshness = DefaultResumeFreshness
	}
	if opts.IdleEnd <= 0 {
		opts.IdleEnd = DefaultIdleEnd
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.ToolTimeout <= 0 {
		opts.ToolTimeout = DefaultToolTimeout
	}
	if opts.Model == "" {
		opts.Model = opts.Provider.Name()
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	engine := &agent.Engine{
		Sessions:     opts.Sessions,
		Provider:     opts.Provider,
		Tools:        opts.Tools,
		Approver:     opts.Approver,
		MaxSteps:     opts.MaxSteps,
		ClientTools:  true,
		Instructions: opts.Instructions,
		Memory:       opts.Memory,
		Skills:       opts.Skills,
		Hooks:        opts.Hooks,
		Warn:         func(msg string) { opts.Logf("%s", msg) },
		ToolTimeout:  opts.ToolTimeout,
		Late: func(sid string, c provider.ToolCall, result string) {
			opts.Logf("session %s: call %s of %s ended after its turn stopped waiting for it; its result (%d bytes) was dropped, the call keeps the one it was given", sid, c.ID, c.Function.Name, len(result))
		},
	}
	s := &Server{opts: opts, engine: engine, now: now, baseCtx: ctx, cancel: cancel, inflight: map[string]int{}}
	s.router = &router{opts: &s.opts, engine: engine, now: now, sessions: &s.sessions}
	return s
}

// BaseContext is the context of every request: Abandon cancels it.
func (s *Server) BaseContext() context.Context { return s.baseCtx }

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/chat/completions", s.handle(s.chatCompletions))
	mux.HandleFunc("POST /v1/responses", s.handle(s.createResponse))
	mux.HandleFunc("GET /v1/responses/{id}", s.handle(s.getResponse))
	mux.HandleFunc("POST /v1/messages", s.handle(s.createMessage))
	mux.HandleFunc("POST /v1/messages/count_tokens", s.handle(s.countTokens))
	for _, p := range []string{"/health", "/v1/models", "/v1/chat/completions", "/v1/responses", "/v1/responses/{id}", "/v1/messages", "/v1/messages/count_tokens"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			s.fail(w, r, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error", code: "method_not_allowed",
				msg: fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path)})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, notFound("", "not_found", "no route %s %s", r.Method, r.URL.Path))
	})
	return s.bound(s.guard(s.auth(mux)))
}

// auth requires the bearer token on every route but /health, before
// anything reads the request's body.
func (s *Server) auth(next http.Handler) http.Handler {
	keys := s.opts.Keys
	if s.opts.APIKey != "" {
		keys = append([]Key{{Secret: s.opts.APIKey}}, keys...)
	}
	if len(keys) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		got, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			// Anthropic's clients send their key as x-api-key.
			got = r.Header.Get("X-Api-Key")
			ok = got != ""
		}
		sent := []byte(strings.TrimSpace(got))
		// Every key is compared, in constant time: which one matched
		// takes no longer to find than none.
		match := -1
		for i, k := range keys {
			if subtle.ConstantTimeCompare(sent, []byte(k.Secret)) == 1 {
				match = i
			}
		}
		if !ok || match < 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hermes"`)
			msg := "missing API key: send Authorization: Bearer <key>"
			if ok {
				msg = "incorrect API key provided"
			}
			s.fail(w, r, &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key", msg: msg})
			return
		}
		next.ServeHTTP(w, r.WithContext(withScope(r.Context(), keys[match].Name)))
	})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// models lists the configured model, then those of gateway.models.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Anthropic-Version") != "" {
		s.anthropicModels(w)
		return
	}
	data := []map[string]any{{"id": s.opts.Model, "object": "model", "created": 0, "owned_by": "hermes"}}
	for _, m := range s.opts.Models {
		if m.Name != s.opts.Model {
			data = append(data, map[string]any{"id": m.Name, "object": "model", "created": 0, "owned_by": "hermes"})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// apiError is an error with the HTTP status and the OpenAI error fields it
// is reported with.
type apiError struct {
	status int
	typ    string
	param  string
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, msg: fmt.Sprintf(format, args...)}
}

func notFound(param, code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: param, code: code, msg: fmt.Sprintf(format, args...)}
}

// toAPIError maps an error of the stores or the provider to a status. A
// message sent to a client names no path of the server's: an error that
// carries one is logged (Options.Logf) and answered in general terms.
func (s *Server) toAPIError(err error) *apiError {
	var ae *apiError
	var lockErr *fsstore.LockTimeoutError
	var refused *agent.PromptRefusedError
	var provErr *provider.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, context.Canceled):
		return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "canceled", msg: err.Error()}
	case errors.As(err, &lockErr):
		return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "lock_timeout",
			msg: fmt.Sprintf("timed out after %s waiting for %s; try again", lockErr.Timeout, lockName(lockErr.Path))}
	case errors.As(err, &provErr) && refusal(provErr.StatusCode):
		// The upstream refused what the client asked (a model it does not
		// serve, a parameter it does not take): the client's error, not
		// a server fault that a client library would retry.
		return &apiError{status: provErr.StatusCode, typ: "invalid_request_error", code: provErr.Code, msg: provErr.Message}
	case errors.As(err, &provErr) && hasLocalPath(err):
		s.opts.Logf("gateway: %v", err)
		return &apiError{status: http.StatusBadGateway, typ: "server_error", code: "provider_error",
			msg: fmt.Sprintf("the %s provider failed; the gateway's log has the details", provErr.Provider)}
	case errors.As(err, &provErr):
		return &apiError{status: http.StatusBadGateway, typ: "server_error", code: "provider_error", msg: err.Error()}
	case hasLocalPath(err):
		// Whatever its kind: answered below, as an internal error.
	case errors.As(err, &refused):
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "prompt_refused", msg: err.Error()}
	case errors.Is(err, fsstore.ErrInvalid):
		return badRequest("", "%s", err.Error())
	case errors.Is(err, fsstore.ErrNotFound):
		return notFound("", "not_found", "%s", err.Error())
	}
	s.opts.Logf("gateway: %v", err)
	return &apiError{status: http.StatusInternalServerError, typ: "server_error", msg: "internal error; the gateway's log has the details"}
}

// refusal reports whether an upstream status is its refusal of the
// request itself, passed on to the client as it is.
func refusal(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusUnprocessableEntity
}

// hasLocalPath reports whether err carries a path of the server's files:
// an operation on a file, a command, a damaged record.
func hasLocalPath(err error) bool {
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	var execErr *exec.Error
	var corrupt *fsstore.CorruptError
	return errors.As(err, &pathErr) || errors.As(err, &linkErr) || errors.As(err, &execErr) || errors.As(err, &corrupt)
}

// lockName says which lock path is by the record it guards (the store's
// directory names the kind), for a client that must not see the path:
// "the lock of conversation c1", "the session catalog lock".
func lockName(path string) string {
	kind := strings.TrimSuffix(filepath.Base(filepath.Dir(path)), "s")
	name := strings.TrimSuffix(filepath.Base(path), ".lock")
	if whole, ok := strings.CutPrefix(name, "."); ok {
		return "the " + kind + " " + whole + " lock"
	}
	return "the lock of " + kind + " " + name
}

// handle adapts a handler that returns its failure: the one place a
// failure is answered, with the status and error body toAPIError maps it
// to. A handler that has begun a stream answers a failure inside it and
// returns nil. The handler writes to a clientWriter, so that it never
// waits on the client: what it wrote is sent after it returned, with the
// locks it held released.
func (s *Server) handle(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cw := newClientWriter(w, s.opts.WriteTimeout)
		defer cw.finish()
		if err := h(cw, r); err != nil {
			s.fail(cw, r, s.toAPIError(err))
		}
	}
}

// fail answers a request with an error. A request that came with a body
// may not have been read (a refusal comes first): its connection is
// closed after the answer, and not read any more, since net/http would
// otherwise read what is left of the body, with no deadline, before
// sending the answer and after.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, ae *apiError) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	if isMessagesRoute(r) {
		writeJSON(w, ae.status, messagesErrorBody(ae))
		return
	}
	writeError(w, ae.status, ae.typ, ae.param, ae.code, ae.msg)
}

// writeError writes the OpenAI error body: {"error":{"message","type",
// "param","code"}}, with null for an empty param or code.
func writeError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	writeJSON(w, status, map[string]any{"error": errorBody(typ, param, code, msg)})
}

func errorBody(typ, param, code, msg string) map[string]any {
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	return map[string]any{"message": msg, "type": typ, "param": nullable(param), "code": nullable(code)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// marshal is json.Marshal without the escaping of < > &, which model text
// is full of.
func marshal(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// decodeBody reads the JSON request body into v: 415 unless it is sent as
// JSON, 413 past the size limit, 400 for a body that is not UTF-8 (the
// decoder would store U+FFFD in place of its bytes) or JSON that does not
// parse.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return notJSON(err)
	}
	return refuseLoneSurrogate(body)
}

// readBody is decodeBody's reading of the body and its checks before
// decoding: the body, UTF-8 and not empty.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := checkJSONType(r); err != nil {
		return nil, err
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		return nil, tooLarge(s.opts.MaxBodyBytes)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return nil, tooLarge(s.opts.MaxBodyBytes)
	}
	if isTimeout(err) {
		return nil, &apiError{status: http.StatusRequestTimeout, typ: "invalid_request_error", code: "request_timeout",
			msg: fmt.Sprintf("the request body did not arrive within %s (gateway.read_timeout)", s.opts.ReadTimeout)}
	}
	if err != nil {
		return nil, badRequest("", "reading the request body: %v", err)
	}
	if !utf8.Valid(body) {
		return nil, badRequest("", "the request body is not valid UTF-8 (at byte %d); JSON text must be UTF-8", invalidUTF8At(body))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badRequest("", "the request body is empty; expected a JSON object")
	}
	return body, nil
}

// notJSON is the error of a body that encoding/json does not decode.
func notJSON(err error) error {
	return badRequest("", "the request body is not valid JSON: %v", err)
}

// invalidUTF8At is the offset of the first byte of b that is not UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

func tooLarge(limit int64) error {
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
		msg: fmt.Sprintf("the request body is larger than %d bytes (gateway.max_request_body_bytes)", limit)}
}

// keyedMutex is a set of mutexes by key, made on first use and dropped when
// nobody holds or waits for them. Waiting ends with the context.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	sem  chan struct{}
	refs int
}

// tryLock takes key's mutex if nobody holds it or waits for it.
func (k *keyedMutex) tryLock(key string) (func(), bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m[key] != nil {
		return nil, false
	}
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := &keyedEntry{sem: make(chan struct{}, 1), refs: 1}
	e.sem <- struct{}{}
	k.m[key] = e
	return func() {
		<-e.sem
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}, true
}

func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{sem: make(chan struct{}, 1)}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.sem <- struct{}{}:
		return func() { <-e.sem; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
