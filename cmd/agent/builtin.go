package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// Builtin returns every built-in tool, in the order requests offer them.
func Builtin() []Tool {
	return []Tool{
		terminalTool{}, processTool{}, readFileTool{}, writeFileTool{}, editFileTool{},
		searchFilesTool{}, findFilesTool{}, searchTool{},
		kanbanTool{name: "kanban_complete"}, kanbanTool{name: "kanban_block"},
		kanbanTool{name: "kanban_comment"}, kanbanTool{name: "kanban_heartbeat"}, kanbanTool{name: "kanban_create"},
		memoryTool{}, skillViewTool{}, skillManageTool{}, delegateTool{},
	}
}

// GeneralToolNames are the tools a chat offers by default.
func GeneralToolNames() []string {
	return []string{"terminal", "process", "read_file", "write_file", "edit_file", "search_files", "find_files", "session_search"}
}

// KanbanToolNames are the tools offered only inside a kanban worker.
func KanbanToolNames() []string {
	return []string{"kanban_complete", "kanban_block", "kanban_comment", "kanban_heartbeat", "kanban_create"}
}

// Select returns the tools names picks. No names means the default: the
// general tools, and the kanban tools inside a worker. An unknown name, or
// a kanban tool named outside a worker, is ErrInvalid.
func Select(names []string, inWorker bool) ([]Tool, error) {
	if names == nil {
		names = GeneralToolNames()
		if inWorker {
			names = append(names, KanbanToolNames()...)
		}
	}
	all := Builtin()
	var out []Tool
	for _, name := range names {
		i := slices.IndexFunc(all, func(t Tool) bool { return t.Name() == name })
		switch {
		case i < 0:
			known := append(append(GeneralToolNames(), KanbanToolNames()...), MemoryToolName, SkillViewToolName, SkillManageToolName, DelegateToolName)
			return nil, fsstore.Invalidf("unknown tool %q (known: %s)", name, strings.Join(known, ", "))
		case slices.Contains(KanbanToolNames(), name) && !inWorker:
			return nil, fsstore.Invalidf("tool %s is only for kanban workers (run with %s set)", name, "HERMES_KANBAN_TASK")
		case !slices.ContainsFunc(out, func(t Tool) bool { return t.Name() == name }):
			out = append(out, all[i])
		}
	}
	return out, nil
}

// schema builds a function-calling entry. props maps each parameter to
// its JSON schema; required lists those the model must give.
func schema(name, description string, props map[string]any, required ...string) json.RawMessage {
	if required == nil {
		required = []string{}
	}
	b, err := json.Marshal(map[string]any{
		"type": "function",
		"function": map[string]any{
			"name":        name,
			"description": description,
			"parameters": map[string]any{
				"type": "object", "properties": props, "required": required, "additionalProperties": false,
			},
		},
	})
	if err != nil {
		panic(err) // the schemas are literals: they always encode
	}
	return b
}

func prop(typ, description string) map[string]any {
	return map[string]any{"type": typ, "description": description}
}

// decodeArgs reads a call's arguments into v, refusing unknown fields, so
// that a model's typo is answered rather than ignored.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: arguments: %v", tool, err)
	}
	return nil
}

// cut keeps s whole when it fits in limit bytes, else its head and tail
// with a line saying how many bytes were cut between them.
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return headAndTail(s[:limit], s[len(s)-limit:], int64(len(s)), limit)
}

// headAndTail joins the start of a text (head) and its end (tail), of
// total bytes in all, into at most max bytes: as much of each as fits
// beside a marker saying how many bytes are left out. head and tail may
// overlap the cut; only their outer ends are used. limit is in bytes.
func headAndTail(head, tail string, total int64, limit int) string {
	var marker string
	n := total - int64(limit)
	for range 3 { // the marker's own length moves the count: settle it
		marker = fmt.Sprintf("\n[… %d bytes cut …]\n", n)
		n = total - int64(max(limit-len(marker), 0))
	}
	keep := max(limit-len(marker), 0)
	h, t := min(keep/2, len(head)), min(keep-keep/2, len(tail))
	return strings.ToValidUTF8(head[:h], "") + marker + strings.ToValidUTF8(tail[len(tail)-t:], "")
}

// headTail is an io.Writer that keeps the first and the last limit bytes
// written to it and counts the rest: a command's output, held in bounded
// memory however much it prints.
type headTail struct {
	limit int
	head  []byte
	tail  []byte
	total int64
}

func (w *headTail) Write(p []byte) (int, error) {
	n := len(p)
	w.total += int64(n)
	if room := w.limit - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	// The tail is kept in place: at most 2*limit bytes plus one write,
	// however many writes come.
	w.tail = append(w.tail, p...)
	if len(w.tail) > 2*w.limit {
		w.tail = w.tail[:copy(w.tail, w.tail[len(w.tail)-w.limit:])]
	}
	return n, nil
}

// text is what was written, cut to limit bytes with head and tail kept.
func (w *headTail) text(limit int) string {
	if w.total <= int64(limit) {
		return strings.ToValidUTF8(string(w.head)+string(w.tail), "\uFFFD")
	}
	return headAndTail(string(w.head), string(w.tail), w.total, limit)
}
