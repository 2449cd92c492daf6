package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
)

// Config chooses a provider and sets it up.
type Config struct {
	Name    string // "echo" (default when empty), "openai", "anthropic", "exec"
	BaseURL string // openai: e.g. http://127.0.0.1:8080/v1 ; default https://api.openai.com/v1
	Model   string // openai: model name (required for openai; error if empty)
	APIKey  string // openai: bearer token, may be empty for local servers
	// KeyFrom is the variable APIKey came from, for a refusal (HTTP 401)
	// to name; empty when there is no key.
	KeyFrom     string
	ExecCommand string // exec: run through `sh -c`
	// MaxIdlePerHost is how many idle connections to its server the
	// openai and anthropic providers keep for the next call: as many as
	// calls run at once (the gateway's gateway.max_connections); 0 means
	// DefaultMaxIdlePerHost.
	MaxIdlePerHost int
	Timeout        time.Duration // whole-call timeout; 0 means 10 minutes; negative means none
	MaxRetries     int           // openai: retries on 429/5xx/connection errors; 0 means default 3; negative means none
	// ReasoningContent is what openai does with the reasoning_content of
	// stored assistant messages: ReasoningAuto (default when empty),
	// ReasoningReplay or ReasoningDrop.
	ReasoningContent string
	// Anthropic are the anthropic provider's settings.
	Anthropic Anthropic
}

// Anthropic are the anthropic provider's settings (config.yaml's
// anthropic section); each left empty has its default.
type Anthropic struct {
	Version   string   // the anthropic-version header; default 2023-06-01
	Beta      []string // the anthropic-beta header's values
	Bearer    bool     // send the key as Authorization: Bearer rather than x-api-key
	MaxTokens int      // max_tokens when the request sets none; default by model
	// Thinking is off (or empty), a budget in tokens, adaptive or
	// adaptive:<effort>.
	Thinking string
	// Cache is the cache breakpoints' TTL, 5m (or empty) or 1h, or off
	// for none.
	Cache string
}

// The values of Config.ReasoningContent.
const (
	ReasoningAuto   = "auto"   // replay to the hosts that require it, drop for the others
	ReasoningReplay = "replay" // send it on every assistant message, empty when there is none
	ReasoningDrop   = "drop"   // never send it
)

// Request is one turn: the transcript so far, the new user message last.
type Request struct {
	SessionID string
	History   History   // the full history, the new user message last
	Stream    io.Writer // if non-nil, text of the reply is written here as it arrives (streaming)
	// Tools are the functions the model may call, each an OpenAI
	// function-calling entry ({"type":"function","function":{…}}); none
	// means the request offers no tools.
	Tools []json.RawMessage
	// Model is the model the request asks for; empty: the configured one.
	Model string
	// Params are the caller's parameters besides its messages and tools.
	Params Params
}

// Params are a request's parameters, in the chat completions API's names,
// each the JSON value the caller sent, passed on as it is: the server
// that answers is the judge of a value. A field left empty is not sent.
type Params struct {
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls   json.RawMessage `json:"parallel_tool_calls,omitempty"`
	Temperature         json.RawMessage `json:"temperature,omitempty"`
	TopP                json.RawMessage `json:"top_p,omitempty"`
	MaxTokens           json.RawMessage `json:"max_tokens,omitempty"`
	MaxCompletionTokens json.RawMessage `json:"max_completion_tokens,omitempty"`
	Stop                json.RawMessage `json:"stop,omitempty"`
	Seed                json.RawMessage `json:"seed,omitempty"`
	PresencePenalty     json.RawMessage `json:"presence_penalty,omitempty"`
	FrequencyPenalty    json.RawMessage `json:"frequency_penalty,omitempty"`
	ResponseFormat      json.RawMessage `json:"response_format,omitempty"`
	ReasoningEffort     json.RawMessage `json:"reasoning_effort,omitempty"`
	User                json.RawMessage `json:"user,omitempty"`
	// Anthropic is what a Messages API client asked of the model beyond
	// these: sent as it came to the anthropic provider, to no other.
	Anthropic AnthropicParams `json:"-"`
}

