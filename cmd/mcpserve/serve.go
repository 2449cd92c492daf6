package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	mcp.AddTool(srv, &mcp.Tool{Name: "session_search", Description: "Search hermes's stored sessions (agent conversations) for messages containing a text, ignoring case. Returns hits one JSON object a line: session_id, title, seq, role, snippet; newest session first."}, s.sessionSearch)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_list", Description: "List hermes's sessions, most recently active first, one JSON object a line (id, title, state, message_count, updated_at, …)."}, s.sessionList)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_show", Description: "Show one hermes session: its document and a page of its messages (offset, limit). Returns one JSON object with messages and, when more follow, next_offset."}, s.sessionShow)
	mcp.AddTool(srv, &mcp.Tool{Name: "kanban_list", Description: "List the tasks of hermes's kanban board, one JSON object a line; archived tasks only when status is archived."}, s.kanbanList)
	mcp.AddTool(srv, &mcp.Tool{Name: "kanban_show", Description: "Show one kanban task with its runs, comments and events, as one JSON object."}, s.kanbanShow)
	mcp.AddTool(srv, &mcp.Tool{Name: "kanban_create", Description: "Create a kanban task. Returns the task as a JSON object; its id names it in the other kanban tools."}, s.kanbanCreate)
	mcp.AddTool(srv, &mcp.Tool{Name: "kanban_comment", Description: "Add a comment to a kanban task. Returns the comment as a JSON object."}, s.kanbanComment)
	if o.Worker != nil {
		mcp.AddTool(srv, &mcp.Tool{Name: "kanban_complete", Description: fmt.Sprintf("Mark this worker's task (%s) done with a result. The worker should exit after it.", o.Worker.Task)}, s.kanbanComplete)
		mcp.AddTool(srv, &mcp.Tool{Name: "kanban_block", Description: fmt.Sprintf("Block this worker's task (%s) with the reason it cannot go on (a question for a person). The worker should exit after it.", o.Worker.Task)}, s.kanbanBlock)
	}
	addMemoryTools(srv, s)
	return srv
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
	var b strings.Builder
	for i, r := range records {
		line, err := marshal(r)
		if err != nil {
			return failure(err), nil, nil
		}
		if b.Len()+len(line)+1 > max {
			fmt.Fprintf(&b, "(%d more not shown: over the output limit of %d bytes; narrow the call or lower its limit)\n", len(records)-i, max)
			break
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return text(b.String()), nil, nil
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
	Query string `json:"query" jsonschema:"the text to find in messages (their text, tool calls' names and argument values, tool results), ignoring case"`
	Limit int    `json:"limit,omitempty" jsonschema:"the most hits to return (default 20, at most 200)"`
}

func (s *server) sessionSearch(_ context.Context, _ *mcp.CallToolRequest, a searchArgs) (*mcp.CallToolResult, none, error) {
	n, err := limit(a.Limit)
	if err != nil {
		return failure(err), nil, nil
	}
	hits, err := s.Sessions.Search(a.Query, n)
	if err != nil {
		return failure(err), nil, nil
	}
	return lines(hits, s.MaxBytes)
}

type listArgs struct {
	State  string `json:"state,omitempty" jsonschema:"only sessions in this state: active, ended, suspended or resume_pending"`
	Source string `json:"source,omitempty" jsonschema:"only sessions from this source (chat, gateway, kanban, import, …)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"the most sessions to return (default 20, at most 200)"`
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
	list, err := s.Sessions.List(sessions.ListOptions{Limit: n, Source: a.Source, State: a.State})
	if err != nil {
		return failure(err), nil, nil
	}
	return lines(list, s.MaxBytes)
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
