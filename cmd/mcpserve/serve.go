package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/skills"
	"github.com/hermes/hermes/profiles"
)

// DefaultMaxBytes bounds a result's text when Options.MaxBytes is 0.
const DefaultMaxBytes = 64 << 10

// Default and largest numbers of records a call returns.
const (
	defaultLimit = 20
	maxLimit     = 200
	maxOffset    = 1 << 30 // a listing's: more than any profile holds
)

// Options are what a server offers.
type Options struct {
	Sessions *sessions.Store
	Board    *kanban.Board
	// Profile is the assignee of a task created without one.
	Profile string
	// Author signs the comments of a call that names no author.
	Author string
	// Worker, when set, is the kanban worker the server runs inside:
	// kanban_complete and kanban_block are offered, for its own task.
	Worker *kanban.Worker
	// Memory and Skills, when set, are offered to read: memory_view,
	// skills_list and skill_view.
	Memory   *memory.Store
	Skills   *skills.Store
	MaxBytes int
	Version  string
}

type server struct{ Options }

// New is the MCP server of o's stores.
func New(o Options) *mcp.Server {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	s := &server{o}
	srv := mcp.NewServer(&mcp.Implementation{Name: "hermes", Version: o.Version}, nil)
	srv.AddReceivingMiddleware(objectArguments)
	mcp.AddTool(srv, tool[searchArgs]("session_search", "Search sessions", read, "Search hermes's stored sessions (agent conversations) for messages containing a text, ignoring case. Returns hits one JSON object a line: session_id, title, seq, role, snippet; newest session first. A last line in parentheses says when more hits follow and the offset that returns them."), s.sessionSearch)
	mcp.AddTool(srv, tool[listArgs]("session_list", "List sessions", read, "List hermes's sessions, most recently active first, one JSON object a line (id, title, state, message_count, updated_at, …). A last line in parentheses says when more sessions follow and the offset that returns them."), s.sessionList)
	mcp.AddTool(srv, tool[showArgs]("session_show", "Show a session", read, "Show one hermes session: its document and a page of its messages (offset, limit). Returns one JSON object with messages and, when more follow, next_offset."), s.sessionShow)
	mcp.AddTool(srv, tool[kanbanListArgs]("kanban_list", "List kanban tasks", read, "List the tasks of hermes's kanban board, one JSON object a line; archived tasks only when status is archived."), s.kanbanList)
	mcp.AddTool(srv, tool[taskArgs]("kanban_show", "Show a kanban task", read, "Show one kanban task with its runs, comments and events, as one JSON object."), s.kanbanShow)
	mcp.AddTool(srv, tool[createArgs]("kanban_create", "Create a kanban task", adds, "Create a kanban task. Returns the task as a JSON object; its id names it in the other kanban tools."), s.kanbanCreate)
	mcp.AddTool(srv, tool[commentArgs]("kanban_comment", "Comment on a kanban task", adds, "Add a comment to a kanban task. Returns the comment as a JSON object."), s.kanbanComment)
	if o.Worker != nil {
		mcp.AddTool(srv, tool[completeArgs]("kanban_complete", "Complete this worker's task", settles, fmt.Sprintf("Mark this worker's task (%s) done with a result. The worker should exit after it.", o.Worker.Task)), s.kanbanComplete)
		mcp.AddTool(srv, tool[blockArgs]("kanban_block", "Block this worker's task", settles, fmt.Sprintf("Block this worker's task (%s) with the reason it cannot go on (a question for a person). The worker should exit after it.", o.Worker.Task)), s.kanbanBlock)
	}
	addMemoryTools(srv, s)
	return srv
}

// What a tool does to the profile, as its annotations tell a client
// deciding whether to ask its user first (Codex, in a run that cannot ask,
// refuses every tool that says nothing). None destroys anything, and none
// reaches beyond the profile.
type effect int

const (
	read    effect = iota // reads only
	adds                  // adds a record each call: a repeat adds another
	settles               // moves the worker's own task to an end: a repeat is refused, changing nothing
)

// tool is a tool's description, with its annotations and the input schema
// of its arguments' type A, bounded (bound).
func tool[A any](name, title string, e effect, description string) *mcp.Tool {
	closed := false
	a := &mcp.ToolAnnotations{Title: title, ReadOnlyHint: e == read, OpenWorldHint: &closed}
	if e != read {
		a.DestructiveHint = &closed
		a.IdempotentHint = e == settles
	}
	schema, err := jsonschema.For[A](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserve: the arguments of %s: %v", name, err)) // a programming error, seen by every test
	}
	bound(name, schema)
	return &mcp.Tool{Name: name, Title: title, Description: description, Annotations: a, InputSchema: schema}
}