// AnthropicParams are a Messages API request's members that only the
// Messages API has, raw as the client sent them (nil: not sent), and its
// anthropic-beta values. The anthropic provider sends thinking and
// output_config in place of its configured thinking, context_management as
// it is, and the betas after its configured ones.
type AnthropicParams struct {
	Thinking          json.RawMessage
	OutputConfig      json.RawMessage
	ContextManagement json.RawMessage
	Betas             []string
}

// fields writes the parameters that are set as members of a JSON object,
// each after a comma; nothing when none is.
func (p Params) fields(b *bytes.Buffer) {
	all, _ := json.Marshal(p) // raw values that came from decoded JSON always encode
	if len(all) > 2 {
		b.WriteByte(',')
		b.Write(all[1 : len(all)-1])
	}
}

// History is the transcript a provider answers, read as a stream: a
// provider holds no more of a long history than it needs, and a resume of
// a long session calls the provider without first reading all of it.
type History interface {
	// Each calls fn with each message in order; an error from fn stops
	// the walk and is returned.
	Each(fn func(sessions.Message) error) error
}

// Messages is a History held in memory.
type Messages []sessions.Message

// Each calls fn with each message.
func (ms Messages) Each(fn func(sessions.Message) error) error {
	for _, m := range ms {
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// Usage is the token count a provider reports for one call, in the chat
// completions API's shape (the gateway passes it on as it came).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// The parts of the prompt read from the cache, and of the completion
	// spent reasoning, when the server says.
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
	// The prompt tokens written to and read from the provider's prompt
	// cache (anthropic), the written ones split by TTL when it says.
	CacheCreationInputTokens   int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens       int `json:"cache_read_input_tokens,omitempty"`
	CacheCreation5mInputTokens int `json:"cache_creation_5m_input_tokens,omitempty"`
	CacheCreation1hInputTokens int `json:"cache_creation_1h_input_tokens,omitempty"`
}

// PromptTokensDetails is a Usage's prompt_tokens_details.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionTokensDetails is a Usage's completion_tokens_details.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Add adds u's counts to sum, which may be nil, and returns the sum; a
// nil u adds nothing.
func (sum *Usage) Add(u *Usage) *Usage {
	if u == nil {
		return sum
	}
	if sum == nil {
		sum = &Usage{}
	}
	sum.PromptTokens += u.PromptTokens
	sum.CompletionTokens += u.CompletionTokens
	sum.TotalTokens += u.TotalTokens
	sum.CacheCreationInputTokens += u.CacheCreationInputTokens
	sum.CacheReadInputTokens += u.CacheReadInputTokens
	sum.CacheCreation5mInputTokens += u.CacheCreation5mInputTokens
	sum.CacheCreation1hInputTokens += u.CacheCreation1hInputTokens
	if d := u.PromptTokensDetails; d != nil {
		if sum.PromptTokensDetails == nil {
			sum.PromptTokensDetails = &PromptTokensDetails{}
		}
		sum.PromptTokensDetails.CachedTokens += d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		if sum.CompletionTokensDetails == nil {
			sum.CompletionTokensDetails = &CompletionTokensDetails{}
		}
		sum.CompletionTokensDetails.ReasoningTokens += d.ReasoningTokens
	}
	return sum
}

// call is the stored record of u (usage.Call), its prompt counting the
// cache reads, as the chat completions API counts them.
func (u *Usage) call() usage.Call {
	c := usage.Call{Input: int64(u.PromptTokens), Output: int64(u.CompletionTokens), InputHasCache: true}
	if d := u.PromptTokensDetails; d != nil {
		c.CacheRead = int64(d.CachedTokens)
	}
	if d := u.CompletionTokensDetails; d != nil {
		c.Reasoning = int64(d.ReasoningTokens)
	}
	return c
}

// record stores c on the last assistant message of msgs, with a new id,
// the provider and the call's latency: the message the call produced.
func record(msgs []sessions.Message, c usage.Call, provider string, start time.Time) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			stamp(&c, provider, start)
			usage.Put(&msgs[i], c)
			return
		}
	}
}

