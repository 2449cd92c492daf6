package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hermes/hermes/fsstore/memory"
	"github.com/hermes/hermes/fsstore/sessions"
)

// MemoryToolName is the name of the memory tool, which a front end offers
// beside the general tools when the profile's memory is on.
const MemoryToolName = "memory"

// memoryHeader starts the memory snapshot note, and tells it from other
// notes.
const memoryHeader = "Memory (MEMORY.md and USER.md"

// MemoryNote returns the system message, marked as hermes's note, that
// holds the memory as it is when a session starts: stored in the
// transcript like the project instructions, so that a resumed session
// reads the snapshot it started with, whatever changed since, and a
// provider's prompt cache holds. ok is false when both files are empty. A
// memory that cannot be read is left out with a warning.
func MemoryNote(s *memory.Store, warn func(string)) (sessions.Message, bool) {
	st, err := s.Read()
	if err != nil {
		if warn != nil {
			warn(fmt.Sprintf("memory left out of the session: %v", err))
		}
		return sessions.Message{}, false
	}
	if len(st.Memory) == 0 && len(st.User) == 0 {
		return sessions.Message{}, false
	}
	var b strings.Builder
	b.WriteString(memoryHeader + " as they were when this session started; what the memory tool changes is there for later sessions, not in this copy)")
	for _, t := range []struct{ target, about string }{{memory.Memory, "what you noted about the work"}, {memory.User, "what you noted about the user"}} {
		entries := st.Entries(t.target)
		if len(entries) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n\n--- %s (%s; %d of %d characters) ---\n%s", memory.FileName(t.target), t.about,
			memory.Chars(entries), s.Max(t.target), strings.TrimRight(memory.Render(entries), "\n"))
	}
	return note(sessions.Message{Role: "system", Content: sessions.TextContent(b.String())}), true
}

// IsMemory reports whether m is the note MemoryNote makes.
func IsMemory(m sessions.Message) bool {
	return m.Role == "system" && IsNote(m) && strings.HasPrefix(m.Text(), memoryHeader)
}

// memoryTool views and changes the profile's memory (package memory).
type memoryTool struct{}

func (memoryTool) Name() string { return MemoryToolName }

func (memoryTool) Schema() json.RawMessage {
	return schema(MemoryToolName,
		"Your memory across sessions: MEMORY.md (target memory: facts about the work, the project, what worked) and USER.md (target user: the user's preferences, role, habits). "+
			"Each new session starts with a copy of both. Keep entries short and lasting; not what this conversation alone needs. "+
			"view shows both as they are now; add adds content as an entry; replace puts content in place of the one entry containing old_text; remove removes the one entry containing old_text. "+
			"Each file is bounded: when one is nearly full, replace or remove entries before adding.",
		map[string]any{
			"action":   map[string]any{"type": "string", "enum": []string{"view", "add", "replace", "remove"}},
			"target":   map[string]any{"type": "string", "enum": []string{memory.Memory, memory.User}, "description": "which file (default memory)"},
			"content":  prop("string", "the entry to add, or to put in place of the old one (add, replace)"),
			"old_text": prop("string", "some text found in exactly one entry: the entry to replace or remove"),
		}, "action")
}

func (memoryTool) NeedsApproval(json.RawMessage) bool { return false }

func (memoryTool) Run(_ context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Action  string `json:"action"`
		Target  string `json:"target"`
		Content string `json:"content"`
		OldText string `json:"old_text"`
	}
	if err := decodeArgs(MemoryToolName, raw, &args); err != nil {
		return "", err
	}
	s := env.Memory
	if s == nil {
		return "", errors.New("memory is off for this session (memory.enabled in config.yaml)")
	}
	if args.Target == "" {
		args.Target = memory.Memory
	}
	if args.Action == "view" {
		st, err := s.Read()
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, target := range []string{memory.Memory, memory.User} {
			fmt.Fprintf(&b, "%s\n%s\n", s.Usage(st, target), memory.Render(st.Entries(target)))
		}
		return cut(b.String(), max(env.MaxOutput, 256)), nil
	}
	who := memory.Who{By: memory.ByAgent, SessionID: env.SessionID}
	var r memory.Result
	var err error
	switch args.Action {
	case "add":
		r, err = s.Add(args.Target, args.Content, who)
	case "replace":
		r, err = s.Replace(args.Target, args.OldText, args.Content, who)
	case "remove":
		r, err = s.Remove(args.Target, args.OldText, who)
	default:
		return "", fmt.Errorf("memory: unknown action %q (use view, add, replace or remove)", args.Action)
	}
	if err != nil {
		return "", fmt.Errorf("memory: %w", err)
	}
	file := memory.FileName(args.Target)
	text := fmt.Sprintf("%s: %s (change %d); now %d of %d characters", file, pastTense(args.Action), r.Change.Seq, r.Chars, r.Max)
	if r.Change.Seq == 0 {
		text = fmt.Sprintf("%s: nothing changed: it already holds that entry; %d of %d characters", file, r.Chars, r.Max)
	}
	if n := r.Notice(); n != "" {
		text += "\n" + noticePrefix + n
	}
	return text, nil
}

// noticePrefix starts the line of a result that says a file is nearly
// full.
const noticePrefix = "notice: "

func pastTense(action string) string {
	switch action {
	case "add":
		return "added"
	case "replace":
		return "replaced"
	}
	return "removed"
}

// MemoryAlert is what a memory call's result says that the user must see
// too: a file nearly full, or a change refused for the bound; "" for
// anything else. A front end prints it (chat's line mode on stderr).
func MemoryAlert(result string) string {
	if rest, ok := strings.CutPrefix(result, "error: memory: "); ok && strings.Contains(rest, "over its limit") {
		return rest
	}
	for _, line := range strings.Split(result, "\n") {
		if n, ok := strings.CutPrefix(line, noticePrefix); ok {
			return n
		}
	}
	return ""
}