// bound adds to a schema what its field types cannot say: the rules of
// its arguments (rule).
func bound(tool string, s *jsonschema.Schema) {
	for name, p := range s.Properties {
		r := rule(tool, name, p.Type == "integer")
		p.Minimum, p.Maximum = r.min, r.max
		for _, v := range r.enum {
			p.Enum = append(p.Enum, v)
		}
	}
}

// argRule is what an argument may be beyond its type: a range, or one of
// some values.
type argRule struct {
	min, max *float64
	enum     []string
}

// rule is the rule of a tool's argument, by its name: the schema
// advertises it (bound), and a call is held to it in hermes's words
// (checkArguments) before the SDK's validation would in its own.
func rule(tool, name string, integer bool) argRule {
	f := func(v float64) *float64 { return &v }
	switch {
	case name == "limit" && integer:
		return argRule{min: f(1), max: f(maxLimit)}
	case name == "offset" && integer && (tool == "session_list" || tool == "session_search"):
		return argRule{min: f(0), max: f(maxOffset)}
	case name == "offset" && integer:
		return argRule{min: f(0)}
	case name == "state":
		return argRule{enum: []string{sessions.StateActive, sessions.StateEnded, sessions.StateSuspended, sessions.StateResumePending}}
	case name == "status" && tool == "kanban_create":
		return argRule{enum: []string{string(kanban.Todo), string(kanban.Ready)}}
	case name == "status":
		return argRule{enum: []string{string(kanban.Todo), string(kanban.Ready), string(kanban.Running), string(kanban.Blocked), string(kanban.Done), string(kanban.Archived)}}
	}
	return argRule{}
}

// check is why v breaks the rule of argument name, or "".
func (r argRule) check(name string, v any) string {
	switch v := v.(type) {
	case float64:
		switch {
		case r.min != nil && r.max != nil && (v < *r.min || v > *r.max):
			return fmt.Sprintf("%s must be between %g and %g, not %g", name, *r.min, *r.max, v)
		case r.min != nil && v < *r.min:
			return fmt.Sprintf("%s must be %g or more, not %g", name, *r.min, v)
		}
	case string:
		if len(r.enum) > 0 && !slices.Contains(r.enum, v) {
			return fmt.Sprintf("unknown %s %q (%s)", name, v, strings.Join(r.enum, ", "))
		}
	}
	return ""
}

// objectArguments refuses a tool call whose arguments are not a JSON
// object in words a model can act on, before the SDK's decoding would in
// Go's ("cannot unmarshal … into Go value of type map[string]interface {}"),
// and one whose argument breaks its rule, before the SDK's validation
// would ("maximum: 500/1 is greater than 200.000000").
func objectArguments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok {
			raw := bytes.TrimSpace(call.Params.Arguments)
			if len(raw) > 0 && raw[0] != '{' && string(raw) != "null" {
				return failure(fsstore.Invalidf("the arguments of %s must be a JSON object of named arguments, not %s", call.Params.Name, kindOf(raw))), nil
			}
			var args map[string]any
			json.Unmarshal(raw, &args) // one that does not decode is the SDK's to refuse
			for name, v := range args {
				_, integer := v.(float64)
				if why := rule(call.Params.Name, name, integer).check(name, v); why != "" {
					return failure(fsstore.Invalidf("%s", why)), nil
				}
			}
		}
		return next(ctx, method, req)
	}
}

