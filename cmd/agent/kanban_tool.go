package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// kanbanTool is one of the worker's tools on its own kanban task.
type kanbanTool struct{ name string }

func (k kanbanTool) Name() string { return k.name }

func (k kanbanTool) Schema() json.RawMessage {
	switch k.name {
	case "kanban_complete":
		return schema(k.name, "Mark your kanban task done, with what came of it. Call it once the work is finished; then end your turn.",
			map[string]any{"result": prop("string", "what was done, in a sentence or a short paragraph")}, "result")
	case "kanban_block":
		return schema(k.name, "Block your kanban task when you cannot go on (missing information, an error you cannot fix), saying why; a person unblocks it and you resume. Then end your turn.",
			map[string]any{"reason": prop("string", "why the task cannot go on")}, "reason")
	case "kanban_comment":
		return schema(k.name, "Add a comment to your kanban task: progress, a finding, a question.",
			map[string]any{"text": prop("string", "the comment")}, "text")
	case "kanban_create":
		return schema(k.name, "Create a kanban task. With subtask true, your own task waits for it: create your subtasks, then call kanban_block saying you wait for them, and end your turn; "+
			"your session resumes with their results once they are all done.",
			map[string]any{
				"title":    prop("string", "what the task is, in a line"),
				"body":     prop("string", "what to do, in detail"),
				"assignee": prop("string", "the profile whose agent works it (default: yours)"),
				"subtask":  prop("boolean", "whether your own task waits for this one"),
			}, "title")
	}
	return schema(k.name, "Extend your claim on your kanban task during long work, so that the dispatcher does not take it back.", map[string]any{})
}

func (kanbanTool) NeedsApproval(json.RawMessage) bool { return false }

func (k kanbanTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	if env.Kanban == nil {
		return "", fmt.Errorf("%s: this is not a kanban worker", k.name)
	}
	var args struct {
		Result   string `json:"result"`
		Reason   string `json:"reason"`
		Text     string `json:"text"`
		Title    string `json:"title"`
		Body     string `json:"body"`
		Assignee string `json:"assignee"`
		Subtask  bool   `json:"subtask"`
	}
	if err := decodeArgs(k.name, raw, &args); err != nil {
		return "", err
	}
	var err error
	var done string
	switch k.name {
	case "kanban_complete":
		err, done = env.Kanban.Complete(ctx, args.Result), "the task is done; end your turn with a one-line summary"
	case "kanban_block":
		if strings.TrimSpace(args.Reason) == "" {
			return "", errors.New("kanban_block: reason is required")
		}
		var waits bool
		waits, err = env.Kanban.Block(ctx, args.Reason)
		done = "the task is blocked; end your turn with a one-line summary"
		if waits {
			done = "your task waits for its subtasks; end your turn with a one-line summary, and your session resumes with their results once they are all done"
		}
	case "kanban_comment":
		if strings.TrimSpace(args.Text) == "" {
			return "", errors.New("kanban_comment: text is required")
		}
		err, done = env.Kanban.Comment(ctx, args.Text), "comment added"
	case "kanban_create":
		if strings.TrimSpace(args.Title) == "" {
			return "", errors.New("kanban_create: title is required")
		}
		var id string
		id, err = env.Kanban.Create(ctx, args.Title, args.Body, args.Assignee, args.Subtask)
		done = "created task " + id
		if args.Subtask {
			done += "; your task waits for it once you call kanban_block"
		}
	default:
		err, done = env.Kanban.Heartbeat(ctx), "claim extended"
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.name, err)
	}
	return done, nil
}