// stamp gives c a new id, the provider and the latency of a call that
// began at start.
func stamp(c *usage.Call, provider string, start time.Time) {
	now := time.Now()
	c.ID, c.Provider, c.LatencyMS = usage.NewID(now), provider, now.Sub(start).Milliseconds()
}

// Reply is what a call adds to the transcript.
type Reply struct {
	// Messages are the assistant and tool messages to append, in order,
	// Seq/TS left zero; the assistant message a model call produced holds
	// its usage.Call (see the package doc).
	Messages []sessions.Message
	Usage    *Usage // nil when the provider gives none
	Model    string // the model that answered, when the provider says; else empty
	// Failed are the calls of earlier attempts that failed after the
	// provider counted their tokens, retried by this one (Error.Failed).
	Failed []usage.Call
}

// Provider turns a transcript into a reply.
type Provider interface {
	Name() string
	// Complete returns the messages to append after req.History. On error
	// nothing of the reply is valid, though part of its text may already
	// have been written to req.Stream.
	Complete(ctx context.Context, req Request) (Reply, error)
}

// ErrUnknownProvider is wrapped by the error New returns for a name it does
// not know.
var ErrUnknownProvider = errors.New("unknown provider")

const defaultTimeout = 10 * time.Minute

// New returns the provider cfg names. A bad Config (unknown name, openai
// without a model, exec without a command, a malformed base URL, an
// unknown ReasoningContent) is an error that also matches fsstore.ErrInvalid: it is bad input, not a
// provider failure.
func New(cfg Config) (Provider, error) {
	switch cfg.ReasoningContent {
	case "", ReasoningAuto, ReasoningReplay, ReasoningDrop:
	default:
		return nil, configErrorf("reasoning_content %q is not one of auto, replay, drop", cfg.ReasoningContent)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = defaultTimeout
	}
	switch cfg.Name {
	case "", "echo":
		return echoProvider{}, nil
	case "openai":
		return newOpenAI(cfg, timeout)
	case "anthropic":
		return newAnthropic(cfg, timeout)
	case "exec":
		if strings.TrimSpace(cfg.ExecCommand) == "" {
			return nil, configErrorf("exec provider: no command configured")
		}
		return &execProvider{command: cfg.ExecCommand, timeout: timeout, stderr: defaultStderr}, nil
	}
	return nil, &configError{
		msg:     fmt.Sprintf("unknown provider %q (want echo, openai, anthropic or exec)", cfg.Name),
		wrapped: []error{ErrUnknownProvider, fsstore.ErrInvalid},
	}
}

// configError is a bad Config.
type configError struct {
	msg     string
	wrapped []error
}

func (e *configError) Error() string   { return e.msg }
func (e *configError) Unwrap() []error { return e.wrapped }

func configErrorf(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...), wrapped: []error{fsstore.ErrInvalid}}
}

// Error is a provider failure: an HTTP error status, a command's exit
// status, output that does not parse, a timeout. Error() is one line that
// starts with the provider ("openai: …", "exec provider: …") and includes
// what the provider itself said.
type Error struct {
	Provider   string // "openai" or "exec"
	StatusCode int    // openai: the HTTP status of the last response; 0 when there was none
	ExitCode   int    // exec: the command's exit status; -1 when it was killed by a signal; 0 otherwise
	Attempts   int    // openai: how many requests were sent
	Message    string // the whole message Error returns
	// Said and Code are, for an error status, what the server said (the
	// body's message) and its error code, when it gave one.
	Said string
	Code string
	Err  error // the cause, if any: a connection error, context.DeadlineExceeded, …
	// Failed are the calls of the attempts that failed after the provider
	// counted their tokens (usage.Call.Failed): billed, though they made
	// no reply.
	Failed []usage.Call

	retryable  bool
	retryAfter time.Duration // from a Retry-After header; negative when there was none
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// timedOut is the cause of a context that ended by the provider's own
// Timeout, to tell it apart from the caller's deadline or cancel.
var timedOut = errors.New("provider timeout")

// withTimeout bounds ctx by the provider's timeout; negative means none.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, timedOut)
}