// kindOf names the JSON type of a value by its first byte.
func kindOf(raw []byte) string {
	switch raw[0] {
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// none is the output of every tool: results are text content.
type none = any

// failure is err as a tool error, worded as the command line words it.
func failure(err error) *mcp.CallToolResult {
	var lockErr *fsstore.LockTimeoutError
	kind := "error"
	switch {
	case errors.As(err, &lockErr):
		kind = "lock timeout"
	case errors.Is(err, fsstore.ErrInvalid):
		kind = "invalid"
	case errors.Is(err, fsstore.ErrNotFound):
		kind = "not found"
	case errors.Is(err, fsstore.ErrRefused):
		kind = "refused"
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: kind + ": " + err.Error()}}}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// answer is v as one JSON object, or err as a tool error.
func answer(v any, err error) (*mcp.CallToolResult, none, error) {
	if err != nil {
		return failure(err), nil, nil
	}
	b, err := marshal(v)
	if err != nil {
		return failure(err), nil, nil
	}
	return text(string(b)), nil, nil
}

// marshal is v's JSON as --json prints it: HTML characters as they are.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// lines is a listing one JSON object a line, stopped before the record
// that would take it past max bytes, with a last line saying how many
// were left out.
func lines[T any](records []T, max int) (*mcp.CallToolResult, none, error) {
	return page(records, 0, false, max)
}

// page is lines for records from offset on, of a listing that goes on
// past them when more: its last line says that more follow, and the offset
// that returns them.
func page[T any](records []T, offset int, more bool, max int) (*mcp.CallToolResult, none, error) {
	var b strings.Builder
	for i, r := range records {
		line, err := marshal(r)
		if err != nil {
			return failure(err), nil, nil
		}
		if b.Len()+len(line)+1 > max {
			fmt.Fprintf(&b, "(%d more not shown: over the output limit of %d bytes; call again with offset %d, or lower the limit)\n", len(records)-i, max, offset+i)
			return text(b.String()), nil, nil
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if more {
		fmt.Fprintf(&b, "(more follow: call again with offset %d)\n", offset+len(records))
	}
	return text(b.String()), nil, nil
}

// window is the page [offset, offset+n) of a listing read by get, which
// returns at most its argument's number of records from the start, and
// whether the listing goes on past it.
func window[T any](offset, n int, get func(limit int) ([]T, error)) ([]T, bool, error) {
	if offset < 0 || offset > maxOffset {
		return nil, false, fsstore.Invalidf("offset must be between 0 and %d, not %d", maxOffset, offset)
	}
	all, err := get(offset + n + 1)
	if err != nil || len(all) <= offset {
		return nil, false, err
	}
	all = all[offset:]
	if len(all) > n {
		return all[:n], true, nil
	}
	return all, false, nil
}

// limit is a call's limit: its default when 0, refused outside 0..maxLimit.
func limit(n int) (int, error) {
	switch {
	case n == 0:
		return defaultLimit, nil
	case n < 0 || n > maxLimit:
		return 0, fsstore.Invalidf("limit must be between 1 and %d, not %d", maxLimit, n)
	}
	return n, nil
}

type searchArgs struct {
	Query  string `json:"query" jsonschema:"the text to find in messages (their text, tool calls' names and argument values, tool results), ignoring case"`
	Limit  int    `json:"limit,omitempty" jsonschema:"the most hits to return (default 20, at most 200)"`
	Offset int    `json:"offset,omitempty" jsonschema:"how many hits to skip (default 0): a result cut short names the offset of the next page"`
}

func (s *server) sessionSearch(_ context.Context, _ *mcp.CallToolRequest, a searchArgs) (*mcp.CallToolResult, none, error) {
	n, err := limit(a.Limit)
	if err != nil {
		return failure(err), nil, nil
	}
	hits, more, err := window(a.Offset, n, func(limit int) ([]sessions.Hit, error) { return s.Sessions.Search(a.Query, limit) })
	if err != nil {
		return failure(err), nil, nil
	}
	return page(hits, a.Offset, more, s.MaxBytes)
}

type listArgs struct {
	State  string `json:"state,omitempty" jsonschema:"only sessions in this state: active, ended, suspended or resume_pending"`
	Source string `json:"source,omitempty" jsonschema:"only sessions from this source (chat, gateway, kanban, import, …)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"the most sessions to return (default 20, at most 200)"`
	Offset int    `json:"offset,omitempty" jsonschema:"how many sessions to skip (default 0): a result cut short names the offset of the next page"`
}

func (s *server) sessionList(_ context.Context, _ *mcp.CallToolRequest, a listArgs) (*mcp.CallToolResult, none, error) {
	n, err := limit(a.Limit)
	if err != nil {
		return failure(err), nil, nil
	}
	switch a.State {
	case "", sessions.StateActive, sessions.StateEnded, sessions.StateSuspended, sessions.StateResumePending:
	default:
		return failure(fsstore.Invalidf("unknown state %q (active, ended, suspended, resume_pending)", a.State)), nil, nil
	}
	list, more, err := window(a.Offset, n, func(limit int) ([]sessions.Session, error) {
		return s.Sessions.List(sessions.ListOptions{Limit: limit, Source: a.Source, State: a.State})
	})
	if err != nil {
		return failure(err), nil, nil
	}
	return page(list, a.Offset, more, s.MaxBytes)
}

type showArgs struct {
	Session string `json:"session" jsonschema:"the session's id, a unique prefix of it, or its title"`
	Offset  int64  `json:"offset,omitempty" jsonschema:"how many messages to skip from the start (default 0): the messages returned begin at seq offset+1"`
	Limit   int    `json:"limit,omitempty" jsonschema:"the most messages to return (default 20, at most 200)"`
}

// errPage ends a transcript's scan once the page is full.
var errPage = errors.New("page full")

func (s *server) sessionShow(_ context.Context, _ *mcp.CallToolRequest, a showArgs) (*mcp.CallToolResult, none, error) {
	n, err := limit(a.Limit)
	if err != nil {
		return failure(err), nil, nil
	}
	if a.Offset < 0 {
		return failure(fsstore.Invalidf("offset must be 0 or more, not %d", a.Offset)), nil, nil
	}
	if strings.TrimSpace(a.Session) == "" {
		return failure(fsstore.Invalidf("session must name a session by id or title")), nil, nil
	}
	id, err := s.Sessions.Resolve(a.Session)
	if err != nil {
		return failure(err), nil, nil
	}
	sess, err := s.Sessions.Get(id)
	if err != nil {
		return failure(err), nil, nil
	}
	head, err := marshal(sess)
	if err != nil {
		return failure(err), nil, nil
	}
	t, err := s.Sessions.OpenTranscript(id)
	if err != nil {
		return failure(err), nil, nil
	}
	defer t.Close()
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	fmt.Fprintf(&b, `,"offset":%d,"messages":[`, a.Offset)
	var seen, taken int64
	var next int64
	err = t.EachLine(func(line []byte) error {
		seen++
		if seen <= a.Offset {
			return nil
		}
		if taken == int64(n) {
			next = seen - 1
			return errPage
		}
		if taken > 0 {
			line = append([]byte{','}, line...)
		}
		// The closing of the object takes at most this much.
		const tail = len(`],"next_offset":9223372036854775807}`)
		if b.Len()+len(line)+tail > s.MaxBytes {
			if taken > 0 {
				next = seen - 1
				return errPage
			}
			line = omitted(line, seen, s.MaxBytes)
		}
		b.Write(line)
		taken++
		return nil
	})
	if err != nil && !errors.Is(err, errPage) {
		return failure(err), nil, nil
	}
	b.WriteByte(']')
	if next > 0 {
		fmt.Fprintf(&b, `,"next_offset":%d`, next)
	}
	b.WriteByte('}')
	return text(b.String()), nil, nil
}

// omitted stands for a message too large for a result: its seq, role and
// size.
func omitted(line []byte, seq int64, max int) []byte {
	var m struct {
		Seq     int64  `json:"seq"`
		Role    string `json:"role"`
		Omitted string `json:"omitted"`
	}
	json.Unmarshal(line, &m)
	if m.Seq == 0 {
		m.Seq = seq
	}
	m.Omitted = fmt.Sprintf("a message of %d bytes, over the output limit of %d bytes: hermes sessions show --json has it whole", len(line), max)
	b, _ := marshal(m)
	return b
}

type kanbanListArgs struct {
	Status   string `json:"status,omitempty" jsonschema:"only tasks in this status: todo, ready, running, blocked, done or archived"`
	Assignee string `json:"assignee,omitempty" jsonschema:"only tasks assigned to this profile"`
	Limit    int    `json:"limit,omitempty" jsonschema:"the most tasks to return (default 20, at most 200)"`
}

func (s *server) kanbanList(_ context.Context, _ *mcp.CallToolRequest, a kanbanListArgs) (*mcp.CallToolResult, none, error) {
	n, err := limit(a.Limit)
	if err != nil {
		return failure(err), nil, nil
	}
	status := kanban.Status(a.Status)
	if status != "" && !status.Valid() {
		return failure(fsstore.Invalidf("unknown status %q (todo, ready, running, blocked, done, archived)", status)), nil, nil
	}
	all, err := s.Board.All()
	if err != nil {
		return failure(err), nil, nil
	}
	if all, err = s.Board.ViewAll(all); err != nil {
		return failure(err), nil, nil
	}
	var list []kanban.Task
	for _, t := range all {
		if (status == "" && t.Status == kanban.Archived) || (status != "" && t.Status != status) || (a.Assignee != "" && t.Assignee != a.Assignee) {
			continue
		}
		if len(list) == n {
			break
		}
		list = append(list, t)
	}
	return lines(list, s.MaxBytes)
}

type taskArgs struct {
	ID string `json:"id" jsonschema:"the task's id"`
}

func (s *server) kanbanShow(_ context.Context, _ *mcp.CallToolRequest, a taskArgs) (*mcp.CallToolResult, none, error) {
	if err := fsstore.CheckID("task id", a.ID); err != nil {
		return failure(err), nil, nil
	}
	shown, err := s.Board.Show(a.ID)
	if err != nil {
		return failure(err), nil, nil
	}
	// A long-lived task's history is cut from its oldest end to fit.
	for {
		b, err := marshal(shown)
		if err != nil {
			return failure(err), nil, nil
		}
		if len(b) <= s.MaxBytes || len(shown.Comments)+len(shown.Events) == 0 {
			return text(string(b)), nil, nil
		}
		if len(shown.Events) >= len(shown.Comments) {
			shown.Events = shown.Events[1:]
		} else {
			shown.Comments = shown.Comments[1:]
		}
	}
}

type createArgs struct {
	Title    string `json:"title" jsonschema:"the task's title: one line"`
	Body     string `json:"body,omitempty" jsonschema:"what is to be done, in full"`
	Priority int    `json:"priority,omitempty" jsonschema:"higher runs first (default 0)"`
	Status   string `json:"status,omitempty" jsonschema:"ready (default: a dispatcher may start it) or todo (not yet)"`
	Assignee string `json:"assignee,omitempty" jsonschema:"the profile whose worker runs it (default this profile)"`
}

func (s *server) kanbanCreate(_ context.Context, _ *mcp.CallToolRequest, a createArgs) (*mcp.CallToolResult, none, error) {
	t := kanban.Task{Title: a.Title, Body: a.Body, Priority: a.Priority, Status: kanban.Status(a.Status), Assignee: a.Assignee}
	if t.Status == "" {
		t.Status = kanban.Ready
	}
	if t.Status != kanban.Todo && t.Status != kanban.Ready {
		return failure(fsstore.Invalidf("status must be todo or ready, not %q", a.Status)), nil, nil
	}
	if t.Assignee == "" {
		t.Assignee = s.Profile
	}
	if err := profiles.CheckName(t.Assignee); err != nil {
		return failure(err), nil, nil
	}
	return answer(s.Board.Create(t))
}

type commentArgs struct {
	ID     string `json:"id" jsonschema:"the task's id"`
	Text   string `json:"text" jsonschema:"the comment"`
	Author string `json:"author,omitempty" jsonschema:"who says it (default the user hermes runs as)"`
}

func (s *server) kanbanComment(_ context.Context, _ *mcp.CallToolRequest, a commentArgs) (*mcp.CallToolResult, none, error) {
	if err := fsstore.CheckID("task id", a.ID); err != nil {
		return failure(err), nil, nil
	}
	author := a.Author
	if author == "" {
		author = s.Author
	}
	return answer(s.Board.AddComment(a.ID, author, a.Text))
}

type completeArgs struct {
	Result string `json:"result,omitempty" jsonschema:"what was done: the task's result"`
}

func (s *server) kanbanComplete(_ context.Context, _ *mcp.CallToolRequest, a completeArgs) (*mcp.CallToolResult, none, error) {
	w := *s.Worker
	return answer(s.Board.Complete(w.Task, &w, a.Result))
}

type blockArgs struct {
	Reason string `json:"reason" jsonschema:"why the task cannot go on: what a person must answer or do"`
}

func (s *server) kanbanBlock(_ context.Context, _ *mcp.CallToolRequest, a blockArgs) (*mcp.CallToolResult, none, error) {
	if strings.TrimSpace(a.Reason) == "" {
		return failure(fsstore.Invalidf("block needs a reason")), nil, nil
	}
	w := *s.Worker
	t, _, err := s.Board.Block(w.Task, &w, a.Reason)
	return answer(t, err)
}