// contextError reports why ctx ended: "timed out after 10m0s" for the
// provider's own timeout, else the caller's reason. It wraps ctx.Err(), so
// errors.Is(err, context.DeadlineExceeded) holds for a timeout.
func contextError(ctx context.Context, prefix string, provider string, timeout time.Duration) *Error {
	msg := prefix + ": " + ctx.Err().Error()
	if context.Cause(ctx) == timedOut {
		msg = fmt.Sprintf("%s: timed out after %v", prefix, timeout)
	}
	return &Error{Provider: provider, Message: msg, Err: ctx.Err()}
}

// streamWriter writes reply text to the caller's Stream, if any. The
// stream is a display: once a write fails it is not written again, but the
// call goes on, so the reply can still be stored.
type streamWriter struct {
	w      io.Writer
	wrote  bool // some text was written (the openai provider must not retry then)
	failed bool
}

// BlockWriter is a stream (Request.Stream) that also takes an anthropic
// reply's thinking and redacted_thinking blocks, whole, as each ends: they
// come before the reply's text, and a Messages API client must get them
// in their place (the gateway's /v1/messages).
type BlockWriter interface {
	io.Writer
	WriteBlock(block json.RawMessage) error
}

// WriteBlock gives block to a stream that is a BlockWriter.
func (s *streamWriter) WriteBlock(block json.RawMessage) {
	bw, ok := s.w.(BlockWriter)
	if !ok || s.failed {
		return
	}
	s.wrote = true
	if bw.WriteBlock(block) != nil {
		s.failed = true
	}
}

func (s *streamWriter) WriteString(text string) {
	if s.w == nil || s.failed || text == "" {
		return
	}
	s.wrote = true
	if _, err := io.WriteString(s.w, text); err != nil {
		s.failed = true
	}
}

// oneLine collapses runs of white space, newlines included, to one space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ToolCall is one entry of a message's tool_calls, in OpenAI's shape. The
// session store keeps tool_calls as raw JSON; the providers, the agent, the
// gateway and the importers build and read entries of this shape.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is the function a tool call names, with its arguments as
// JSON text.
type ToolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// modelRequired is the error of a provider given no model, naming where
// one is given.
func modelRequired(name string) error {
	return configErrorf("%s provider: a model is required: give --model, $HERMES_MODEL or model: in config.yaml", name)
}

// keyHint is what a refusal of the key (HTTP 401) adds: where the key
// sent came from, or that none was, and the variables to set. other is
// the provider's own variable beside HERMES_API_KEY.
func keyHint(status int, keyFrom, other string) string {
	if status != http.StatusUnauthorized {
		return ""
	}
	set := fmt.Sprintf("set HERMES_API_KEY (or %s) to the server's key", other)
	if keyFrom == "" {
		return "; no key was sent: " + set
	}
	return fmt.Sprintf("; the key sent came from $%s: %s", keyFrom, set)
}

// DefaultMaxIdlePerHost is the idle connections kept per server when
// Config sets none: the gateway's default number of connections, each of
// which may be running a call.
const DefaultMaxIdlePerHost = 256

// newClient is the HTTP client of the openai and anthropic providers: Go's
// default transport (proxies from the environment, HTTP/2 where a server
// offers it over TLS) keeping maxIdle idle connections per host, where
// the default keeps 2, so that calls running at once do not each open a
// connection (a TLS handshake) when the one before closed its own. No
// client timeout: the context bounds the whole call, body included.
func newClient(maxIdle int) *http.Client {
	if maxIdle <= 0 {
		maxIdle = DefaultMaxIdlePerHost
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = maxIdle
	return &http.Client{Transport: t}
}
